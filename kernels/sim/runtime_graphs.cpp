// Stream capture and CUDA graphs in the simulator: cudaStreamBeginCapture/EndCapture,
// cudaStreamIsCapturing, cudaStreamGetCaptureInfo, cudaThreadExchangeStreamCaptureMode,
// cudaGraphCreate/GetNodes/Instantiate(WithFlags, WithParams)/Launch/ExecDestroy/Destroy.
//
// Captured work is recorded, not run: each op queued on a capturing stream becomes a graph node
// depending on the stream's previous nodes; cudaEventRecord on a capturing stream marks nodes, and
// cudaStreamWaitEvent on such an event from another stream pulls that stream into the capture
// (fork) or merges the marked nodes into a capturing stream's dependencies (join). A launch of the
// instantiated graph clones every node into an op, with the graph's edges as dependencies; the
// roots wait for the stream's previous work, the stream's next work waits for the whole graph, and
// two launches of one executable graph never overlap.
//
// What a capture forbids, as the runtime does (the call fails and the capture is invalidated, so
// cudaStreamEndCapture returns cudaErrorStreamCaptureInvalidated and no graph):
//   * synchronising or querying a capturing stream, or an event recorded in a capture
//     (cudaErrorStreamCaptureUnsupported / cudaErrorCapturedEvent), or the device of a capturing
//     stream (cudaDeviceSynchronize);
//   * using the legacy default stream while a blocking stream of its device captures
//     (cudaErrorStreamCaptureImplicit): synchronous cudaMemcpy/cudaMemset enqueue there;
//   * potentially unsafe calls under the calling thread's capture interaction mode
//     (cudaErrorStreamCaptureUnsupported): cudaMalloc, cudaMallocHost, cudaFree, cudaFreeHost,
//     cudaHostRegister, synchronous copies and memsets. A thread in cudaStreamCaptureModeGlobal
//     (the default) is stopped by its own non-relaxed captures and by global-mode captures of other
//     threads; in cudaStreamCaptureModeThreadLocal only by its own; in Relaxed never;
//   * waiting on an event that was not recorded in the same capture (cudaErrorStreamCaptureIsolation);
//   * stream-ordered allocation (cudaMallocAsync, cudaFreeAsync) in a capture: the simulator does
//     not model graph memory nodes (cudaErrorStreamCaptureUnsupported).
// cudaStreamEndCapture also fails with cudaErrorStreamCaptureUnjoined when a forked stream's work
// was not joined back into the origin stream.
#include <algorithm>
#include <set>
#include <unordered_set>

#include "kernels/sim/stream_executor.h"
#include "kernels/sim/stream_ops.h"

