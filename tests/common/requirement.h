// Test cases that need something this machine may lack (AVX-512, the CUDA toolkit's headers) are
// reported as skipped where it is missing, never folded into a pass.
//
//   SEG_TEST_REQUIREMENT(avx512, [] { return seg::cpu_isa_available() >= seg::CpuIsa::avx512 ? "" : "no AVX-512"; });
//   TEST_CASE("gemm: the AVX-512 micro-kernels" * SEG_REQUIRES(avx512)) { ... }
//
// SEG_REQUIRES(name) puts the case into the doctest suite "requires:name". cmake/SegTest.cmake finds
// it in the sources and makes it a CTest test of its own, <exe>_<name>, which runs
// `<exe> --test-suite=requires:name --seg-require=name` (the main test excludes "requires:*").
// tests/test_main.cpp evaluates the requirement first: when it is not met it prints
// "SKIPPED (<name>): <reason>" and exits 77, which CTest reports as Skipped (and counts in the
// label summary). The requirement is the function registered under that name: a non-empty string
// says why it is not met.
#pragma once

#include <doctest/doctest.h>

#include <string>

namespace seg::test {

using RequirementCheck = std::string (*)();
// Registers `check` under `name` (defined in tests/test_main.cpp); returns true for static initialisers.
bool register_requirement(const char* name, RequirementCheck check);

}  // namespace seg::test

#define SEG_REQUIRES(name) doctest::test_suite("requires:" #name)
#define SEG_TEST_REQUIREMENT(name, ...)                                                      \
  static const bool seg_test_requirement_##name [[maybe_unused]] =                          \
      ::seg::test::register_requirement(#name, +[]() -> std::string { return (__VA_ARGS__)(); })
