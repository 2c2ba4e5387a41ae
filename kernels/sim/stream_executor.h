// Streams, events, devices and graphs of the simulated runtime, and the executor that runs queued
// work (internal header; the runtime API in runtime_*.cpp is built on it; user guide:
// docs/cuda-simulator.md, "Streams and events").
//
// The model. Every asynchronous API call (a launch, cudaMemcpyAsync, cudaMemsetAsync, a host
// function, an event record or wait, cudaFreeAsync) becomes an Op queued on a stream. An op
// depends on the op before it on its stream, on the event record it waits for, and, by the legacy
// default stream's rule, on the last op of the other blocking streams of its device (an op on the
// legacy stream) or on the last op of the legacy stream (an op on a blocking stream). Nothing runs
// at the call: ops run when the host needs them -- on the calling host thread, at synchronisation
// points (cudaStreamSynchronize, cudaEventSynchronize, cudaDeviceSynchronize, the synchronous
// copies, cudaFree, the queries, which run one op per call so polling loops finish). A sync runs
// exactly the ops it needs (the target and, transitively, what it depends on), never unrelated
// streams' work, so work the host did not wait for has not happened yet, as far as the host can
// tell. Among the ops that may run next, StreamOrder::fifo takes the one enqueued first;
// StreamOrder::random takes a seeded random one among every runnable op (also ops the host does not
// wait for yet: a GPU may run them at any time), so independent streams run in a random order.
//
// Deadlock-free by construction: an op only depends on ops enqueued before it, so the oldest
// pending op can always run. The one exception is a joint op (struct Joint below: an NCCL
// collective, one member op per rank's stream): its members run together, once all of them are
// queued and all their dependencies are done, so a member waits for its peers' predecessors,
// which may have been queued after it. A sync that needs a member of an incomplete joint op waits
// (another host thread may queue the rest) up to the joint op's timeout, and a joint op whose
// members' predecessors wait for the joint op itself (a cycle: a GPU would hang) fails at once;
// a failed joint op's members then run alone and report the failure as a fault.
//
// Locking: one runtime mutex guards every structure here; the executor releases it while an op
// runs, so other host threads may enqueue (or run other ops) meanwhile.
#pragma once

#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "kernels/sim/launch.h"
#include "kernels/sim/race_detector.h"
#include "kernels/sim/sim.h"

namespace seg::sim::detail {

constexpr int kMaxDevices = 64;

class Op;
using OpPtr = std::shared_ptr<Op>;
struct Joint;
struct CaptureSession;
struct LastCounted;  // stream_ops.h

// What running an op produced.
struct OpRun {
  std::optional<KernelFault> fault;
};

class Op {
 public:
  virtual ~Op() = default;
  // Device work (kernels, copies, memsets, frees) runs with device memory open to the host; host
  // functions with it closed; markers (event records, waits, joins) do nothing.
  enum class Class : uint8_t { device, host, marker };
  virtual Class op_class() const { return Class::device; }
  // Runs the operation; called by the executor without the runtime lock.
  virtual void execute(OpRun& run) = 0;
  // A fresh op with the same payload, for another launch of a graph.
  virtual OpPtr clone() const = 0;
  // The bytes it touches, for the race detector: called just before execute, or, when
  // accesses_known_after_run(), just after it (a kernel whose loads and stores were recorded).
  virtual void accesses(std::vector<Access>& out) const { (void)out; }
  // Whether accesses() is a conservative guess (kernels without instrumentation) rather than exact.
  virtual bool conservative_accesses() const { return false; }
  // Whether accesses() is only known once the op has run (the exact ranges a kernel touched).
  virtual bool accesses_known_after_run() const { return false; }
  // One line for reports: "kernel foo launched at file:line", "cudaMemcpyAsync (...) called from ...".
  virtual std::string describe() const = 0;

