// NCCL communicators in the simulator: ncclGetVersion, ncclGetUniqueId, ncclCommInitRank,
// ncclCommInitAll, ncclCommDestroy, ncclCommAbort, the queries and the error strings.
//
//   * ncclGetVersion gives nccl.h's NCCL_VERSION_CODE (the header the code was compiled against).
//   * ncclGetUniqueId makes an id unique in this process; ncclCommInitRank with it, from any host
//     threads (one call per rank, each with its own current device), blocks until all nranks
//     ranks joined -- or, inside ncclGroupStart/ncclGroupEnd, returns at once and ncclGroupEnd
//     waits. A rank that never joins makes the others fail after the NCCL timeout
//     (SEG_SIM_NCCL_TIMEOUT_S, default 60 s) with ncclRemoteError and a message naming the missing
//     ranks. ncclCommInitAll makes the ranks of devlist (or devices 0..ndev-1) at once.
//   * The id also names the maker's process. ncclCommInitRank in another process (the id sent
//     there, as over MPI) makes a communicator spanning processes (nccl_spanning.cpp); the maker's
//     own ranks wait in-process until they see that, then join it the same way.
//   * ncclCommDestroy fails the collectives its rank never called (the peers would hang on a GPU),
//     ncclCommAbort fails every collective still waiting for ranks: either way waiting syncs wake
//     and the failed collectives report a fault (nccl_collectives.cpp).
//   * ncclGetLastError returns the message of the latest failed call of any thread (the comm
//     argument is ignored, as in NCCL 2.28).
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "kernels/sim/nccl_internal.h"
#include "kernels/sim/sim.h"

using namespace seg::sim::detail;
using namespace seg::sim::detail::nccl;

namespace {

constexpr char kIdMagic[] = "seg::sim nccl unique id";

std::condition_variable g_init_cv;                           // with the runtime lock: a rank joined
std::map<uint64_t, std::shared_ptr<PendingInit>> g_pending;  // by unique id (runtime lock)
uint64_t g_next_id = 0;                                      // unique ids made (runtime lock)
uint64_t g_next_clique = 0;                                  // communicators made (runtime lock)

std::mutex g_error_mutex;
std::string g_last_error;  // ncclGetLastError

std::atomic<int64_t> g_timeout_ns{0};  // 0: from the environment

// What a unique id holds after the magic: the maker's id number, process and a random nonce.
struct IdFields {
  uint64_t key = 0;
  int64_t pid = 0;
  uint64_t nonce = 0;
};
static_assert(sizeof kIdMagic + sizeof(IdFields) <= sizeof(ncclUniqueId::internal));

IdFields id_fields(const ncclUniqueId& id, bool* ok) {
  IdFields f;
  *ok = std::memcmp(id.internal, kIdMagic, sizeof kIdMagic) == 0;
  std::memcpy(&f, id.internal + sizeof kIdMagic, sizeof f);
  return f;
}

std::shared_ptr<Clique> make_clique(std::vector<ncclComm*> comms) {
  auto q = std::make_shared<Clique>();
  q->number = ++g_next_clique;
  q->nranks = static_cast<int>(comms.size());
  q->comms = std::move(comms);
  return q;
}

void forget_pending(const std::shared_ptr<PendingInit>& p) {
  for (auto it = g_pending.begin(); it != g_pending.end(); ++it)
    if (it->second == p) {
      g_pending.erase(it);
      break;
    }
}

// Waits (runtime lock held) until `comm` is initialised or its rendezvous fails; deletes it then.
// A rank of another process joining the same id turns the wait into a spanning join.
ncclResult_t wait_for_init(Lock& lock, ncclComm* comm) {
  std::shared_ptr<PendingInit> p = comm->pending;
  const auto deadline = std::chrono::steady_clock::now() + timeout();
  while (!comm->clique && p->failed.empty()) {
    const bool timed_out = g_init_cv.wait_for(lock, std::chrono::milliseconds(5)) == std::cv_status::timeout &&
                           std::chrono::steady_clock::now() > deadline;
    if (!comm->clique && p->failed.empty() && spanning_started(p->directory)) {
      p->ranks[comm->rank] = nullptr;
      if (--p->joined == 0) forget_pending(p);
      comm->pending.reset();
      lock.unlock();
      const ncclResult_t r = spanning_join(comm, p->directory);
      lock.lock();
      if (r != ncclSuccess) delete comm;
      return r;
    }
    if (timed_out && !comm->clique && p->failed.empty()) {
      std::vector<int> missing;
      for (int r = 0; r < p->nranks; ++r)
        if (!p->ranks[r]) missing.push_back(r);
      p->failed = "seg::sim: ncclCommInitRank of a " + std::to_string(p->nranks) + "-rank communicator timed out after " +
                  seconds_text(timeout()) + ": rank(s) " +
                  ranks_text(missing) +
                  " never joined with this unique id (real NCCL would hang; SEG_SIM_NCCL_TIMEOUT_S sets the timeout)";
      forget_pending(p);
      std::fprintf(stderr, "%s\n", p->failed.c_str());
      g_init_cv.notify_all();
    }
  }
  if (comm->clique) return ncclSuccess;
  const std::string why = p->failed;
  delete comm;
  return fail(ncclRemoteError, why);
}

}  // namespace

