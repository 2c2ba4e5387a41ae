// NCCL collectives in the simulator: ncclAllReduce, ncclBroadcast (and ncclBcast), ncclReduce,
// ncclReduceScatter, ncclAllGather, ncclGroupStart and ncclGroupEnd. User guide:
// docs/cuda-simulator.md, "NCCL". The semantics:
//
//   * A call does no work: it checks its arguments and queues one op on `stream` (which must be a
//     stream of the communicator's device). Inside ncclGroupStart/ncclGroupEnd the calls are kept
//     and queued, in call order, by the outermost ncclGroupEnd.
//   * The n-th collective call of every rank of a communicator makes one collective. Its ops are
//     the members of one joint op (stream_executor.h): the executor runs them together, on
//     whichever host thread needs one of them, once every rank has called and every rank's stream
//     predecessors are done -- as a real NCCL kernel spins until its peers' kernels run. So one
//     host thread may drive every device (group calls, then a sync of each stream: the first sync
//     runs the other ranks' earlier work too), and one thread per device works as well (a sync
//     waits for the other threads to call).
//   * Results are deterministic: reductions in rank order 0..n-1 (nccl_reduce.cpp), float16 and
//     bfloat16 rounded after each step, avg = sum / nranks.
//   * Buffers must be device memory of the communicator's device (cudaMalloc, cudaMallocAsync),
//     large enough for the call; otherwise the call returns ncclInvalidArgument. In place
//     (sendbuff == recvbuff, or NCCL's in-place offsets for reduce-scatter and all-gather) works.
//     The race detector sees each rank's op read its sendbuff and write its recvbuff.
//   * Where real NCCL would hang or corrupt memory the simulator fails the collective with a
//     message: the ranks' n-th calls differ (collective, count, type, op, root: the call that finds
//     the mismatch returns ncclInvalidUsage), a rank never calls (after SEG_SIM_NCCL_TIMEOUT_S,
//     default 60 s, of a sync waiting for it), a rank's earlier stream work waits for the
//     collective itself (a cycle), or a rank destroys or aborts its communicator first. A failed
//     collective writes nothing: every communicator of it gets an async error
//     (ncclCommGetAsyncError: ncclInvalidUsage for a mismatch, else ncclRemoteError), the message
//     goes to stderr and ncclGetLastError, and the first of its ops to run reports it as a
//     KernelFault (thrown by the sync, like a kernel's fault; deadlock kind for a hang, bad_argument
//     for a mismatch). A rank that calls a collective that already failed gets ncclRemoteError.
//   * Not simulated: NCCL calls on a capturing stream (ncclInvalidUsage), user-defined reduction
//     ops, the fp8 types, point-to-point calls, ncclCommSplit and the config/nonblocking API.
#include <atomic>
#include <cstdio>
#include <cstring>
#include <optional>
#include <stdexcept>

#include "kernels/sim/device_memory.h"
#include "kernels/sim/nccl_internal.h"

using namespace seg::sim::detail;
using namespace seg::sim::detail::nccl;
using seg::sim::FaultKind;

namespace {

std::string pointer_text(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", p);
  return buf;
}

}  // namespace

namespace seg::sim::detail::nccl {

std::string ranks_text(const std::vector<int>& ranks) {
  std::string text;
  for (size_t i = 0; i < ranks.size(); ++i) text += (i ? ", " : "") + std::to_string(ranks[i]);
  return text;
}

bool same_collective(const Call& a, const Call& b) {
  return a.kind == b.kind && a.count == b.count && a.type == b.type && (!has_op(a.kind) || a.op == b.op) &&
         (!has_root(a.kind) || a.root == b.root);
}

// One collective: the n-th call of every rank of a communicator.
class CollectiveJoint final : public Joint {
 public:
  CollectiveJoint(const std::shared_ptr<Clique>& q, uint64_t number)
      : clique_(q), nranks_(q->nranks), title_("collective #" + std::to_string(number) + " of " + q->name()) {
    expected = static_cast<size_t>(q->nranks);
    calls.resize(expected);
  }

