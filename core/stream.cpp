#include "core/stream.h"

#include <atomic>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/error.h"

#ifdef SEG_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace seg {

namespace {
std::atomic<uint64_t> g_device_to_host{0};

[[maybe_unused]] Error no_cuda(const std::string& what) {
  return Error(ErrorKind::device, what + ": this segtrain was built without CUDA")
      .hint("use --device cpu, or rebuild with -DSEG_CUDA=ON on a machine with the CUDA toolkit");
}
}  // namespace

uint64_t device_to_host_copies() { return g_device_to_host.load(); }
void count_device_to_host_copy() { ++g_device_to_host; }

#ifdef SEG_WITH_CUDA

namespace {
constexpr int kMaxDevices = 64;

struct DeviceStreams {
  cudaStream_t compute = nullptr;
  cudaStream_t copy = nullptr;
};

std::mutex g_mutex;
DeviceStreams g_streams[kMaxDevices];

// Per thread: the device cudaSetDevice last made current (-1: unknown), and StreamGuard overrides.
thread_local int t_current_device = -1;
thread_local cudaStream_t t_override[kMaxDevices] = {};
thread_local bool t_has_override[kMaxDevices] = {};

void check_index(int index) {
  SEG_CHECK(index >= 0 && index < kMaxDevices, device, "CUDA device index ", index, " out of range");
}

cudaStream_t create_stream(int index, const char* what) {
  set_current_cuda_device(index);
  cudaStream_t s = nullptr;
  check_cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), std::string("creating the ") + what + " stream of cuda:" + std::to_string(index));
  return s;
}
}  // namespace

void check_cuda(int err_code, const std::string& what) {
  const auto err = static_cast<cudaError_t>(err_code);
  if (err == cudaSuccess) return;
  (void)cudaGetLastError();  // clear a non-sticky error so later calls report their own
  Error e(ErrorKind::device, what + " failed: " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")");
  switch (err) {
    case cudaErrorNoDevice:
      e.hint("no CUDA GPU is visible: check nvidia-smi and CUDA_VISIBLE_DEVICES, or use --device cpu");
      break;
    case cudaErrorInsufficientDriver:
      e.hint("the NVIDIA driver is older than the CUDA toolkit segtrain was built with (CUDA " +
             std::to_string(CUDART_VERSION / 1000) + "." + std::to_string(CUDART_VERSION % 1000 / 10) +
             "): update the driver, or rebuild with the toolkit the driver supports (nvidia-smi shows it)");
      break;
    case cudaErrorMemoryAllocation:
      e.hint("out of GPU memory: reduce TRAIN.batch_size_per_gpu or the image sizes, or use --amp O2");
      break;
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
      e.hint("a CUDA kernel faulted (reported here, at the next synchronising call); rerun with "
             "CUDA_LAUNCH_BLOCKING=1 or under compute-sanitizer to find the kernel");
      break;
    case cudaErrorNoKernelImageForDevice:
      e.hint("this segtrain has no kernels for this GPU's architecture: rebuild with "
             "-DSEG_CUDA_ARCHITECTURES=<its sm number> (nvidia-smi --query-gpu=compute_cap --format=csv)");
      break;
    default:
      break;
  }
  throw e;
}

void set_current_cuda_device(int index) {
  check_index(index);
  if (t_current_device == index) return;
  check_cuda(cudaSetDevice(index), "selecting cuda:" + std::to_string(index));
  t_current_device = index;
}

cuda::Stream current_stream(Device device) {
  if (device.is_cpu()) return nullptr;
  check_index(device.index);
  if (t_has_override[device.index]) return t_override[device.index];
  std::lock_guard<std::mutex> lock(g_mutex);
  DeviceStreams& s = g_streams[device.index];
  if (!s.compute) s.compute = create_stream(device.index, "compute");
  return s.compute;
}

