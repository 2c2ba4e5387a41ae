// The CUDA runtime as the rest of segtrain sees it: one current stream per device, a copy stream,
// events, synchronisation, and the translation of CUDA errors into seg::Error (DESIGN decision 13).
//
// Streams. Every kernel and every copy of a device runs on that device's current stream, so work
// is ordered by the stream and the host waits only where it reads a result back. The current
// stream is a non-blocking stream created on first use, one per device for the process;
// StreamGuard makes another stream current for the calling thread within a scope (the loader's
// host-to-device copies run on copy_stream() that way, overlapping the compute stream). Work on
// two streams is ordered only by events: Event::record on one, Event::wait on the other. The
// caching allocator (core/allocator.h) reuses a block that another stream used only after an
// event recorded on that stream has completed.
//
// Errors. check_cuda() turns a failed runtime call into Error(device) (exit code 4) naming what was
// being done, with a hint for the usual causes (no GPU, driver older than the toolkit, a kernel that
// faulted earlier and is reported at the next synchronising call).
//
// In builds without CUDA these functions exist but throw Error(device) ("built without CUDA"),
// except synchronize(cpu) and current_stream(cpu) which are no-ops returning a null stream.
#pragma once

#include <cstdint>
#include <string>

#include "core/device.h"
#include "kernels/cuda/stream.h"

namespace seg {

// The stream kernels and copies of `device` run on for the calling thread (null for the CPU).
cuda::Stream current_stream(Device device);
// The device's second stream for copies that overlap compute (created on first use).
cuda::Stream copy_stream(Device device);
// Makes the calling thread's current device `index` (cudaSetDevice, skipped when already current).
void set_current_cuda_device(int index);
// Waits until the device's current stream has finished its work (no-op for the CPU).
void synchronize(Device device);

// Makes `stream` the current stream of `device` for this thread until the guard ends.
class StreamGuard {
 public:
  StreamGuard(Device device, cuda::Stream stream);
  ~StreamGuard();
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  int index_;
  cuda::Stream previous_;
  bool had_previous_;
};

// A CUDA event (cudaEventDisableTiming unless timing is asked for).
class Event {
 public:
  explicit Event(bool timing = false);
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  Event(Event&& o) noexcept;
  Event& operator=(Event&& o) noexcept;

  void record(cuda::Stream stream);
  void wait(cuda::Stream stream) const;  // the stream waits (on the device) until the event completes
  bool query() const;                    // true when the event has completed (or was never recorded)
  void synchronize() const;              // the host waits
  // Milliseconds between `start` and this event (both recorded, timing events, both completed).
  float elapsed_ms_since(const Event& start) const;
  void* handle() const { return event_; }

 private:
  void* event_ = nullptr;  // cudaEvent_t
};

// Throws Error(device) when `err` (a cudaError_t) is not cudaSuccess; `what` says what was being done.
void check_cuda(int err, const std::string& what);

// Device-to-host copies made so far (every Tensor copy from a CUDA device to the CPU counts one):
// what the "at most one read-back per training step" test counts.
uint64_t device_to_host_copies();
void count_device_to_host_copy();

}  // namespace seg