  std::vector<std::optional<Call>> calls;  // by rank; complete before run() (runtime lock)
  FaultKind fault_kind = FaultKind::deadlock;
  ncclResult_t error = ncclRemoteError;  // what the communicators' async error becomes on failure
  std::atomic<bool> reported{false};     // the failure became a fault

  const std::string& title() const { return title_; }
  int nranks() const { return nranks_; }

  // "rank 0 called ncclAllReduce(...) from f (file:line); rank(s) 1 never called it"
  std::string ranks_summary() const {
    std::string text;
    std::vector<int> missing;
    for (int r = 0; r < nranks_; ++r) {
      if (!calls[r]) {
        missing.push_back(r);
        continue;
      }
      text += "rank " + std::to_string(r) + " called " + call_text(*calls[r]) + " from " +
              describe_code_address(calls[r]->caller) + "; ";
    }
    if (!missing.empty()) text += "rank(s) " + ranks_text(missing) + " never called it";
    return text;
  }

  std::string timeout_message() const override {
    return "seg::sim: NCCL " + title_ + " timed out after " +
           seconds_text(timeout()) + " waiting for its ranks: " +
           ranks_summary() + " (real NCCL would hang here; SEG_SIM_NCCL_TIMEOUT_S sets the timeout)";
  }
  std::chrono::nanoseconds timeout() const override { return nccl::timeout(); }

  void on_failure(const std::string& message) override {
    std::fprintf(stderr, "%s\n", message.c_str());
    fail(error, message);
    if (std::shared_ptr<Clique> q = clique_.lock())
      for (ncclComm* c : q->comms)
        if (c) c->async_error = error;
  }

  void run(OpRun& run) override;

 private:
  std::weak_ptr<Clique> clique_;  // the communicator may be destroyed while its work is queued
  int nranks_;
  std::string title_;
};

void CollectiveJoint::run(OpRun& result) {
  const Call& c = *calls[0];
  const size_t bytes = c.count * type_size(c.type);
  for (int r = 0; r < nranks_; ++r) {
    const Call& mine = *calls[r];
    const bool send_gone = send_bytes(mine, r, nranks_) && !inside_allocation(mine.send, send_bytes(mine, r, nranks_));
    const bool recv_gone = recv_bytes(mine, r, nranks_) && !inside_allocation(mine.recv, recv_bytes(mine, r, nranks_));
    if (send_gone || recv_gone) {
      result.fault.emplace(FaultKind::bad_address, "seg::sim: NCCL " + title_ + ": rank " + std::to_string(r) + "'s " +
                                                       (send_gone ? "sendbuff " + pointer_text(mine.send)
                                                                  : "recvbuff " + pointer_text(mine.recv)) +
                                                       " was freed before the queued collective ran");
      return;
    }
  }
  if (bytes == 0) return;
  const size_t n = static_cast<size_t>(nranks_);
  std::vector<const void*> sends(n);
  for (size_t r = 0; r < n; ++r) sends[r] = calls[r]->send;
  // The result goes to a buffer of its own first: in-place calls read what they overwrite.
  std::vector<unsigned char> out;
  switch (c.kind) {
    case Kind::all_reduce:
    case Kind::reduce:
      out.resize(bytes);
      reduce_in_rank_order(sends, out.data(), c.count, c.type, c.op);
      for (size_t r = 0; r < n; ++r)
        if (c.kind == Kind::all_reduce || static_cast<int>(r) == c.root) std::memcpy(calls[r]->recv, out.data(), bytes);
      break;
    case Kind::reduce_scatter:
      out.resize(bytes * n);
      reduce_in_rank_order(sends, out.data(), c.count * n, c.type, c.op);
      for (size_t r = 0; r < n; ++r) std::memcpy(calls[r]->recv, out.data() + r * bytes, bytes);
      break;
    case Kind::broadcast:
      out.assign(static_cast<const unsigned char*>(calls[c.root]->send),
                 static_cast<const unsigned char*>(calls[c.root]->send) + bytes);
      for (size_t r = 0; r < n; ++r) std::memcpy(calls[r]->recv, out.data(), bytes);
      break;
    case Kind::all_gather:
      out.resize(bytes * n);
      for (size_t r = 0; r < n; ++r) std::memcpy(out.data() + r * bytes, sends[r], bytes);
      for (size_t r = 0; r < n; ++r) std::memcpy(calls[r]->recv, out.data(), bytes * n);
      break;
  }
}

void fail_open_collectives(Clique& q, int rank, bool all, const std::string& why) {
  std::vector<std::shared_ptr<CollectiveJoint>> doomed;
  for (const auto& [number, j] : q.open)
    if (j->failure.empty() && (all || !j->calls[rank])) doomed.push_back(j);
  for (const auto& j : doomed)
    fail_joint(*j, "seg::sim: NCCL " + j->title() + " can never complete: " + why + "; " + j->ranks_summary());
}

}  // namespace seg::sim::detail::nccl