cuda::Stream copy_stream(Device device) {
  SEG_CHECK(device.is_cuda(), runtime, "copy_stream of ", device.str());
  check_index(device.index);
  std::lock_guard<std::mutex> lock(g_mutex);
  DeviceStreams& s = g_streams[device.index];
  if (!s.copy) s.copy = create_stream(device.index, "copy");
  return s.copy;
}

void synchronize(Device device) {
  if (device.is_cpu()) return;
  const cuda::Stream s = current_stream(device);
  check_cuda(cudaStreamSynchronize(s), "waiting for " + device.str());
}

StreamGuard::StreamGuard(Device device, cuda::Stream stream) : index_(device.index) {
  SEG_CHECK(device.is_cuda(), runtime, "StreamGuard on ", device.str());
  check_index(index_);
  previous_ = t_override[index_];
  had_previous_ = t_has_override[index_];
  t_override[index_] = stream;
  t_has_override[index_] = true;
}

StreamGuard::~StreamGuard() {
  t_override[index_] = previous_;
  t_has_override[index_] = had_previous_;
}

Event::Event(bool timing) {
  cudaEvent_t e = nullptr;
  check_cuda(cudaEventCreateWithFlags(&e, timing ? cudaEventDefault : cudaEventDisableTiming), "creating a CUDA event");
  event_ = e;
}

Event::~Event() {
  if (event_) cudaEventDestroy(static_cast<cudaEvent_t>(event_));
}

Event::Event(Event&& o) noexcept : event_(o.event_) { o.event_ = nullptr; }

Event& Event::operator=(Event&& o) noexcept {
  if (this != &o) {
    if (event_) cudaEventDestroy(static_cast<cudaEvent_t>(event_));
    event_ = o.event_;
    o.event_ = nullptr;
  }
  return *this;
}

void Event::record(cuda::Stream stream) { check_cuda(cudaEventRecord(static_cast<cudaEvent_t>(event_), stream), "recording a CUDA event"); }

void Event::wait(cuda::Stream stream) const {
  check_cuda(cudaStreamWaitEvent(stream, static_cast<cudaEvent_t>(event_), 0), "making a stream wait for an event");
}

bool Event::query() const {
  const cudaError_t err = cudaEventQuery(static_cast<cudaEvent_t>(event_));
  if (err == cudaErrorNotReady) return false;
  check_cuda(err, "querying a CUDA event");
  return true;
}

void Event::synchronize() const { check_cuda(cudaEventSynchronize(static_cast<cudaEvent_t>(event_)), "waiting for a CUDA event"); }

float Event::elapsed_ms_since(const Event& start) const {
  float ms = 0;
  check_cuda(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(start.event_), static_cast<cudaEvent_t>(event_)),
             "reading the time between two CUDA events");
  return ms;
}

#else  // no CUDA

void check_cuda(int err, const std::string& what) {
  if (err != 0) throw no_cuda(what);
}
void set_current_cuda_device(int) { throw no_cuda("selecting a CUDA device"); }
cuda::Stream current_stream(Device device) {
  if (device.is_cpu()) return nullptr;
  throw no_cuda("the stream of " + device.str());
}
cuda::Stream copy_stream(Device device) { throw no_cuda("the copy stream of " + device.str()); }
void synchronize(Device device) {
  if (!device.is_cpu()) throw no_cuda("waiting for " + device.str());
}
StreamGuard::StreamGuard(Device device, cuda::Stream) : index_(0), previous_(nullptr), had_previous_(false) {
  throw no_cuda("a stream of " + device.str());
}
StreamGuard::~StreamGuard() = default;
Event::Event(bool) { throw no_cuda("a CUDA event"); }
Event::~Event() = default;
Event::Event(Event&& o) noexcept : event_(o.event_) { o.event_ = nullptr; }
Event& Event::operator=(Event&& o) noexcept {
  event_ = o.event_;
  o.event_ = nullptr;
  return *this;
}
void Event::record(cuda::Stream) {}
void Event::wait(cuda::Stream) const {}
bool Event::query() const { return true; }
void Event::synchronize() const {}
float Event::elapsed_ms_since(const Event&) const { return 0; }

#endif

}  // namespace seg
