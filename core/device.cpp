#include "core/device.h"

#include <cctype>
#include <cstdio>

#include "core/error.h"

#ifdef SEG_WITH_CUDA
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>

#include "core/stream.h"
#endif

namespace seg {

std::string Device::str() const { return is_cpu() ? "cpu" : "cuda:" + std::to_string(index); }

Device Device::parse(const std::string& text) {
  if (text == "cpu") return cpu();
  auto parse_index = [&](size_t pos) -> int {
    if (pos < text.size() && text[pos] == ':') ++pos;
    if (pos == text.size()) return 0;
    int value = 0;
    for (size_t i = pos; i < text.size(); ++i) {
      if (!std::isdigit(static_cast<unsigned char>(text[i])) || value > 100000)
        SEG_FAIL(usage, "bad device '", text, "'").hint("use cpu, cuda, cuda:N or gpuN");
      value = value * 10 + (text[i] - '0');
    }
    return value;
  };
  if (text.rfind("cuda", 0) == 0) return cuda(parse_index(4));
  if (text.rfind("gpu", 0) == 0) return cuda(parse_index(3));
  SEG_FAIL(usage, "bad device '", text, "'").hint("use cpu, cuda, cuda:N or gpuN");
}

bool cuda_compiled() {
#ifdef SEG_WITH_CUDA
  return true;
#else
  return false;
#endif
}

bool cuda_simulated() {
#ifdef SEG_SIMULATED_GPU
  return true;
#else
  return false;
#endif
}

std::string cuda_version_string(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

#ifdef SEG_WITH_CUDA
static_assert(kCudaErrorInsufficientDriver == cudaErrorInsufficientDriver && kCudaErrorNoDevice == cudaErrorNoDevice &&
                  kCudaErrorSystemDriverMismatch == cudaErrorSystemDriverMismatch,
              "core/device.h's copies of the cudaError_t values diagnose_cuda tells apart");
#endif

CudaDiagnosis diagnose_cuda(const CudaAnswers& a) {
  CudaDiagnosis d;
  const std::string check_gpu = "check nvidia-smi and CUDA_VISIBLE_DEVICES, or use --device cpu";
  auto set = [&](CudaAvailability availability, std::string message, std::string hint) {
    d.availability = availability;
    d.message = std::move(message);
    d.hint = std::move(hint);
    return d;
  };
  const int count_error = a.count_error;
  if (!a.compiled)
    return set(CudaAvailability::not_compiled, "this segtrain was built without CUDA",
               "rebuild with SEG_CUDA=ON tools/build.sh on a machine with a GPU, or use --device cpu");
  if (count_error == kCudaErrorInsufficientDriver && a.driver_version == 0)
    // Without any NVIDIA driver (no libcuda) the runtime answers "insufficient driver" too, with
    // driver version 0: say what it means instead of "CUDA 0.0".
    return set(CudaAvailability::no_driver, "no CUDA GPU found (no NVIDIA driver is installed)",
               "install the NVIDIA driver (nvidia-smi must list the GPU), or use --device cpu");
  if (count_error == kCudaErrorInsufficientDriver)
    return set(CudaAvailability::driver_too_old,
               "the NVIDIA driver supports CUDA " + cuda_version_string(a.driver_version) + ", older than the CUDA " +
                   cuda_version_string(a.runtime_version) + " this segtrain was built with",
               "update the NVIDIA driver (nvidia-smi shows the CUDA version it supports), or rebuild segtrain with a "
               "CUDA toolkit that driver supports");
  if (count_error == kCudaErrorSystemDriverMismatch)
    return set(CudaAvailability::driver_mismatch,
               "the NVIDIA kernel driver and its CUDA library (libcuda) are different versions "
               "(cudaErrorSystemDriverMismatch)",
               "reboot after a driver update, or reinstall the driver so that both parts match");
  if (count_error == kCudaErrorNoDevice) return set(CudaAvailability::no_device, "no CUDA GPU found (cudaErrorNoDevice)", check_gpu);
  if (count_error != 0)
    return set(CudaAvailability::runtime_error,
               "the CUDA runtime reports " + (a.error_name.empty() ? "error " + std::to_string(count_error) : a.error_name) +
                   (a.error_text.empty() ? "" : ": " + a.error_text),
               check_gpu);
  if (a.devices <= 0) return set(CudaAvailability::no_device, "no CUDA GPU found", check_gpu);
  return d;
}

CudaProbe probe_cuda() {
  CudaProbe p;
  p.compiled = cuda_compiled();
  p.simulated = cuda_simulated();
#ifdef SEG_WITH_CUDA
  p.runtime_version = CUDART_VERSION;
#ifdef SEG_SIMULATED_GPU
  p.driver_version = CUDART_VERSION;  // the simulator is its own driver
#else
  if (cudaDriverGetVersion(&p.driver_version) != cudaSuccess) {
    (void)cudaGetLastError();
    p.driver_version = 0;
  }
#endif
  const cudaError_t err = cudaGetDeviceCount(&p.devices);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    p.devices = 0;
  }
  CudaAnswers answers;
  answers.count_error = static_cast<int>(err);
  answers.devices = p.devices;
  answers.driver_version = p.driver_version;
  answers.runtime_version = p.runtime_version;
  if (err != cudaSuccess) answers.error_name = cudaGetErrorName(err), answers.error_text = cudaGetErrorString(err);
  const CudaDiagnosis d = diagnose_cuda(answers);
  p.availability = d.availability;
  p.error = d.message;
  p.hint = d.hint;
  for (int i = 0; i < p.devices; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) {
      (void)cudaGetLastError();
      p.names.push_back("?");
      continue;
    }
    char mem[32];
    std::snprintf(mem, sizeof mem, "%.1f GiB", static_cast<double>(prop.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0));
    p.names.push_back(std::string(prop.name) + " (sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + ", " +
                      mem + ")");
  }
#else
  CudaAnswers answers;
  answers.compiled = false;
  const CudaDiagnosis d = diagnose_cuda(answers);
  p.availability = d.availability;
  p.error = d.message;
  p.hint = d.hint;
#endif
  return p;
}

