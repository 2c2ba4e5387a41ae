// Streams, events and host functions of the simulator's runtime API, with the ordering a GPU gives
// (stream_executor.h describes the model):
//   * streams belong to the device current at creation; cudaStreamNonBlocking streams do not
//     synchronise with the legacy default stream (0, cudaStreamLegacy), blocking ones and the
//     per-thread default stream (cudaStreamPerThread, one per host thread and device) do;
//   * cudaStreamSynchronize / cudaEventSynchronize run the queued work they need and throw the
//     KernelFault of any of it; cudaStreamQuery / cudaEventQuery answer cudaErrorNotReady while
//     work is pending and run one queued op per call, so polling loops end;
//   * cudaStreamWaitEvent waits for the event's latest record at the time of the call (none: no
//     wait); events record on a stream of their own device;
//   * event times are simulated device time: the run time of the ops the executor has run, so an
//     event later in stream order is never earlier, and the time between two events is what the
//     simulator spent on the work between them;
//   * host functions (cudaLaunchHostFunc, cudaStreamAddCallback) run in stream order on the host
//     thread that runs the queue, with device memory closed to host code; a runtime call from
//     inside one fails with cudaErrorNotPermitted.
// cudaStreamDestroy and cudaEventDestroy return at once; queued work still runs.
#include <cuda_runtime.h>

#include "kernels/sim/stream_executor.h"
#include "kernels/sim/stream_ops.h"

namespace seg::sim::detail {
cudaError_t set_last_error(cudaError_t e);  // runtime_api.cpp
}  // namespace seg::sim::detail

using namespace seg::sim::detail;

namespace {

constexpr int kLeastPriority = 0, kGreatestPriority = -5;  // as on H100

// A query's answer: a pending fault's error wins over "done" and "not ready".
cudaError_t query_result(cudaError_t status) {
  const cudaError_t fault = pending_fault_error();
  return fault != cudaSuccess ? fault : status;
}

// What synchronising with a stream waits for: its last op; for the legacy stream also the last op
// of every blocking stream of the device (the legacy stream encompasses them).
std::vector<OpPtr> stream_targets(CUstream_st& s) {
  std::vector<OpPtr> targets{s.tail};
  if (s.kind == CUstream_st::Kind::legacy)
    for (CUstream_st* b : device_state(s.device).blocking) targets.push_back(b->tail);
  return targets;
}

// The latest record of an event, or an error when its latest record was captured.
cudaError_t captured_event_error(CUevent_st& e) {
  if (!e.capture) return cudaSuccess;
  if (!e.capture->ended) invalidate(*e.capture, cudaErrorCapturedEvent);
  return cudaErrorCapturedEvent;
}

}  // namespace

