// NCCL communicators whose ranks live in several processes: one process per GPU under mpirun
// (core/comm_nccl.cpp's make_nccl_communicator: rank 0's ncclGetUniqueId, broadcast over MPI,
// ncclCommInitRank in every process). A test double like the rest of the simulator: each process
// has its own simulated devices, so the ranks cannot share one executor's joint op
// (nccl_collectives.cpp); they meet in a directory instead, named by the unique id
// (TMPDIR/seg-sim-nccl-<maker's pid>-<id number>-<nonce>), on one machine.
//
//   * Joining. A rank whose process did not make the id creates the directory and writes
//     join.<rank> ("<nranks> <pid>"). A rank of the id's own process first waits as an in-process
//     rank (nccl_comms.cpp); the directory's existence tells it that the communicator spans
//     processes, and it joins the same way. Every rank waits for every join file (the NCCL
//     timeout, SEG_SIM_NCCL_TIMEOUT_S: then it fails naming the ranks that never joined).
//   * A collective is one op on the rank's stream, so it is ordered with the rank's kernels and
//     events, and the race detector sees it read sendbuff and write recvbuff. When it runs it
//     writes c<n>.<rank> (the n-th call's header and this rank's send bytes; written to a temporary
//     name, then renamed, so a peer never reads half a file), waits until every rank's c<n> file
//     exists, checks that all are the same collective, and computes its own recvbuff with the same
//     rank-order arithmetic as the in-process NCCL (nccl_reduce.cpp). So results are bitwise those
//     of the in-process NCCL and of --gpus threads.
//   * A peer that aborted (abort.<rank>), destroyed its communicator before the call (left.<rank>)
//     or never calls (the NCCL timeout) fails the collective: the op reports a fault (deadlock
//     kind; bad_argument for mismatched calls), the communicator's async error becomes
//     ncclRemoteError (ncclInvalidUsage for a mismatch), and the message goes to stderr.
//   * Cleanup. Once every rank has written c<n>, every rank has finished reading c<n-1>, so each
//     rank removes its own previous file then. ncclCommDestroy and ncclCommAbort write left.<rank>;
//     the rank that finds every left file removes the directory. A rank whose ncclCommInitRank
//     gives up writes left.<rank> too (its join file stays, so a peer still waiting does not count
//     it as missing), and the last of the joined ranks to give up removes the directory. A killed
//     run leaves its directory behind (the nonce keeps a later run from reading it).
//
// Limits: the processes must share a file system (one machine); a process holding several ranks of
// one spanning communicator must drive each from its own host thread (a rank's op blocks its
// thread until the peers' ops run); graphs cannot capture these calls (as in-process); a host
// polling the stream (cudaStreamQuery) is blocked inside the op until the peers come or the NCCL
// timeout ends, so a caller's own shorter timeout (segtrain's --comm-timeout) does not apply.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>
#include <thread>

#include "kernels/sim/device_memory.h"
#include "kernels/sim/nccl_internal.h"

using namespace seg::sim::detail;
using namespace seg::sim::detail::nccl;
using seg::sim::FaultKind;
namespace fs = std::filesystem;

namespace seg::sim::detail::nccl {

struct Spanning {
  std::string directory;
  int rank = 0;
  int nranks = 0;
  std::atomic<int> async_error{ncclSuccess};
  std::atomic<bool> aborted{false};  // this rank's ncclCommAbort (another thread, during a wait)
  uint64_t previous = 0;  // the last collective whose file this rank wrote (the op thread only)
};

}  // namespace seg::sim::detail::nccl

