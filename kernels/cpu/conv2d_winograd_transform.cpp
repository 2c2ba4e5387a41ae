// The Winograd tile transforms for each ISA (see conv2d_winograd_transform.h and, for how one source
// becomes two ISAs, conv2d_winograd_simd.h).
#include "kernels/cpu/conv2d_winograd_transform.h"

#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <utility>

#include "kernels/cpu/conv2d_winograd_matrices.h"
#include "kernels/cpu/cpu_features.h"

namespace seg::cpu::winograd {

namespace {

// One lane: the channels left over after the vectors. std::fma keeps the arithmetic of every lane
// the same fused multiply-add as the vector code.
struct OpsScalar {
  using R = float;
  static constexpr int L = 1;
  static R load(const float* p) { return *p; }
  static void store(float* p, R v) { *p = v; }
  static R add(R a, R b) { return a + b; }
  static R sub(R a, R b) { return a - b; }
  static R mul(R a, float c) { return a * c; }
  static R fmadd(R a, float c, R acc) { return std::fma(a, c, acc); }
};

struct OpsAvx2 {
  using R = __m256;
  static constexpr int L = 8;
  static R load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, R v) { _mm256_storeu_ps(p, v); }
  static R add(R a, R b) { return _mm256_add_ps(a, b); }
  static R sub(R a, R b) { return _mm256_sub_ps(a, b); }
  static R mul(R a, float c) { return _mm256_mul_ps(a, _mm256_set1_ps(c)); }
  static R fmadd(R a, float c, R acc) { return _mm256_fmadd_ps(a, _mm256_set1_ps(c), acc); }
};

}  // namespace

// ------------------------------------------------------------------ baseline (AVX2 + FMA)
#define SEG_WINO_NS wino_avx2
#include "kernels/cpu/conv2d_winograd_simd.h"
#undef SEG_WINO_NS

namespace {

template <class Map>
void tile_avx2(const float* const* src, float* const* dst, int64_t n, const float* bias) {
  const int64_t n8 = n / 8 * 8;
  wino_avx2::tile_range<OpsAvx2, Map>(src, dst, 0, n8, bias);
  wino_avx2::tile_range<OpsScalar, Map>(src, dst, n8, n, bias);
}

}  // namespace

// ------------------------------------------------------------------ AVX-512 (run-time dispatch)
#if defined(__x86_64__)
// GCC: a target region; clang (the fuzz build) ignores `#pragma GCC target` and needs the attribute
// applied to every function of the region instead.
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")
#endif
namespace {
struct OpsAvx512 {
  using R = __m512;
  static constexpr int L = 16;
  static R load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, R v) { _mm512_storeu_ps(p, v); }
  static R add(R a, R b) { return _mm512_add_ps(a, b); }
  static R sub(R a, R b) { return _mm512_sub_ps(a, b); }
  static R mul(R a, float c) { return _mm512_mul_ps(a, _mm512_set1_ps(c)); }
  static R fmadd(R a, float c, R acc) { return _mm512_fmadd_ps(a, _mm512_set1_ps(c), acc); }
};
}  // namespace

#define SEG_WINO_NS wino_avx512
#include "kernels/cpu/conv2d_winograd_simd.h"
#undef SEG_WINO_NS

namespace {
template <class Map>
void tile_avx512_body(const float* const* src, float* const* dst, int64_t n16, const float* bias) {
  wino_avx512::tile_range<OpsAvx512, Map>(src, dst, 0, n16, bias);
}
}  // namespace
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#endif

namespace {

template <class Map>
void tile_avx512(const float* const* src, float* const* dst, int64_t n, const float* bias) {
  const int64_t n16 = n / 16 * 16;
#if defined(__x86_64__)
  tile_avx512_body<Map>(src, dst, n16, bias);
#endif
  // the rest in AVX2 and scalar: shift the channel origin by n16 (pointers are per tile element)
  if (n16 == n) return;
  constexpr int kMax = 64;  // alpha^2 of F(6,3)
  const float* s[kMax];
  float* d[kMax];
  for (int k = 0; k < Map::cols * Map::cols; ++k) s[k] = src[k] + n16;
  for (int k = 0; k < Map::rows * Map::rows; ++k) d[k] = dst[k] + n16;
  tile_avx2<Map>(s, d, n - n16, bias ? bias + n16 : nullptr);
}

template <int M>
TileFn pick(Transform kind, bool avx512) {
  switch (kind) {
    case Transform::input: return avx512 ? tile_avx512<InputMap<M>> : tile_avx2<InputMap<M>>;
    case Transform::weight: return avx512 ? tile_avx512<WeightMap<M>> : tile_avx2<WeightMap<M>>;
    case Transform::output: return avx512 ? tile_avx512<OutputMap<M>> : tile_avx2<OutputMap<M>>;
    case Transform::out_grad: return avx512 ? tile_avx512<OutputGradMap<M>> : tile_avx2<OutputGradMap<M>>;
    case Transform::weight_grad: return avx512 ? tile_avx512<WeightGradMap<M>> : tile_avx2<WeightGradMap<M>>;
  }
  return nullptr;
}

}  // namespace

TileFn tile_transform(int m, Transform kind) {
  const bool avx512 = cpu_isa() == CpuIsa::avx512;
  switch (m) {
    case 2: return pick<2>(kind, avx512);
    case 4: return pick<4>(kind, avx512);
    case 6: return pick<6>(kind, avx512);
    default: return nullptr;
  }
}

}  // namespace seg::cpu::winograd