  // Set when enqueued, under the runtime lock.
  uint64_t seq = 0;
  int device = 0;
  uint64_t stream_id = 0;
  const void* stream_handle = nullptr;
  uint8_t stream_kind = 0;  // CUstream_st::Kind
  uint32_t component = 0;
  VectorClock clock;
  std::vector<OpPtr> deps;  // what must finish first; cleared when done
  // Execution state, under the runtime lock.
  enum class State : uint8_t { pending, running, done } state = State::pending;
  bool cancelled = false;  // skipped: its device faulted before it ran
  uint64_t time_ns = 0;    // simulated device time when it finished (event timing)
  std::shared_ptr<Joint> joint;  // set before submit: a member of a joint op
};

// Ops on several streams that run as one, on one host thread: an NCCL collective (nccl_*.cpp),
// whose kernels on every GPU spin until all of them have started. The executor runs it when all
// `expected` members are queued and every member's dependencies are done: it checks each member's
// accesses() with the race detector, then calls run() once (members' execute() is not called).
// Until then syncs that need a member wait; after timeout() of waiting the joint op fails. A failed
// joint op (timeout, cycle, or fail_joint: ncclCommAbort, mismatched calls) never runs as one:
// each member runs alone through its execute(), which reports `failure`.
struct Joint {
  virtual ~Joint() = default;
  // Runs the collective's work (runtime lock not held, device memory open).
  virtual void run(OpRun& run) = 0;
  // Why it is still waiting after timeout(): which members never came (lock held).
  virtual std::string timeout_message() const = 0;
  virtual std::chrono::nanoseconds timeout() const = 0;
  // Told (lock held) that it failed, with the message, before its members run.
  virtual void on_failure(const std::string& message) { (void)message; }

  // Kept by the executor under the runtime lock.
  size_t expected = 0;
  std::vector<OpPtr> members;  // queued so far, in submit order; cleared once run or failed
  std::string failure;         // non-empty: failed
  bool started = false;        // run() was called
  std::chrono::steady_clock::time_point waiting_since{};  // the first sync that waited for it
};

// A code address for reports: "function (file:line)" when addr2line can say, else "exe+0x1234".
std::string describe_code_address(const void* address);

}  // namespace seg::sim::detail

// The opaque handle types of the runtime API, complete only in the simulator.
struct CUstream_st {
  enum class Kind : uint8_t { user, legacy, per_thread };
  uint64_t id = 0;
  int device = 0;
  unsigned flags = 0;
  int priority = 0;
  Kind kind = Kind::user;
  uint32_t component = 0;        // race-detector timeline
  seg::sim::detail::OpPtr tail;  // last op enqueued (may be done)
  // Stream capture: the session this stream records into, and the graph nodes the next captured
  // op depends on.
  std::shared_ptr<seg::sim::detail::CaptureSession> capture;
  std::vector<CUgraphNode_st*> frontier;
  bool blocking() const { return kind != Kind::legacy && !(flags & cudaStreamNonBlocking); }
};

struct CUevent_st {
  int device = 0;
  unsigned flags = 0;
  seg::sim::detail::OpPtr record;  // the latest record, when it was not captured
  // When the latest record was made on a capturing stream: the session and the nodes it marks.
  std::shared_ptr<seg::sim::detail::CaptureSession> capture;
  std::vector<CUgraphNode_st*> frontier;
};

struct CUgraphNode_st {
  seg::sim::detail::OpPtr prototype;  // cloned at each launch, never run itself
  std::vector<CUgraphNode_st*> deps;
  size_t index = 0;
};

struct CUgraph_st {
  std::vector<std::unique_ptr<CUgraphNode_st>> nodes;  // in capture order, so deps come first
  int device = 0;
};

struct CUgraphExec_st {
  struct Node {
    seg::sim::detail::OpPtr prototype;
    std::vector<size_t> deps;
    uint32_t component = 0;  // each node is its own race-detector timeline
  };
  std::vector<Node> nodes;
  int device = 0;
  seg::sim::detail::OpPtr last_launch;  // launches of one executable graph never overlap
};

