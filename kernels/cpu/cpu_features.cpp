#include "kernels/cpu/cpu_features.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace seg {

namespace {
CpuIsa detect() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
    return CpuIsa::avx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c"))
    return CpuIsa::avx2;
#endif
  return CpuIsa::scalar;
}

CpuIsa available() {
  CpuIsa isa = detect();
  if (const char* env = std::getenv("SEG_CPU_ISA")) {
    CpuIsa want = isa;
    if (!std::strcmp(env, "scalar")) want = CpuIsa::scalar;
    else if (!std::strcmp(env, "avx2")) want = CpuIsa::avx2;
    else if (!std::strcmp(env, "avx512")) want = CpuIsa::avx512;
    if (want < isa) isa = want;
  }
  return isa;
}

std::atomic<int>& active() {
  static std::atomic<int> isa{static_cast<int>(cpu_isa_available())};
  return isa;
}
}  // namespace

CpuIsa cpu_isa_detected() {
  static const CpuIsa isa = detect();
  return isa;
}

CpuIsa cpu_isa_available() {
  static const CpuIsa isa = available();
  return isa;
}

CpuIsa cpu_isa() { return static_cast<CpuIsa>(active().load(std::memory_order_relaxed)); }

void set_cpu_isa(CpuIsa isa) {
  if (isa > cpu_isa_available()) isa = cpu_isa_available();
  active().store(static_cast<int>(isa), std::memory_order_relaxed);
}

const char* cpu_isa_name(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::scalar: return "scalar";
    case CpuIsa::avx2: return "avx2";
    case CpuIsa::avx512: return "avx512";
  }
  return "?";
}

}  // namespace seg
