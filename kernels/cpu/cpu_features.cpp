#include "kernels/cpu/cpu_features.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace seg {

namespace {
#if defined(__x86_64__)
// F16C (CPUID leaf 1, ECX bit 29): clang before 15 does not know the "f16c" builtin string (the
// fuzz build uses Debian's clang 14), so ask CPUID directly there.
bool has_f16c() {
#if defined(__clang__) && __clang_major__ < 15
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29)) != 0;
#else
  return __builtin_cpu_supports("f16c");
#endif
}
#endif

CpuIsa detect() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
    return CpuIsa::avx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c())
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