extern "C" {

cudaError_t cudaStreamCreateWithPriority(cudaStream_t* stream, unsigned int flags, int priority) {
  if (!stream || (flags & ~cudaStreamNonBlocking)) return set_last_error(cudaErrorInvalidValue);
  Lock lock = runtime_lock();
  priority = std::min(kLeastPriority, std::max(kGreatestPriority, priority));
  *stream = create_stream(host_thread().device, flags, priority);
  return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags) {
  return cudaStreamCreateWithPriority(stream, flags, kLeastPriority);
}
cudaError_t cudaStreamCreate(cudaStream_t* stream) { return cudaStreamCreateWithFlags(stream, cudaStreamDefault); }

cudaError_t cudaDeviceGetStreamPriorityRange(int* least, int* greatest) {
  if (least) *least = kLeastPriority;
  if (greatest) *greatest = kGreatestPriority;
  return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  Lock lock = runtime_lock();
  if (stream == nullptr || stream == cudaStreamLegacy || stream == cudaStreamPerThread || !destroy_stream(stream))
    return set_last_error(cudaErrorInvalidResourceHandle);
  return cudaSuccess;
}

cudaError_t cudaStreamGetFlags(cudaStream_t stream, unsigned int* flags) {
  if (!flags) return set_last_error(cudaErrorInvalidValue);
  Lock lock = runtime_lock();
  CUstream_st* s = resolve_stream(stream);
  if (!s) return set_last_error(cudaErrorInvalidResourceHandle);
  *flags = s->flags;
  return cudaSuccess;
}
cudaError_t cudaStreamGetPriority(cudaStream_t stream, int* priority) {
  if (!priority) return set_last_error(cudaErrorInvalidValue);
  Lock lock = runtime_lock();
  CUstream_st* s = resolve_stream(stream);
  if (!s) return set_last_error(cudaErrorInvalidResourceHandle);
  *priority = s->priority;
  return cudaSuccess;
}
cudaError_t cudaStreamGetDevice(cudaStream_t stream, int* device) {
  if (!device) return set_last_error(cudaErrorInvalidValue);
  Lock lock = runtime_lock();
  CUstream_st* s = resolve_stream(stream);
  if (!s) return set_last_error(cudaErrorInvalidResourceHandle);
  *device = s->device;
  return cudaSuccess;
}
cudaError_t cudaStreamGetId(cudaStream_t stream, unsigned long long* id) {
  if (!id) return set_last_error(cudaErrorInvalidValue);
  Lock lock = runtime_lock();
  CUstream_st* s = resolve_stream(stream);
  if (!s) return set_last_error(cudaErrorInvalidResourceHandle);
  *id = s->id;
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  Lock lock = runtime_lock();
  if (host_thread().in_host_function) return set_last_error(cudaErrorNotPermitted);
  CUstream_st* s = resolve_stream(stream);
  if (!s) return set_last_error(cudaErrorInvalidResourceHandle);
  if (const cudaError_t e = check_sync_during_capture(s, s->device); e != cudaSuccess) return set_last_error(e);
  const std::vector<OpPtr> targets = stream_targets(*s);
  run_until(lock, targets);
  host_acquire(targets);
  throw_pending_fault();
  return cudaSuccess;
}

cudaError_t cudaStreamQuery(cudaStream_t stream) {
  Lock lock = runtime_lock();
  if (host_thread().in_host_function) return set_last_error(cudaErrorNotPermitted);
  CUstream_st* s = resolve_stream(stream);
  if (!s) return set_last_error(cudaErrorInvalidResourceHandle);
  if (const cudaError_t e = check_sync_during_capture(s, s->device); e != cudaSuccess) return set_last_error(e);
  const std::vector<OpPtr> targets = stream_targets(*s);
  if (all_done(targets)) {
    host_acquire(targets);
    return query_result(cudaSuccess);
  }
  run_one_toward(lock, targets);
  return query_result(cudaErrorNotReady);
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  if (flags & ~cudaEventWaitExternal) return set_last_error(cudaErrorInvalidValue);
  Lock lock = runtime_lock();
  CUstream_st* s = resolve_stream(stream);
  if (!s || !valid_event(event)) return set_last_error(cudaErrorInvalidResourceHandle);
  if (host_thread().in_host_function) return set_last_error(cudaErrorNotPermitted);
  const bool captured_event = event->capture && !event->capture->ended;
  if (s->capture || captured_event) {
    if (s->capture && !event->capture && !event->record) return cudaSuccess;  // never recorded: no wait
    return set_last_error(capture_wait(*s, *event));
  }
  if (!event->record) return cudaSuccess;  // never recorded (or only in a finished capture): no wait
  Submit how;
  how.extra_deps.push_back(event->record);
  return set_last_error(submit(*s, make_marker_op("cudaStreamWaitEvent"), how));
}

cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* user_data) {
  if (!fn) return set_last_error(cudaErrorInvalidValue);
  Lock lock = runtime_lock();
  CUstream_st* s = resolve_stream(stream);
  if (!s) return set_last_error(cudaErrorInvalidResourceHandle);
  return set_last_error(submit(*s, make_host_function_op(fn, user_data, __builtin_return_address(0))));
}

cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback, void* user_data,
                                  unsigned int flags) {
  if (!callback || flags != 0) return set_last_error(cudaErrorInvalidValue);
  Lock lock = runtime_lock();
  CUstream_st* s = resolve_stream(stream);
  if (!s) return set_last_error(cudaErrorInvalidResourceHandle);
  return set_last_error(submit(*s, make_stream_callback_op(callback, stream, user_data, __builtin_return_address(0))));
}

// ---- events -----------------------------------------------------------------------------------------
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  if (!event || (flags & ~(cudaEventBlockingSync | cudaEventDisableTiming | cudaEventInterprocess)))
    return set_last_error(cudaErrorInvalidValue);
  Lock lock = runtime_lock();
  *event = new CUevent_st();
  (*event)->device = host_thread().device;
  (*event)->flags = flags;
  register_event(*event);
  return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t* event) { return cudaEventCreateWithFlags(event, cudaEventDefault); }

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  Lock lock = runtime_lock();
  if (!unregister_event(event)) return set_last_error(cudaErrorInvalidResourceHandle);
  delete event;  // a queued record op does not refer to the event
  return cudaSuccess;
}

cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned int flags) {
  if (flags & ~cudaEventRecordExternal) return set_last_error(cudaErrorInvalidValue);
  Lock lock = runtime_lock();
  CUstream_st* s = resolve_stream(stream);
  if (!valid_event(event) || !s || event->device != s->device) return set_last_error(cudaErrorInvalidResourceHandle);
  if (host_thread().in_host_function) return set_last_error(cudaErrorNotPermitted);
  if (s->capture) {
    if (s->capture->invalidated != cudaSuccess) return set_last_error(cudaErrorStreamCaptureInvalidated);
    if (flags & cudaEventRecordExternal) {  // event record nodes are not simulated
      invalidate(*s->capture, cudaErrorStreamCaptureUnsupported);
      return set_last_error(cudaErrorStreamCaptureUnsupported);
    }
    event->capture = s->capture;
    event->frontier = s->frontier;
    event->record.reset();
    return cudaSuccess;
  }
  OpPtr op = make_marker_op("cudaEventRecord");
  if (const cudaError_t e = submit(*s, op); e != cudaSuccess) return set_last_error(e);
  event->record = op;
  event->capture.reset();
  event->frontier.clear();
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  return cudaEventRecordWithFlags(event, stream, 0);
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
  Lock lock = runtime_lock();
  if (!valid_event(event)) return set_last_error(cudaErrorInvalidResourceHandle);
  if (host_thread().in_host_function) return set_last_error(cudaErrorNotPermitted);
  if (const cudaError_t e = captured_event_error(*event); e != cudaSuccess) return set_last_error(e);
  const OpPtr record = event->record;
  if (all_done({record})) {
    host_acquire({record});
    return query_result(cudaSuccess);
  }
  run_one_toward(lock, {record});
  return query_result(cudaErrorNotReady);
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  Lock lock = runtime_lock();
  if (!valid_event(event)) return set_last_error(cudaErrorInvalidResourceHandle);
  if (host_thread().in_host_function) return set_last_error(cudaErrorNotPermitted);
  if (const cudaError_t e = captured_event_error(*event); e != cudaSuccess) return set_last_error(e);
  const OpPtr record = event->record;
  run_until(lock, {record});
  host_acquire({record});
  throw_pending_fault();
  return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (!ms) return set_last_error(cudaErrorInvalidValue);
  Lock lock = runtime_lock();
  if (!valid_event(start) || !valid_event(end)) return set_last_error(cudaErrorInvalidResourceHandle);
  if ((start->flags | end->flags) & cudaEventDisableTiming) return set_last_error(cudaErrorInvalidResourceHandle);
  if (!start->record || !end->record) return set_last_error(cudaErrorInvalidResourceHandle);
  if (!all_done({start->record, end->record})) return set_last_error(cudaErrorNotReady);
  const double ns = static_cast<double>(end->record->time_ns) - static_cast<double>(start->record->time_ns);
  *ms = static_cast<float>(ns * 1e-6);
  return cudaSuccess;
}

}  // extern "C"