namespace {

// The header of a collective's file: what the rank called, then `payload` bytes of its sendbuff.
struct FileHeader {
  char magic[8] = {'s', 'e', 'g', 'n', 'c', 'c', 'l', '1'};
  uint32_t kind = 0, type = 0, op = 0;
  int32_t root = 0;
  uint64_t count = 0;
  uint64_t payload = 0;
};

bool file_exists(const fs::path& p) {
  std::error_code ec;
  return fs::exists(p, ec);
}

// Writes `text` to dir/name through a temporary name, so readers see all of it or no file.
bool write_atomically(const fs::path& dir, const std::string& name, const std::string& text) {
  const fs::path tmp = dir / (name + ".tmp"), final = dir / name;
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out.write(text.data(), static_cast<std::streamsize>(text.size())) || !out.flush()) return false;
  }
  std::error_code ec;
  fs::rename(tmp, final, ec);
  return !ec;
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A call and its file header, both ways (the header carries what same_collective compares).
FileHeader header_of(const Call& c) {
  FileHeader h;
  h.kind = static_cast<uint32_t>(c.kind);
  h.type = static_cast<uint32_t>(c.type);
  h.op = static_cast<uint32_t>(c.op);
  h.root = c.root;
  h.count = c.count;
  return h;
}
Call call_of(const FileHeader& h) {
  Call c;
  c.kind = static_cast<Kind>(h.kind);
  c.type = static_cast<ncclDataType_t>(h.type);
  c.op = static_cast<ncclRedOp_t>(h.op);
  c.root = h.root;
  c.count = h.count;
  return c;
}

// Sleeps a little longer each time (50 us up to 2 ms): peers are other processes.
void back_off(int& round) {
  std::this_thread::sleep_for(std::chrono::microseconds(std::min(2000, 50 << std::min(round++, 6))));
}

// One rank's op of a collective of a spanning communicator.
class SpanningCollectiveOp final : public Op {
 public:
  SpanningCollectiveOp(const Call& call, uint64_t number, std::shared_ptr<Spanning> s)
      : call_(call), number_(number), s_(std::move(s)) {}
  OpPtr clone() const override { throw std::logic_error("seg::sim: NCCL calls cannot be captured into graphs"); }
  std::string describe() const override {
    return call_text(call_) + " rank " + std::to_string(s_->rank) + " of " + std::to_string(s_->nranks) +
           " (ranks in several processes) on " + stream_text(*this) + " called from " +
           describe_code_address(call_.caller);
  }
  void accesses(std::vector<Access>& out) const override {
    if (const size_t b = send_bytes(call_, s_->rank, s_->nranks)) {
      const auto p = reinterpret_cast<uintptr_t>(call_.send);
      out.push_back({p, p + b, false});
    }
    if (const size_t b = recv_bytes(call_, s_->rank, s_->nranks)) {
      const auto p = reinterpret_cast<uintptr_t>(call_.recv);
      out.push_back({p, p + b, true});
    }
  }
  void execute(OpRun& run) override {
    FaultKind kind = FaultKind::deadlock;
    const std::string why = exchange(&kind);
    if (why.empty()) return;
    const std::string message = "seg::sim: NCCL collective #" + std::to_string(number_) + " of a " +
                                std::to_string(s_->nranks) + "-rank communicator spanning processes (" +
                                call_text(call_) + ", rank " + std::to_string(s_->rank) + "): " + why;
    const ncclResult_t error = kind == FaultKind::bad_argument ? ncclInvalidUsage : ncclRemoteError;
    int expected = ncclSuccess;
    s_->async_error.compare_exchange_strong(expected, error);
    std::fprintf(stderr, "%s\n", message.c_str());
    fail(error, message);
    run.fault.emplace(kind, message);
  }

