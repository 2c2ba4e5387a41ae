// Test cases for one SIMD path of the CPU kernels (kernels/cpu/cpu_features.h).
//
//   TEST_CASE("gemm: AVX-512 micro-kernels" * SEG_REQUIRES(avx512)) {
//     seg::test::ScopedCpuIsa isa(seg::CpuIsa::avx512);
//     ...
//   }
//
// The requirements avx2 and avx512 hold when cpu_isa_available() reaches that ISA: where the CPU
// lacks it, or SEG_CPU_ISA caps the process below it, the case's CTest test (<exe>_avx512) is
// reported as skipped (tests/common/requirement.h), never as passed.
#pragma once

#include <doctest/doctest.h>

#include <string>

#include "kernels/cpu/cpu_features.h"
#include "tests/common/requirement.h"

namespace seg::test {

inline std::string isa_missing(CpuIsa isa) {
  if (cpu_isa_available() >= isa) return "";
  std::string why = std::string("needs ") + cpu_isa_name(isa) + ": this CPU has " + cpu_isa_name(cpu_isa_detected());
  if (cpu_isa_available() < cpu_isa_detected()) why += std::string(", capped to ") + cpu_isa_name(cpu_isa_available()) + " by SEG_CPU_ISA";
  return why;
}

// Selects `isa` for a scope (REQUIREs that it is available: a case must not test another path than
// it names) and restores the previous choice.
class ScopedCpuIsa {
 public:
  explicit ScopedCpuIsa(CpuIsa isa) : saved_(cpu_isa()) {
    REQUIRE_MESSAGE(cpu_isa_available() >= isa, isa_missing(isa));
    set_cpu_isa(isa);
  }
  ~ScopedCpuIsa() { set_cpu_isa(saved_); }
  ScopedCpuIsa(const ScopedCpuIsa&) = delete;
  ScopedCpuIsa& operator=(const ScopedCpuIsa&) = delete;

 private:
  CpuIsa saved_;
};

}  // namespace seg::test

SEG_TEST_REQUIREMENT(avx2, [] { return ::seg::test::isa_missing(::seg::CpuIsa::avx2); });
SEG_TEST_REQUIREMENT(avx512, [] { return ::seg::test::isa_missing(::seg::CpuIsa::avx512); });
