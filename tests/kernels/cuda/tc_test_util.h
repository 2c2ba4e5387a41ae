// Helpers of the tensor-core suites (test_gemm_tc.cpp, test_conv_tc.cpp, test_gemm_tc_planted.cpp):
// inputs rounded to the storage type, the double-precision reference GEMM, and the tolerance rule.
//
// Two kinds of input:
//   integer-valued (small integers in [-lo, hi]): every product and every partial sum is an
//   integer far below 2^24, so the tensor cores' f32 sums are exact and the result, rounded once to
//   the output type, equals the reference rounded the same way: compared with tolerance 0;
//   real-valued (uniform in [-1, 1), rounded to the input type): the reference is exact in double
//   on the same rounded inputs; the kernel's only error is f32 accumulation, bounded by
//   gamma_K * sum_k |a_mk * b_kn| with gamma_K = K * 2^-24 (Higham, standard summation bound), plus
//   the output type's rounding (half an ulp: rtol 2^-11 for f16, 2^-8 for bf16).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/common/half.h"
#include "tests/common/compare.h"
#include "tests/kernels/cuda/cuda_test_util.h"

namespace seg::test {

// Under ASan/UBSan and TSan (CI runs this suite in both) the simulator is 4x-30x slower: the
// suites then keep every kind of case but fewer repetitions (one tile, one schedule where the
// default build sweeps several). The default build runs everything.
#ifdef SEG_SANITIZE_BUILD
constexpr bool kSanitizerBuild = true;
#else
constexpr bool kSanitizerBuild = false;
#endif

// The sweep of most tensor-core cases: round-robin and the two random schedules (seeds 1 and 2) of
// cuda_configs(); round-robin alone under the sanitizers (kSanitizerBuild), and the one real device
// on a GPU. The cases that sweep every configuration (reverse, two workers too) say so.
inline std::vector<CudaConfig> rr_and_random() {
  std::vector<CudaConfig> out;
  for (const CudaConfig& c : cuda_configs()) {
#ifndef SEG_TEST_ON_GPU
    const bool wanted = c.options.workers == 1 && (c.options.schedule == sim::Schedule::round_robin ||
                                                   c.options.schedule == sim::Schedule::random);
#else
    const bool wanted = true;
#endif
    if (wanted && (out.empty() || !kSanitizerBuild)) out.push_back(c);
  }
  return out;
}

template <class T>
T to_storage(float v) {
  if constexpr (std::is_same_v<T, float>) return v;
  else return T(v);
}

// Rounds to the nearest TF32 value (10 mantissa bits, ties away from zero: cvt.rna.tf32.f32),
// what the kernels do to float inputs before the tensor cores see them.
inline float round_tf32(float x) {
  if (!std::isfinite(x)) return x;
  uint32_t u;
  std::memcpy(&u, &x, 4);
  u = (u + 0x1000u) & 0xFFFFE000u;
  std::memcpy(&x, &u, 4);
  return x;
}

// n values of T: small integers in [lo, hi] when integer, else uniform in [-1, 1) rounded to T.
template <class T>
std::vector<T> tc_inputs(size_t n, uint64_t seed, bool integer, int lo = -3, int hi = 3) {
  const std::vector<float> r = random_floats(n, seed, 0.0f, 1.0f);
  std::vector<T> v(n);
  for (size_t i = 0; i < n; ++i) {
    const float x = integer ? std::floor(static_cast<float>(lo) + r[i] * static_cast<float>(hi - lo + 1))
                            : 2.0f * r[i] - 1.0f;
    v[i] = to_storage<T>(x);
  }
  return v;
}

// The value the tensor cores multiply (TF32-rounded for float inputs).
template <class T>
double tc_value(T v) {
  if constexpr (std::is_same_v<T, float>) return round_tf32(v);
  else return static_cast<float>(v);
}

// op(A)[m,k] * op(B)[k,n] in double, and sum |a||b| for the tolerance.
template <class T>
void reference_gemm(bool ta, bool tb, int M, int N, int K, const std::vector<T>& A, int64_t lda,
                    const std::vector<T>& B, int64_t ldb, std::vector<double>& out, std::vector<double>& abs_sum) {
  out.assign(static_cast<size_t>(M) * N, 0.0);
  abs_sum.assign(static_cast<size_t>(M) * N, 0.0);
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double s = 0, a = 0;
      for (int k = 0; k < K; ++k) {
        const double x = tc_value(ta ? A[static_cast<size_t>(k) * lda + m] : A[static_cast<size_t>(m) * lda + k]);
        const double y = tc_value(tb ? B[static_cast<size_t>(n) * ldb + k] : B[static_cast<size_t>(k) * ldb + n]);
        s += x * y;
        a += std::abs(x * y);
      }
      out[static_cast<size_t>(m) * N + n] = s;
      abs_sum[static_cast<size_t>(m) * N + n] = a;
    }
}

// Rounds the reference to the output type, as the kernel's last step does.
template <class TOut>
double round_to(double v) {
  if constexpr (std::is_same_v<TOut, float>) return static_cast<double>(static_cast<float>(v));
  else return static_cast<double>(static_cast<float>(TOut(static_cast<float>(v))));
}

template <class TOut>
double output_rtol() {
  if constexpr (std::is_same_v<TOut, seg::f16>) return std::ldexp(1.0, -11);
  else if constexpr (std::is_same_v<TOut, seg::bf16>) return std::ldexp(1.0, -8);
  else return 0.0;
}

// Tolerance for real-valued inputs: gamma_K * max sum|a||b| (+ the output rounding); 0 for integers.
template <class TOut>
Tolerance tc_tolerance(bool integer, int K, const std::vector<double>& abs_sum) {
  if (integer) return {0, 0};
  double worst = 0;
  for (double a : abs_sum) worst = std::max(worst, a);
  // f32 accumulation (gamma_K), plus one f32 rounding of the result and of the epilogue's alpha/beta.
  // f16 results below 2^-14 are subnormal: their rounding error is up to 2^-25 absolute.
  const double subnormal = std::is_same_v<TOut, seg::f16> ? std::ldexp(1.0, -25) : 0.0;
  return {(K + 4) * std::ldexp(1.0, -24) * worst + subnormal, output_rtol<TOut>() + std::ldexp(1.0, -22)};
}

}  // namespace seg::test