 private:
  // Publishes this rank's call, waits for the peers', and computes recvbuff. "" when done, else why not.
  std::string exchange(FaultKind* kind) {
    const int me = s_->rank, n = s_->nranks;
    const fs::path dir = s_->directory;
    if (s_->async_error.load() != ncclSuccess) return "the communicator already failed";
    const size_t mine = send_bytes(call_, me, n);
    if (mine && !inside_allocation(call_.send, mine)) {
      *kind = FaultKind::bad_address;
      return "sendbuff was freed before the queued collective ran";
    }
    FileHeader h = header_of(call_);
    // Broadcast: only the root's bytes are needed.
    h.payload = call_.kind == Kind::broadcast && me != call_.root ? 0 : mine;
    std::string text(reinterpret_cast<const char*>(&h), sizeof h);
    text.append(static_cast<const char*>(call_.send), h.payload);
    const std::string tag = "c" + std::to_string(number_) + ".";
    if (!write_atomically(dir, tag + std::to_string(me), text))
      return "could not write to " + dir.string() + " (the directory the ranks meet in)";

    // Every peer's call of this collective.
    const auto deadline = std::chrono::steady_clock::now() + timeout();
    std::vector<int> missing;
    for (int round = 0;; back_off(round)) {
      missing.clear();
      for (int r = 0; r < n; ++r)
        if (!file_exists(dir / (tag + std::to_string(r)))) missing.push_back(r);
      if (missing.empty()) break;
      if (s_->aborted.load()) return "this rank's communicator was aborted (ncclCommAbort) during the wait";
      for (int r : missing) {
        if (file_exists(dir / ("abort." + std::to_string(r))))
          return "rank " + std::to_string(r) + " called ncclCommAbort; it never called this collective";
        if (file_exists(dir / ("left." + std::to_string(r))))
          return "rank " + std::to_string(r) + " destroyed its communicator (ncclCommDestroy) first";
      }
      if (std::chrono::steady_clock::now() > deadline)
        return "timed out after " + seconds_text(timeout()) + ": rank(s) " + ranks_text(missing) +
               " never called it (real NCCL would hang here; SEG_SIM_NCCL_TIMEOUT_S sets the timeout)";
    }
    std::vector<std::string> files(static_cast<size_t>(n));
    std::vector<const void*> sends(static_cast<size_t>(n), nullptr);
    for (int r = 0; r < n; ++r) {
      files[r] = r == me ? text : read_all(dir / (tag + std::to_string(r)));
      FileHeader theirs;
      if (files[r].size() < sizeof theirs) return "rank " + std::to_string(r) + "'s file is damaged";
      std::memcpy(&theirs, files[r].data(), sizeof theirs);
      if (!same_collective(call_of(theirs), call_)) {
        *kind = FaultKind::bad_argument;
        return "mismatched NCCL calls: rank " + std::to_string(r) + " called " + call_text(call_of(theirs)) +
               ", rank " + std::to_string(me) + " called " + call_text(call_) +
               " (the n-th call of every rank must be the same collective with the same count, datatype, op and "
               "root; real NCCL would hang or corrupt memory)";
      }
      if (files[r].size() != sizeof theirs + theirs.payload) return "rank " + std::to_string(r) + "'s file is damaged";
      sends[r] = files[r].data() + sizeof theirs;
    }
    // Every rank has written c<n>: each has finished reading c<n-1>, so this rank's can go.
    if (s_->previous) {
      std::error_code ec;
      fs::remove(dir / ("c" + std::to_string(s_->previous) + "." + std::to_string(me)), ec);
    }
    s_->previous = number_;

    const size_t bytes = call_.count * type_size(call_.type);
    const size_t out_bytes = recv_bytes(call_, me, n);
    if (out_bytes && !inside_allocation(call_.recv, out_bytes)) {
      *kind = FaultKind::bad_address;
      return "recvbuff was freed before the queued collective ran";
    }
    if (bytes == 0) return "";
    std::vector<unsigned char> out;
    switch (call_.kind) {
      case Kind::all_reduce:
      case Kind::reduce:
        if (call_.kind == Kind::reduce && me != call_.root) break;
        out.resize(bytes);
        reduce_in_rank_order(sends, out.data(), call_.count, call_.type, call_.op);
        std::memcpy(call_.recv, out.data(), bytes);
        break;
      case Kind::reduce_scatter:
        out.resize(bytes * static_cast<size_t>(n));
        reduce_in_rank_order(sends, out.data(), call_.count * static_cast<size_t>(n), call_.type, call_.op);
        std::memcpy(call_.recv, out.data() + static_cast<size_t>(me) * bytes, bytes);
        break;
      case Kind::broadcast:
        std::memcpy(call_.recv, sends[call_.root], bytes);
        break;
      case Kind::all_gather:
        for (int r = 0; r < n; ++r) std::memcpy(static_cast<char*>(call_.recv) + static_cast<size_t>(r) * bytes, sends[r], bytes);
        break;
    }
    return "";
  }

  Call call_;
  uint64_t number_;
  std::shared_ptr<Spanning> s_;
};

}  // namespace