namespace seg::sim::detail {

struct CaptureSession {
  uint64_t id = 0;
  cudaStreamCaptureMode mode = cudaStreamCaptureModeGlobal;
  std::thread::id thread;
  CUstream_st* origin = nullptr;
  std::unique_ptr<CUgraph_st> graph;
  cudaError_t invalidated = cudaSuccess;  // the error that invalidated it
  std::vector<CUstream_st*> streams;      // every stream taking part, origin first
  bool ended = false;
};

struct DeviceState {
  std::unique_ptr<CUstream_st> legacy;
  std::vector<CUstream_st*> blocking;  // live blocking user streams and per-thread streams
  uint64_t peers = 0;                  // devices whose memory this one may access (peer access)
  unsigned flags = 0;                  // cudaSetDeviceFlags
  bool faulted = false;                // a kernel faulted: queued work is skipped until reported
};

// Per host thread.
struct HostThread {
  int device = 0;
  cudaStreamCaptureMode capture_mode = cudaStreamCaptureModeGlobal;  // cudaThreadExchangeStreamCaptureMode
  VectorClock clock;                                                 // what this thread has synchronised with
  CUstream_st* per_thread[kMaxDevices] = {};                         // cudaStreamPerThread, per device
  bool in_host_function = false;                                     // host functions may not call the runtime
  OpPtr last_launch;                                                 // for last_launch_stats
  std::shared_ptr<LastCounted> last_counted;                         // for last_launch_counters (stream_ops.h)
  bool joined = false;  // clock initialised from the other threads' (see host_thread())
};

using Lock = std::unique_lock<std::mutex>;
Lock runtime_lock();
HostThread& host_thread();

// ---- devices (devices.cpp) -------------------------------------------------------------------------
int current_device_count();             // lock not needed
DeviceState& device_state(int device);  // lock held
bool valid_device(int device);
uint64_t peer_mask(int device);  // lock not needed: the devices `device` may access, itself included
void set_peer_access(int device, int peer, bool enabled);  // lock held

size_t device_memory_capacity();  // bytes each device has

// "stream 0x55d0c0 (device 0)", "the legacy default stream (device 0)"
std::string stream_text(const Op& op);

// ---- streams and events (lock held) ----------------------------------------------------------------
// The stream object behind a handle for the calling thread: 0 and cudaStreamLegacy are the
// current device's legacy stream, cudaStreamPerThread its per-thread stream; null when invalid.
CUstream_st* resolve_stream(cudaStream_t handle);
CUstream_st* create_stream(int device, unsigned flags, int priority);
bool destroy_stream(cudaStream_t handle);  // false: not a live user stream
size_t user_stream_count(int device);
bool valid_event(cudaEvent_t e);
void register_event(cudaEvent_t e);
bool unregister_event(cudaEvent_t e);
uint32_t new_component();

// ---- enqueueing (lock held) ------------------------------------------------------------------------
struct Submit {
  std::vector<OpPtr> extra_deps;  // e.g. the event record a wait waits for
  bool in_stream_order = true;    // depends on the stream's tail and becomes it (graph nodes: roots only depend)
  bool becomes_tail = true;
  uint32_t component = 0;  // 0: the stream's
};
// Queues `op` on `stream` (or records it as a graph node when the stream is capturing). Returns the
// runtime's error for operations a capture forbids (and invalidates that capture).
cudaError_t submit(CUstream_st& stream, const OpPtr& op, const Submit& how = {});
// The error an op on this stream would get from a capture in progress, without submitting it.
cudaError_t capture_conflict(CUstream_st& stream);

// ---- running queued work (lock held on entry and exit) ---------------------------------------------
void run_until(Lock& lock, const std::vector<OpPtr>& targets);
void run_one_toward(Lock& lock, const std::vector<OpPtr>& targets);  // at most one op
std::vector<OpPtr> pending_ops(int device);                          // -1: every device
bool all_done(const std::vector<OpPtr>& ops);
// Makes a joint op fail with `message` (lock held): its queued members run alone and report it;
// members submitted later as well. Wakes syncs waiting for it.
void fail_joint(Joint& joint, const std::string& message);
// The calling host thread has seen `ops` finish: everything it enqueues later happens after them.
void host_acquire(const std::vector<OpPtr>& ops);

// ---- faults ----------------------------------------------------------------------------------------
// A fault found while running queued work waits here until a synchronising call throws it.
void record_fault(const KernelFault& fault, int device, bool stops_device);
void throw_pending_fault();                 // lock held; throws and clears if one is pending
cudaError_t pending_fault_error();          // lock held; its error code (cudaSuccess: none)
cudaError_t error_code_of(FaultKind kind);  // the runtime error a GPU would return

// ---- stream capture (graphs.cpp, lock held) --------------------------------------------------------
// A potentially unsafe call (cudaMalloc, synchronous copies, ...) under the calling thread's
// capture interaction mode: cudaErrorStreamCaptureUnsupported (invalidating the captures that
// forbid it) or cudaSuccess.
cudaError_t check_unsafe_call();
// Synchronising with `stream` (or a whole device, stream null) while captures are in progress.
cudaError_t check_sync_during_capture(CUstream_st* stream, int device);
void invalidate(CaptureSession& session, cudaError_t why);
// Records `op` as a node of the stream's capture.
cudaError_t capture_op(CUstream_st& stream, const OpPtr& op);
// cudaStreamWaitEvent where the stream captures or the event was recorded in a capture.
cudaError_t capture_wait(CUstream_st& stream, CUevent_st& event);

// ---- host-access faults (host_access.cpp) ----------------------------------------------------------
// Device memory is open to host code while the calling thread runs device work.
void open_device_memory();
void close_device_memory();
void apply_host_access_policy();

}  // namespace seg::sim::detail
