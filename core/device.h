// Where a tensor lives: the CPU or one CUDA GPU (DESIGN decision 2).
#pragma once

#include <string>

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

}  // namespace seg