namespace seg::sim::detail::nccl {

std::string spanning_directory(int64_t pid, uint64_t key, uint64_t nonce) {
  std::error_code ec;
  fs::path base = fs::temp_directory_path(ec);
  if (ec) base = "/tmp";
  char name[80];
  std::snprintf(name, sizeof name, "seg-sim-nccl-%lld-%llu-%016llx", static_cast<long long>(pid),
                static_cast<unsigned long long>(key), static_cast<unsigned long long>(nonce));
  return (base / name).string();
}

bool spanning_started(const std::string& directory) { return file_exists(directory); }

ncclResult_t spanning_join(ncclComm* comm, const std::string& directory) {
  const fs::path dir = directory;
  const int me = comm->rank, n = comm->nranks;
  std::error_code ec;
  fs::create_directory(dir, ec);
  if (ec && !fs::is_directory(dir))
    return fail(ncclSystemError, "ncclCommInitRank: cannot create " + directory + " (where the ranks of processes meet): " +
                                     ec.message());
  const std::string join = "join." + std::to_string(me);
  if (file_exists(dir / join))
    return fail(ncclInvalidUsage, "ncclCommInitRank: rank " + std::to_string(me) + " joined twice with one unique id");
  if (!write_atomically(dir, join, std::to_string(n) + " " + std::to_string(getpid())))
    return fail(ncclSystemError, "ncclCommInitRank: cannot write to " + directory);
  const auto deadline = std::chrono::steady_clock::now() + timeout();
  for (int round = 0;; back_off(round)) {
    std::vector<int> missing;
    for (int r = 0; r < n; ++r) {
      const fs::path p = dir / ("join." + std::to_string(r));
      if (!file_exists(p)) {
        missing.push_back(r);
        continue;
      }
      const int theirs = std::atoi(read_all(p).c_str());
      if (theirs != n) {
        fs::remove(dir / join, ec);
        return fail(ncclInvalidArgument, "ncclCommInitRank: rank " + std::to_string(me) + " says nranks = " +
                                             std::to_string(n) + ", rank " + std::to_string(r) + " of this unique id said " +
                                             std::to_string(theirs));
      }
    }
    if (missing.empty()) break;
    if (std::chrono::steady_clock::now() > deadline) {
      // The join file stays (a peer still waiting must not count this rank as missing); the last
      // of the ranks that joined to give up removes the directory.
      write_atomically(dir, "left." + std::to_string(me), "");
      bool everyone_left = true;
      for (int r = 0; r < n; ++r)
        if (file_exists(dir / ("join." + std::to_string(r))) && !file_exists(dir / ("left." + std::to_string(r))))
          everyone_left = false;
      if (everyone_left) fs::remove_all(dir, ec);
      const std::string why = "seg::sim: ncclCommInitRank of a " + std::to_string(n) +
                              "-rank communicator spanning processes timed out after " + seconds_text(timeout()) +
                              ": rank(s) " + ranks_text(missing) +
                              " never joined with this unique id (real NCCL would hang; SEG_SIM_NCCL_TIMEOUT_S sets "
                              "the timeout)";
      std::fprintf(stderr, "%s\n", why.c_str());
      return fail(ncclRemoteError, why);
    }
  }
  auto s = std::make_shared<Spanning>();
  s->directory = directory;
  s->rank = me;
  s->nranks = n;
  Lock lock = runtime_lock();
  comm->spanning = std::move(s);
  return ncclSuccess;
}

ncclResult_t spanning_enqueue(ncclComm* comm, const Call& call) {
  const uint64_t number = ++comm->calls;
  auto op = std::make_shared<SpanningCollectiveOp>(call, number, comm->spanning);
  if (submit(*call.stream, op) != cudaSuccess)
    return fail(ncclInvalidUsage, std::string(kind_name(call.kind)) + ": the stream cannot take work now");
  return ncclSuccess;
}

void spanning_leave(ncclComm* comm, bool abort) {
  const fs::path dir = comm->spanning->directory;
  const std::string me = std::to_string(comm->rank);
  if (abort) {
    comm->spanning->aborted = true;
    write_atomically(dir, "abort." + me, "");
  }
  write_atomically(dir, "left." + me, "");
  for (int r = 0; r < comm->nranks; ++r)
    if (!file_exists(dir / ("left." + std::to_string(r)))) return;
  std::error_code ec;
  fs::remove_all(dir, ec);  // the last to leave (two may both think so: removing twice is harmless)
}

ncclResult_t spanning_async_error(const ncclComm* comm) {
  return static_cast<ncclResult_t>(comm->spanning->async_error.load());
}

uint64_t random_nonce() {
  static std::mt19937_64 gen{std::random_device{}() ^ static_cast<uint64_t>(getpid())};
  return gen();
}

}  // namespace seg::sim::detail::nccl