namespace {

// One rank's op of a collective.
class CollectiveOp final : public Op {
 public:
  CollectiveOp(const Call& call, int rank, int nranks, std::shared_ptr<CollectiveJoint> j)
      : call_(call), rank_(rank), nranks_(nranks), collective_(std::move(j)) {}
  OpPtr clone() const override { throw std::logic_error("seg::sim: NCCL calls cannot be captured into graphs"); }
  std::string describe() const override {
    return call_text(call_) + " rank " + std::to_string(rank_) + " of " + std::to_string(nranks_) + " on " +
           stream_text(*this) + " called from " + describe_code_address(call_.caller);
  }
  void accesses(std::vector<Access>& out) const override {
    if (const size_t b = send_bytes(call_, rank_, nranks_)) {
      const auto p = reinterpret_cast<uintptr_t>(call_.send);
      out.push_back({p, p + b, false});
    }
    if (const size_t b = recv_bytes(call_, rank_, nranks_)) {
      const auto p = reinterpret_cast<uintptr_t>(call_.recv);
      out.push_back({p, p + b, true});
    }
  }
  // Runs only when the collective failed (a complete one runs as a joint op): its first op to run
  // reports why, as a fault of its stream's device.
  void execute(OpRun& run) override {
    if (!collective_->reported.exchange(true)) run.fault.emplace(collective_->fault_kind, collective_->failure);
  }