namespace seg::sim::detail::nccl {

ncclResult_t fail(ncclResult_t result, const std::string& message) {
  std::lock_guard<std::mutex> lock(g_error_mutex);
  g_last_error = message;
  return result;
}

std::chrono::nanoseconds timeout() {
  if (const int64_t ns = g_timeout_ns.load()) return std::chrono::nanoseconds(ns);
  static const double seconds = [] {
    const char* env = std::getenv("SEG_SIM_NCCL_TIMEOUT_S");
    const double s = env ? std::atof(env) : 0.0;
    return s > 0 ? s : 60.0;
  }();
  return std::chrono::nanoseconds(static_cast<int64_t>(seconds * 1e9));
}

std::string seconds_text(std::chrono::nanoseconds t) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", std::chrono::duration<double>(t).count());
  return buf;
}

std::string Clique::name() const {
  return "communicator " + std::to_string(number) + " (" + std::to_string(nranks) + " ranks)";
}

ncclResult_t finish_group_inits(const std::vector<ncclComm*>& comms) {
  Lock lock = runtime_lock();
  ncclResult_t result = ncclSuccess;
  for (ncclComm* c : comms)
    if (const ncclResult_t r = wait_for_init(lock, c); r != ncclSuccess && result == ncclSuccess) result = r;
  return result;
}

}  // namespace seg::sim::detail::nccl

namespace seg::sim {

void set_nccl_timeout(double seconds) { g_timeout_ns = seconds > 0 ? static_cast<int64_t>(seconds * 1e9) : 0; }

}  // namespace seg::sim