namespace seg::sim::detail {

cudaError_t set_last_error(cudaError_t e);  // runtime_api.cpp

namespace {

std::vector<std::shared_ptr<CaptureSession>>& active_sessions() {
  static auto* v = new std::vector<std::shared_ptr<CaptureSession>>();
  return *v;
}
std::set<cudaGraph_t>& graphs() {
  static auto* s = new std::set<cudaGraph_t>();
  return *s;
}
std::set<cudaGraphExec_t>& execs() {
  static auto* s = new std::set<cudaGraphExec_t>();
  return *s;
}
uint64_t g_next_capture_id = 1;

CUgraphNode_st* add_node(CUgraph_st& g, OpPtr prototype, std::vector<CUgraphNode_st*> deps) {
  auto node = std::make_unique<CUgraphNode_st>();
  node->prototype = std::move(prototype);
  node->deps = std::move(deps);
  node->index = g.nodes.size();
  g.nodes.push_back(std::move(node));
  return g.nodes.back().get();
}

void add_unique(std::vector<CUgraphNode_st*>& v, CUgraphNode_st* n) {
  if (std::find(v.begin(), v.end(), n) == v.end()) v.push_back(n);
}

// Nodes with no dependents among `nodes`.
std::vector<size_t> sinks(const std::vector<CUgraphExec_st::Node>& nodes) {
  std::vector<bool> has_dependent(nodes.size(), false);
  for (const auto& n : nodes)
    for (size_t d : n.deps) has_dependent[d] = true;
  std::vector<size_t> out;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (!has_dependent[i]) out.push_back(i);
  return out;
}

}  // namespace

void invalidate(CaptureSession& session, cudaError_t why) {
  if (session.invalidated == cudaSuccess) session.invalidated = why;
}

cudaError_t check_unsafe_call() {
  const HostThread& h = host_thread();
  if (h.capture_mode == cudaStreamCaptureModeRelaxed) return cudaSuccess;
  cudaError_t result = cudaSuccess;
  for (const auto& s : active_sessions()) {
    const bool mine = s->thread == std::this_thread::get_id();
    const bool forbids =
        (mine && s->mode != cudaStreamCaptureModeRelaxed) ||
        (!mine && h.capture_mode == cudaStreamCaptureModeGlobal && s->mode == cudaStreamCaptureModeGlobal);
    if (!forbids) continue;
    invalidate(*s, cudaErrorStreamCaptureUnsupported);
    result = cudaErrorStreamCaptureUnsupported;
  }
  return result;
}

cudaError_t check_sync_during_capture(CUstream_st* stream, int device) {
  if (stream) {
    if (stream->capture) {
      invalidate(*stream->capture, cudaErrorStreamCaptureUnsupported);
      return cudaErrorStreamCaptureUnsupported;
    }
    return capture_conflict(*stream);  // the legacy stream encompasses the blocking streams
  }
  cudaError_t result = cudaSuccess;
  for (const auto& s : active_sessions())
    if (s->origin && s->graph && s->graph->device == device) {
      invalidate(*s, cudaErrorStreamCaptureUnsupported);
      result = cudaErrorStreamCaptureUnsupported;
    }
  return result;
}

cudaError_t capture_op(CUstream_st& stream, const OpPtr& op) {
  CaptureSession& session = *stream.capture;
  if (session.invalidated != cudaSuccess) return cudaErrorStreamCaptureInvalidated;
  op->device = stream.device;
  CUgraphNode_st* node = add_node(*session.graph, op, stream.frontier);
  stream.frontier = {node};
  return cudaSuccess;
}

// Called by cudaStreamWaitEvent (runtime_streams.cpp) when capture is involved.
cudaError_t capture_wait(CUstream_st& stream, CUevent_st& event) {
  if (stream.capture && event.capture == stream.capture) {
    if (stream.capture->invalidated != cudaSuccess) return cudaErrorStreamCaptureInvalidated;
    for (CUgraphNode_st* n : event.frontier) add_unique(stream.frontier, n);
    return cudaSuccess;
  }
  if (stream.capture) {  // an event from outside this capture
    invalidate(*stream.capture, cudaErrorStreamCaptureIsolation);
    if (event.capture && !event.capture->ended) invalidate(*event.capture, cudaErrorStreamCaptureIsolation);
    return cudaErrorStreamCaptureIsolation;
  }
  // A stream outside any capture waits on a captured event: it joins that capture (a fork).
  CaptureSession& session = *event.capture;
  if (session.invalidated != cudaSuccess) return cudaErrorStreamCaptureInvalidated;
  if (stream.kind == CUstream_st::Kind::legacy) {
    invalidate(session, cudaErrorStreamCaptureImplicit);
    return cudaErrorStreamCaptureImplicit;
  }
  stream.capture = event.capture;
  stream.frontier = event.frontier;
  session.streams.push_back(&stream);
  return cudaSuccess;
}

}  // namespace seg::sim::detail

using namespace seg::sim::detail;