 private:
  Call call_;
  int rank_, nranks_;
  std::shared_ptr<CollectiveJoint> collective_;
};

// ncclGroupStart/ncclGroupEnd of the calling host thread.
struct Group {
  int depth = 0;
  std::vector<std::pair<ncclComm*, Call>> calls;
  std::vector<ncclComm*> inits;
};
Group& group() {
  thread_local Group g;
  return g;
}

// The problem with a buffer argument ("" when fine).
std::string buffer_problem(const void* p, size_t bytes, int device) {
  AllocationInfo info;
  if (!find_allocation(p, &info)) return "is not device memory (cudaMalloc, cudaMallocAsync): host memory or no allocation";
  if (info.kind != MemoryKind::device)
    return std::string("is ") + memory_kind_name(info.kind) + " memory, not device memory (cudaMalloc, cudaMallocAsync)";
  if (info.device != device)
    return "is memory of device " + std::to_string(info.device) + ", but the rank's device is " + std::to_string(device);
  if (reinterpret_cast<uintptr_t>(p) + bytes > info.begin + info.bytes)
    return "is too small: the call needs " + std::to_string(bytes) + " bytes from it, its " +
           std::to_string(info.bytes) + "-byte allocation has " +
           std::to_string(info.begin + info.bytes - reinterpret_cast<uintptr_t>(p));
  return "";
}

// Checks a call and resolves its stream (runtime lock held).
ncclResult_t validate(ncclComm* comm, Call& c, cudaStream_t stream) {
  const std::string api = kind_name(c.kind);
  if (!comm) return fail(ncclInvalidArgument, api + ": comm is null");
  if (type_size(c.type) == 0)
    return fail(ncclInvalidArgument, api + ": datatype " + std::to_string(static_cast<int>(c.type)) +
                                         " is not one the simulator reduces (the fp8 types are not simulated)");
  if (has_op(c.kind) && (static_cast<int>(c.op) < 0 || c.op >= ncclNumOps))
    return fail(ncclInvalidArgument, api + ": reduction op " + std::to_string(static_cast<int>(c.op)) +
                                         " is not sum, prod, max, min or avg (user-defined ops are not simulated)");
  if (has_root(c.kind) && (c.root < 0 || c.root >= comm->nranks))
    return fail(ncclInvalidArgument, api + ": root " + std::to_string(c.root) + " is not a rank of the " +
                                         std::to_string(comm->nranks) + "-rank communicator");
  if (host_thread().in_host_function)
    return fail(ncclInvalidUsage, api + ": called from a host function queued on a stream");
  CUstream_st* s = resolve_stream(stream);
  if (!s) return fail(ncclInvalidArgument, api + ": the stream is not a live stream");
  if (s->device != comm->device)
    return fail(ncclInvalidArgument, api + ": the stream belongs to device " + std::to_string(s->device) +
                                         ", rank " + std::to_string(comm->rank) + "'s communicator to device " +
                                         std::to_string(comm->device));
  if (s->capture)
    return fail(ncclInvalidUsage, api + ": the stream is capturing a graph; NCCL calls in graphs are not simulated");
  c.stream = s;
  const size_t sb = send_bytes(c, comm->rank, comm->nranks), rb = recv_bytes(c, comm->rank, comm->nranks);
  if (sb)
    if (const std::string why = buffer_problem(c.send, sb, comm->device); !why.empty())
      return fail(ncclInvalidArgument, api + ": sendbuff " + pointer_text(c.send) + " of rank " +
                                           std::to_string(comm->rank) + " " + why);
  if (rb)
    if (const std::string why = buffer_problem(c.recv, rb, comm->device); !why.empty())
      return fail(ncclInvalidArgument, api + ": recvbuff " + pointer_text(c.recv) + " of rank " +
                                           std::to_string(comm->rank) + " " + why);
  return ncclSuccess;
}

// Queues a checked call as this rank's op of its collective (runtime lock held).
ncclResult_t enqueue(ncclComm* comm, const Call& c) {
  if (comm->spanning) return spanning_enqueue(comm, c);  // ranks in other processes (nccl_spanning.cpp)
  const std::shared_ptr<Clique> q = comm->clique;
  if (!q)
    return fail(ncclInvalidUsage, std::string(kind_name(c.kind)) +
                                      ": the communicator is not initialised yet (ncclCommInitRank in a group "
                                      "completes at ncclGroupEnd)");
  const uint64_t number = ++comm->calls;
  std::shared_ptr<CollectiveJoint>& slot = q->open[number];
  if (!slot) slot = std::make_shared<CollectiveJoint>(q, number);
  const std::shared_ptr<CollectiveJoint> j = slot;
  j->calls[comm->rank] = c;
  bool everyone = true;
  for (const auto& call : j->calls) everyone = everyone && call.has_value();
  if (everyone) q->open.erase(number);
  if (!j->failure.empty())
    return fail(ncclRemoteError, std::string(kind_name(c.kind)) + " of rank " + std::to_string(comm->rank) +
                                     ": this rank's call joined a collective that already failed: " + j->failure);
  for (int r = 0; r < q->nranks; ++r) {
    if (r == comm->rank || !j->calls[r]) continue;
    if (same_collective(*j->calls[r], c)) break;
    const std::string message =
        "seg::sim: mismatched NCCL calls in " + j->title() + ": rank " + std::to_string(r) + " called " +
        call_text(*j->calls[r]) + " from " + describe_code_address(j->calls[r]->caller) + ", rank " +
        std::to_string(comm->rank) + " called " + call_text(c) + " from " + describe_code_address(c.caller) +
        " (the n-th call of every rank must be the same collective with the same count, datatype, op and root; "
        "real NCCL would hang or corrupt memory)";
    j->fault_kind = FaultKind::bad_argument;
    j->error = ncclInvalidUsage;
    fail_joint(*j, message);
    return fail(ncclInvalidUsage, message);
  }
  auto op = std::make_shared<CollectiveOp>(c, comm->rank, q->nranks, j);
  op->joint = j;
  if (submit(*c.stream, op) != cudaSuccess)
    return fail(ncclInvalidUsage, std::string(kind_name(c.kind)) + ": the stream cannot take work now");
  return ncclSuccess;
}

ncclResult_t collective(ncclComm* comm, Call c, cudaStream_t stream) {
  Lock lock = runtime_lock();
  if (const ncclResult_t r = validate(comm, c, stream); r != ncclSuccess) return r;
  if (group().depth > 0) {
    group().calls.emplace_back(comm, c);
    return ncclSuccess;
  }
  return enqueue(comm, c);
}

#define SEG_SIM_NCCL_CALLER __builtin_return_address(0)

}  // namespace

