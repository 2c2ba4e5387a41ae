// Where a tensor lives: the CPU or one CUDA GPU (DESIGN decision 2).
#pragma once

#include <string>
#include <vector>

namespace seg {

enum class DeviceKind : unsigned char { cpu, cuda };

struct Device {
  DeviceKind kind = DeviceKind::cpu;
  int index = 0;  // GPU ordinal; always 0 for the CPU

  static Device cpu() { return Device{DeviceKind::cpu, 0}; }
  static Device cuda(int i = 0) { return Device{DeviceKind::cuda, i}; }
  // "cpu", "cuda", "cuda:1", "gpu1", "gpu:1"; Error(usage) for anything else.
  static Device parse(const std::string& text);

  bool is_cpu() const { return kind == DeviceKind::cpu; }
  bool is_cuda() const { return kind == DeviceKind::cuda; }
  std::string str() const;  // "cpu" or "cuda:N"
  bool operator==(const Device& o) const { return kind == o.kind && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
};

// Number of CUDA devices usable by this build: 0 when built without CUDA or when no GPU is present.
int cuda_device_count();
// Whether this binary was built with the CUDA backend.
bool cuda_compiled();
// Whether its CUDA devices are the simulator's (the test-only variants; never the shipped segtrain).
bool cuda_simulated();

// Why there is, or is not, a usable CUDA GPU: decided by diagnose_cuda from what the runtime answered.
enum class CudaAvailability {
  usable,          // at least one device
  not_compiled,    // this segtrain was built without CUDA
  no_driver,       // no NVIDIA driver at all (libcuda missing: a machine without a GPU)
  driver_too_old,  // the driver supports an older CUDA than the toolkit segtrain was built with
  driver_mismatch, // the kernel module and libcuda differ (a driver update without a reboot)
  no_device,       // a driver, but no GPU visible (none installed, or CUDA_VISIBLE_DEVICES hides them)
  runtime_error,   // anything else the runtime reports, named as it names it
};
struct CudaDiagnosis {
  CudaAvailability availability = CudaAvailability::usable;
  std::string message;  // why there is no usable device ("" when usable), completes "GPU cuda:0 requested, but ..."
  std::string hint;     // what to do ("" when usable)
};
// The values of cudaError_t that diagnose_cuda tells apart (checked against cuda_runtime.h in CUDA
// builds), so the decision compiles and is tested without the CUDA headers.
inline constexpr int kCudaErrorInsufficientDriver = 35;
inline constexpr int kCudaErrorNoDevice = 100;
inline constexpr int kCudaErrorSystemDriverMismatch = 803;
// What the CUDA runtime answered (or, for `compiled`, the build).
struct CudaAnswers {
  bool compiled = true;     // built with CUDA
  int count_error = 0;      // cudaGetDeviceCount's cudaError_t (0 = cudaSuccess)
  int devices = 0;          // the count it gave
  int driver_version = 0;   // cudaDriverGetVersion's (0: no driver)
  int runtime_version = 0;  // CUDART_VERSION
  std::string error_name, error_text;  // cudaGetErrorName/String of count_error (for errors not told apart)
};
// A pure function of those answers (the same answers, the same words): probe_cuda and
// require_device use it, and tests/core/test_device_diagnosis.cpp covers every case without a GPU.
CudaDiagnosis diagnose_cuda(const CudaAnswers& answers);

// What the CUDA runtime says about this machine, for clear errors and `segtrain info`.
struct CudaProbe {
  bool compiled = false;     // built with CUDA
  bool simulated = false;    // the simulator's devices (tests)
  int devices = 0;
  int runtime_version = 0;   // e.g. 13000 for CUDA 13.0 (the toolkit segtrain was built with)
  int driver_version = 0;    // the newest CUDA the installed driver supports (0: no driver)
  std::string error;         // why there is no usable device ("" when devices > 0): diagnose_cuda's message
  std::string hint;          // what to do about it (diagnose_cuda's hint)
  CudaAvailability availability = CudaAvailability::not_compiled;
  std::vector<std::string> names;  // "NVIDIA H200 (sm_90, 139.8 GiB)"
};
CudaProbe probe_cuda();
// "13.0" for 13000.
std::string cuda_version_string(int version);
// A CUDA profiler's capture range: cudaProfilerStart / cudaProfilerStop on `device` (`nsys profile
// --capture-range=cudaProfilerApi`, `ncu --profile-from-start off`; segtrain train/bench
// --profile-steps). Without a profiler attached they do nothing. The stop first waits for every
// stream of the device, so the capture holds all the work queued inside the range. Error(device)
// naming the call when the runtime refuses; Error(device) "built without CUDA" in a CPU build.
void cuda_profiler_start(Device device);
void cuda_profiler_stop(Device device);

// Throws Error(device) (exit 4) with what to do unless `device` is usable: a CUDA build, a driver at
// least as new as the toolkit, a GPU with that index.
void require_device(Device device);

}  // namespace seg
