#include "core/device.h"

#include <cctype>
#include <cstdio>

#include "core/error.h"

#ifdef SEG_WITH_CUDA
#include <cuda_runtime.h>
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
    // Without any NVIDIA driver (no libcuda: a machine without a GPU) the runtime also answers
    // "insufficient driver", with driver version 0; say what it means instead of "CUDA 0.0".
    if (err == cudaErrorInsufficientDriver && p.driver_version == 0)
      p.error = "no CUDA GPU found (no NVIDIA driver is installed)";
    else if (err == cudaErrorInsufficientDriver)
      p.error = "the NVIDIA driver supports CUDA " + cuda_version_string(p.driver_version) +
                ", older than the CUDA " + cuda_version_string(p.runtime_version) + " this segtrain was built with";
    else if (err == cudaErrorNoDevice)
      p.error = "no CUDA GPU found (cudaErrorNoDevice)";
    else
      p.error = std::string("the CUDA runtime reports ") + cudaGetErrorName(err) + ": " + cudaGetErrorString(err);
  } else if (p.devices == 0) {
    p.error = "no CUDA GPU found";
  }
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
  p.error = "this segtrain was built without CUDA";
#endif
  return p;
}

void require_device(Device device) {
  if (device.is_cpu()) return;
  if (!cuda_compiled())
    throw Error(ErrorKind::device, "GPU " + device.str() + " requested, but this segtrain was built without CUDA")
        .hint("rebuild with SEG_CUDA=ON tools/build.sh on a machine with a GPU, or use --device cpu");
  const CudaProbe p = probe_cuda();
  if (p.devices == 0) {
    Error e(ErrorKind::device, "GPU " + device.str() + " requested, but " + p.error);
    if (p.error.find("older than") != std::string::npos)
      e.hint("update the NVIDIA driver (nvidia-smi shows the CUDA version it supports), or rebuild segtrain with a "
             "CUDA toolkit that driver supports");
    else
      e.hint("check nvidia-smi and CUDA_VISIBLE_DEVICES, or use --device cpu");
    throw e;
  }
  if (device.index >= p.devices)
    throw Error(ErrorKind::device, "GPU " + device.str() + " requested, but " + std::to_string(p.devices) +
                                       " CUDA device(s) found")
        .hint("check nvidia-smi and CUDA_VISIBLE_DEVICES, or use --device cpu");
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