namespace seg::sim::detail::nccl {

bool in_group() { return group().depth > 0; }
void defer_init(ncclComm* comm) { group().inits.push_back(comm); }

}  // namespace seg::sim::detail::nccl

extern "C" {

ncclResult_t ncclGroupStart() {
  ++group().depth;
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd() {
  Group& g = group();
  if (g.depth == 0) return fail(ncclInvalidUsage, "ncclGroupEnd without a matching ncclGroupStart");
  if (--g.depth > 0) return ncclSuccess;
  const std::vector<std::pair<ncclComm*, Call>> calls = std::move(g.calls);
  const std::vector<ncclComm*> inits = std::move(g.inits);
  g.calls.clear();
  g.inits.clear();
  ncclResult_t result = finish_group_inits(inits);
  if (result != ncclSuccess) return result;  // the group's calls may name communicators that failed
  Lock lock = runtime_lock();
  for (const auto& [comm, call] : calls)
    if (const ncclResult_t r = enqueue(comm, call); r != ncclSuccess && result == ncclSuccess) result = r;
  return result;
}

ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream) {
  return collective(comm, {Kind::all_reduce, sendbuff, recvbuff, count, datatype, op, 0, nullptr, SEG_SIM_NCCL_CALLER},
                    stream);
}

ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                           ncclComm_t comm, cudaStream_t stream) {
  return collective(comm,
                    {Kind::broadcast, sendbuff, recvbuff, count, datatype, ncclSum, root, nullptr, SEG_SIM_NCCL_CALLER},
                    stream);
}

ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                       cudaStream_t stream) {
  return collective(comm, {Kind::broadcast, buff, buff, count, datatype, ncclSum, root, nullptr, SEG_SIM_NCCL_CALLER},
                    stream);
}

ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                        int root, ncclComm_t comm, cudaStream_t stream) {
  return collective(comm, {Kind::reduce, sendbuff, recvbuff, count, datatype, op, root, nullptr, SEG_SIM_NCCL_CALLER},
                    stream);
}

ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return collective(
      comm, {Kind::reduce_scatter, sendbuff, recvbuff, recvcount, datatype, op, 0, nullptr, SEG_SIM_NCCL_CALLER},
      stream);
}

ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                           ncclComm_t comm, cudaStream_t stream) {
  return collective(
      comm, {Kind::all_gather, sendbuff, recvbuff, sendcount, datatype, ncclSum, 0, nullptr, SEG_SIM_NCCL_CALLER},
      stream);
}

}  // extern "C"