extern "C" {

ncclResult_t ncclGetVersion(int* version) {
  if (!version) return fail(ncclInvalidArgument, "ncclGetVersion: version is null");
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  if (!id) return fail(ncclInvalidArgument, "ncclGetUniqueId: uniqueId is null");
  IdFields f;
  {
    Lock lock = runtime_lock();
    f.key = ++g_next_id;
    f.nonce = random_nonce();
  }
  f.pid = getpid();
  std::memset(id->internal, 0, sizeof id->internal);
  std::memcpy(id->internal, kIdMagic, sizeof kIdMagic);
  std::memcpy(id->internal + sizeof kIdMagic, &f, sizeof f);
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  if (!comm) return fail(ncclInvalidArgument, "ncclCommInitRank: comm is null");
  if (nranks < 1 || rank < 0 || rank >= nranks)
    return fail(ncclInvalidArgument, "ncclCommInitRank: rank " + std::to_string(rank) + " is not in [0, nranks = " +
                                         std::to_string(nranks) + ")");
  bool ok = false;
  const IdFields f = id_fields(id, &ok);
  if (!ok) return fail(ncclInvalidArgument, "ncclCommInitRank: the unique id was not made by ncclGetUniqueId");
  const uint64_t key = f.key;
  if (f.pid != getpid()) {  // made by another process: the ranks span processes
    auto* c = new ncclComm;
    c->rank = rank;
    c->nranks = nranks;
    c->device = host_thread().device;
    const ncclResult_t r = spanning_join(c, spanning_directory(f.pid, f.key, f.nonce));
    if (r != ncclSuccess) {
      delete c;
      *comm = nullptr;
      return r;
    }
    *comm = c;
    return ncclSuccess;
  }
  Lock lock = runtime_lock();
  std::shared_ptr<PendingInit>& p = g_pending[key];
  if (!p) {
    p = std::make_shared<PendingInit>();
    p->nranks = nranks;
    p->ranks.assign(nranks, nullptr);
    p->directory = spanning_directory(f.pid, f.key, f.nonce);
  }
  if (p->nranks != nranks)
    return fail(ncclInvalidArgument, "ncclCommInitRank: rank " + std::to_string(rank) + " says nranks = " +
                                         std::to_string(nranks) + ", an earlier rank of this unique id said " +
                                         std::to_string(p->nranks));
  if (p->ranks[rank])
    return fail(ncclInvalidUsage, "ncclCommInitRank: rank " + std::to_string(rank) + " joined twice with one unique id");
  auto* c = new ncclComm;
  c->rank = rank;
  c->nranks = nranks;
  c->device = host_thread().device;
  c->pending = p;
  p->ranks[rank] = c;
  *comm = c;
  if (++p->joined == nranks) {
    std::shared_ptr<Clique> q = make_clique(p->ranks);
    for (ncclComm* member : p->ranks) {
      member->clique = q;
      member->pending.reset();
    }
    g_pending.erase(key);
    g_init_cv.notify_all();
  }
  if (in_group()) {
    defer_init(c);
    return ncclSuccess;
  }
  const ncclResult_t r = wait_for_init(lock, c);
  if (r != ncclSuccess) *comm = nullptr;
  return r;
}

ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  if (!comms || ndev < 1) return fail(ncclInvalidArgument, "ncclCommInitAll: comms is null or ndev < 1");
  Lock lock = runtime_lock();
  for (int r = 0; r < ndev; ++r)
    if (const int d = devlist ? devlist[r] : r; !valid_device(d))
      return fail(ncclInvalidArgument, "ncclCommInitAll: device " + std::to_string(d) + " (rank " + std::to_string(r) +
                                           ") is not a simulated device (seg::sim::set_device_count, SEG_SIM_DEVICES)");
  std::vector<ncclComm*> ranks;
  for (int r = 0; r < ndev; ++r) {
    auto* c = new ncclComm;
    c->rank = r;
    c->nranks = ndev;
    c->device = devlist ? devlist[r] : r;
    ranks.push_back(c);
    comms[r] = c;
  }
  std::shared_ptr<Clique> q = make_clique(ranks);
  for (ncclComm* c : ranks) c->clique = q;
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (!comm) return ncclSuccess;
  if (comm->spanning) {
    spanning_leave(comm, false);
    delete comm;
    return ncclSuccess;
  }
  Lock lock = runtime_lock();
  if (std::shared_ptr<Clique> q = comm->clique) {
    fail_open_collectives(*q, comm->rank, false,
                          "rank " + std::to_string(comm->rank) + " destroyed its communicator (ncclCommDestroy) first");
    q->comms[comm->rank] = nullptr;
  }
  delete comm;
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (!comm) return ncclSuccess;
  if (comm->spanning) {
    spanning_leave(comm, true);
    delete comm;
    return ncclSuccess;
  }
  Lock lock = runtime_lock();
  if (std::shared_ptr<PendingInit> p = comm->pending) {
    // Still in ncclCommInitRank's rendezvous (a group init): the other ranks stop waiting.
    p->failed = "seg::sim: ncclCommInitRank: rank " + std::to_string(comm->rank) + " aborted its communicator";
    p->ranks[comm->rank] = nullptr;
    for (auto it = g_pending.begin(); it != g_pending.end(); ++it)
      if (it->second == p) {
        g_pending.erase(it);
        break;
      }
    g_init_cv.notify_all();
  }
  if (std::shared_ptr<Clique> q = comm->clique) {
    fail_open_collectives(*q, comm->rank, true, "rank " + std::to_string(comm->rank) + " called ncclCommAbort");
    q->comms[comm->rank] = nullptr;
  }
  delete comm;
  return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* error) {
  if (!comm || !error) return fail(ncclInvalidArgument, "ncclCommGetAsyncError: comm or asyncError is null");
  Lock lock = runtime_lock();
  *error = comm->spanning ? spanning_async_error(comm) : comm->async_error;
  return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  if (!comm || !count) return fail(ncclInvalidArgument, "ncclCommCount: comm or count is null");
  *count = comm->nranks;
  return ncclSuccess;
}

ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  if (!comm || !device) return fail(ncclInvalidArgument, "ncclCommCuDevice: comm or device is null");
  *device = comm->device;
  return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  if (!comm || !rank) return fail(ncclInvalidArgument, "ncclCommUserRank: comm or rank is null");
  *rank = comm->rank;
  return ncclSuccess;
}

const char* ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess:
      return "success";
    case ncclUnhandledCudaError:
      return "a CUDA call failed";
    case ncclSystemError:
      return "a system call failed";
    case ncclInternalError:
      return "internal error of the NCCL simulator";
    case ncclInvalidArgument:
      return "invalid argument (ncclGetLastError says which)";
    case ncclInvalidUsage:
      return "invalid usage (ncclGetLastError says what)";
    case ncclRemoteError:
      return "another rank failed or never took part (ncclGetLastError says which)";
    case ncclInProgress:
      return "operation in progress";
    default:
      return "not an ncclResult_t value";
  }
}

const char* ncclGetLastError(ncclComm_t) {
  thread_local std::string copy;  // stays valid until this thread's next call
  std::lock_guard<std::mutex> lock(g_error_mutex);
  copy = g_last_error;
  return copy.c_str();
}

}  // extern "C"