void require_device(Device device) {
  if (device.is_cpu()) return;
  const CudaProbe p = probe_cuda();
  if (p.availability != CudaAvailability::usable)
    throw Error(ErrorKind::device, "GPU " + device.str() + " requested, but " + p.error).hint(p.hint);
  if (device.index >= p.devices)
    throw Error(ErrorKind::device, "GPU " + device.str() + " requested, but " + std::to_string(p.devices) +
                                       " CUDA device(s) found")
        .hint("check nvidia-smi and CUDA_VISIBLE_DEVICES, or use --device cpu");
}

void cuda_profiler_start(Device device) {
  SEG_CHECK(device.is_cuda(), usage, "cudaProfilerStart on ", device.str(), ": the CUDA profiler API needs a CUDA device");
#ifdef SEG_WITH_CUDA
  set_current_cuda_device(device.index);
  check_cuda(cudaProfilerStart(), "cudaProfilerStart on " + device.str());
#else
  throw Error(ErrorKind::device, "cudaProfilerStart on " + device.str() + ": this segtrain was built without CUDA");
#endif
}

void cuda_profiler_stop(Device device) {
  SEG_CHECK(device.is_cuda(), usage, "cudaProfilerStop on ", device.str(), ": the CUDA profiler API needs a CUDA device");
#ifdef SEG_WITH_CUDA
  set_current_cuda_device(device.index);
  // Every stream (compute, copies, communication): a kernel still queued at the stop would be cut
  // out of an Nsight Systems capture.
  check_cuda(cudaDeviceSynchronize(), "waiting for " + device.str() + " before cudaProfilerStop");
  check_cuda(cudaProfilerStop(), "cudaProfilerStop on " + device.str());
#else
  throw Error(ErrorKind::device, "cudaProfilerStop on " + device.str() + ": this segtrain was built without CUDA");
#endif
}

int cuda_device_count() {
#ifdef SEG_WITH_CUDA
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky "no device" error
    return 0;
  }
  return n;
#else
  return 0;
#endif
}

}  // namespace seg