extern "C" {

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode) {
  Lock lock = runtime_lock();
  CUstream_st* s = resolve_stream(stream);
  if (!s) return set_last_error(cudaErrorInvalidResourceHandle);
  if (mode != cudaStreamCaptureModeGlobal && mode != cudaStreamCaptureModeThreadLocal &&
      mode != cudaStreamCaptureModeRelaxed)
    return set_last_error(cudaErrorInvalidValue);
  if (s->kind == CUstream_st::Kind::legacy) return set_last_error(cudaErrorStreamCaptureUnsupported);
  if (s->capture) return set_last_error(cudaErrorIllegalState);
  auto session = std::make_shared<CaptureSession>();
  session->id = g_next_capture_id++;
  session->mode = mode;
  session->thread = std::this_thread::get_id();
  session->origin = s;
  session->graph = std::make_unique<CUgraph_st>();
  session->graph->device = s->device;
  session->streams.push_back(s);
  s->capture = session;
  s->frontier.clear();
  active_sessions().push_back(session);
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph_out) {
  if (!graph_out) return set_last_error(cudaErrorInvalidValue);
  Lock lock = runtime_lock();
  CUstream_st* s = resolve_stream(stream);
  if (!s) return set_last_error(cudaErrorInvalidResourceHandle);
  if (!s->capture) return set_last_error(cudaErrorIllegalState);
  std::shared_ptr<CaptureSession> session = s->capture;
  if (session->origin != s) {
    invalidate(*session, cudaErrorStreamCaptureUnmatched);
    return set_last_error(cudaErrorStreamCaptureUnmatched);
  }
  if (session->mode != cudaStreamCaptureModeRelaxed && session->thread != std::this_thread::get_id())
    return set_last_error(cudaErrorStreamCaptureWrongThread);
  // Every forked stream must end in work the origin stream waited for.
  std::unordered_set<const CUgraphNode_st*> joined;
  std::vector<const CUgraphNode_st*> stack(s->frontier.begin(), s->frontier.end());
  while (!stack.empty()) {
    const CUgraphNode_st* n = stack.back();
    stack.pop_back();
    if (!joined.insert(n).second) continue;
    for (const CUgraphNode_st* d : n->deps) stack.push_back(d);
  }
  bool unjoined = false;
  for (CUstream_st* member : session->streams)
    for (const CUgraphNode_st* n : member->frontier) unjoined = unjoined || !joined.count(n);
  for (CUstream_st* member : session->streams) {
    member->capture.reset();
    member->frontier.clear();
  }
  session->ended = true;
  auto& active = active_sessions();
  active.erase(std::remove(active.begin(), active.end(), session), active.end());
  *graph_out = nullptr;
  if (session->invalidated != cudaSuccess) return set_last_error(cudaErrorStreamCaptureInvalidated);
  if (unjoined) return set_last_error(cudaErrorStreamCaptureUnjoined);
  *graph_out = session->graph.release();
  graphs().insert(*graph_out);
  return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* status) {
  if (!status) return set_last_error(cudaErrorInvalidValue);
  Lock lock = runtime_lock();
  CUstream_st* s = resolve_stream(stream);
  if (!s) return set_last_error(cudaErrorInvalidResourceHandle);
  *status = !s->capture                              ? cudaStreamCaptureStatusNone
            : s->capture->invalidated != cudaSuccess ? cudaStreamCaptureStatusInvalidated
                                                     : cudaStreamCaptureStatusActive;
  return cudaSuccess;
}

cudaError_t cudaStreamGetCaptureInfo(cudaStream_t stream, cudaStreamCaptureStatus* status, unsigned long long* id,
                                     cudaGraph_t* graph, const cudaGraphNode_t** dependencies,
                                     const cudaGraphEdgeData** edge_data, size_t* dependency_count) {
  if (!status) return set_last_error(cudaErrorInvalidValue);
  Lock lock = runtime_lock();
  CUstream_st* s = resolve_stream(stream);
  if (!s) return set_last_error(cudaErrorInvalidResourceHandle);
  const bool active = s->capture != nullptr;
  *status = !active                                  ? cudaStreamCaptureStatusNone
            : s->capture->invalidated != cudaSuccess ? cudaStreamCaptureStatusInvalidated
                                                     : cudaStreamCaptureStatusActive;
  if (id) *id = active ? s->capture->id : 0;
  if (graph) *graph = active ? s->capture->graph.get() : nullptr;
  if (dependencies) *dependencies = active && !s->frontier.empty() ? s->frontier.data() : nullptr;
  if (edge_data) *edge_data = nullptr;
  if (dependency_count) *dependency_count = active ? s->frontier.size() : 0;
  return cudaSuccess;
}

cudaError_t cudaThreadExchangeStreamCaptureMode(cudaStreamCaptureMode* mode) {
  if (!mode) return set_last_error(cudaErrorInvalidValue);
  HostThread& h = host_thread();
  std::swap(h.capture_mode, *mode);
  return cudaSuccess;
}

cudaError_t cudaGraphCreate(cudaGraph_t* graph, unsigned int flags) {
  if (!graph || flags != 0) return set_last_error(cudaErrorInvalidValue);
  Lock lock = runtime_lock();
  *graph = new CUgraph_st();
  (*graph)->device = host_thread().device;
  graphs().insert(*graph);
  return cudaSuccess;
}

cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* count) {
  if (!count) return set_last_error(cudaErrorInvalidValue);
  Lock lock = runtime_lock();
  if (!graphs().count(graph)) return set_last_error(cudaErrorInvalidValue);
  if (!nodes) {
    *count = graph->nodes.size();
    return cudaSuccess;
  }
  const size_t n = std::min(*count, graph->nodes.size());
  for (size_t i = 0; i < n; ++i) nodes[i] = graph->nodes[i].get();
  for (size_t i = n; i < *count; ++i) nodes[i] = nullptr;
  *count = n;
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags) {
  if (!exec) return set_last_error(cudaErrorInvalidValue);
  constexpr unsigned long long known = cudaGraphInstantiateFlagAutoFreeOnLaunch | cudaGraphInstantiateFlagUpload |
                                       cudaGraphInstantiateFlagDeviceLaunch | cudaGraphInstantiateFlagUseNodePriority;
  if (flags & ~known) return set_last_error(cudaErrorInvalidValue);
  Lock lock = runtime_lock();
  if (!graphs().count(graph)) return set_last_error(cudaErrorInvalidValue);
  auto* e = new CUgraphExec_st();
  e->device = graph->device;
  for (const auto& node : graph->nodes) {
    CUgraphExec_st::Node n;
    n.prototype = node->prototype;
    for (const CUgraphNode_st* d : node->deps) n.deps.push_back(d->index);
    n.component = new_component();
    e->nodes.push_back(std::move(n));
  }
  execs().insert(e);
  *exec = e;
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags) {
  return cudaGraphInstantiate(exec, graph, flags);
}

cudaError_t cudaGraphInstantiateWithParams(cudaGraphExec_t* exec, cudaGraph_t graph,
                                           cudaGraphInstantiateParams* params) {
  if (!params) return set_last_error(cudaErrorInvalidValue);
  const cudaError_t e = cudaGraphInstantiate(exec, graph, params->flags);
  params->errNode_out = nullptr;
  params->result_out = e == cudaSuccess ? cudaGraphInstantiateSuccess : cudaGraphInstantiateError;
  return e;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  Lock lock = runtime_lock();
  if (!execs().count(exec)) return set_last_error(cudaErrorInvalidValue);
  CUstream_st* s = resolve_stream(stream);
  if (!s) return set_last_error(cudaErrorInvalidResourceHandle);
  if (host_thread().in_host_function) return set_last_error(cudaErrorNotPermitted);
  if (s->capture) {
    // Launching a graph into a capture inlines its nodes into the captured graph.
    CaptureSession& session = *s->capture;
    if (session.invalidated != cudaSuccess) return set_last_error(cudaErrorStreamCaptureInvalidated);
    std::vector<CUgraphNode_st*> added;
    for (const auto& n : exec->nodes) {
      std::vector<CUgraphNode_st*> deps;
      for (size_t d : n.deps) deps.push_back(added[d]);
      if (n.deps.empty()) deps = s->frontier;
      added.push_back(add_node(*session.graph, n.prototype, deps));
    }
    if (!added.empty()) {
      s->frontier.clear();
      for (size_t i : sinks(exec->nodes)) s->frontier.push_back(added[i]);
    }
    return cudaSuccess;
  }
  if (const cudaError_t e = capture_conflict(*s); e != cudaSuccess) return set_last_error(e);
  std::vector<OpPtr> ops;
  for (const auto& n : exec->nodes) {
    OpPtr op = n.prototype->clone();
    Submit how;
    how.component = n.component;
    how.becomes_tail = false;
    if (n.deps.empty()) {
      if (exec->last_launch) how.extra_deps.push_back(exec->last_launch);
    } else {
      how.in_stream_order = false;
      for (size_t d : n.deps) how.extra_deps.push_back(ops[d]);
    }
    if (const cudaError_t e = submit(*s, op, how); e != cudaSuccess) return set_last_error(e);
    ops.push_back(op);
  }
  OpPtr join = make_marker_op("graph launch");
  Submit how;
  how.extra_deps = ops;
  if (exec->last_launch) how.extra_deps.push_back(exec->last_launch);
  if (const cudaError_t e = submit(*s, join, how); e != cudaSuccess) return set_last_error(e);
  exec->last_launch = join;
  return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  Lock lock = runtime_lock();
  if (!execs().erase(exec)) return set_last_error(cudaErrorInvalidValue);
  delete exec;  // queued launches hold their own clones
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  Lock lock = runtime_lock();
  if (!graphs().erase(graph)) return set_last_error(cudaErrorInvalidValue);
  delete graph;
  return cudaSuccess;
}

}  // extern "C"
