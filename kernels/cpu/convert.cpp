#include "kernels/cpu/convert.h"

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/thread_pool.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace seg::cpu {

namespace {

constexpr int64_t kGrain = 1 << 16;  // elements per thread slice at least

// ---- scalar: the reference (kernels/common/half.h) ----
void f32_to_f16_scalar(const float* s, f16* d, int64_t n) {
  for (int64_t i = 0; i < n; ++i) d[i] = f16(s[i]);
}
void f16_to_f32_scalar(const f16* s, float* d, int64_t n) {
  for (int64_t i = 0; i < n; ++i) d[i] = static_cast<float>(s[i]);
}
void f32_to_bf16_scalar(const float* s, bf16* d, int64_t n) {
  for (int64_t i = 0; i < n; ++i) d[i] = bf16(s[i]);
}
void bf16_to_f32_scalar(const bf16* s, float* d, int64_t n) {
  for (int64_t i = 0; i < n; ++i) d[i] = static_cast<float>(s[i]);
}

#if defined(__x86_64__)
// ---- AVX2 + F16C (the x86-64-v3 baseline) ----
int64_t f32_to_f16_avx2(const float* s, f16* d, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), _mm256_cvtps_ph(_mm256_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT));
  return i;
}
int64_t f16_to_f32_avx2(const f16* s, float* d, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(d + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i))));
  return i;
}
// bf16 = the float's top half, rounded to nearest even: (x + 0x7FFF + lsb) >> 16; NaN -> 0x7FFF.
int64_t f32_to_bf16_avx2(const float* s, bf16* d, int64_t n) {
  const __m256i bias = _mm256_set1_epi32(0x7FFF), one = _mm256_set1_epi32(1);
  const __m256i abs_mask = _mm256_set1_epi32(0x7FFFFFFF), inf = _mm256_set1_epi32(0x7F800000);
  const __m256i qnan = _mm256_set1_epi32(0x7FFF);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256i r[2];
    for (int h = 0; h < 2; ++h) {
      const __m256i x = _mm256_castps_si256(_mm256_loadu_ps(s + i + 8 * h));
      const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), one);
      const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(x, bias), lsb), 16);
      const __m256i is_nan = _mm256_cmpgt_epi32(_mm256_and_si256(x, abs_mask), inf);
      r[h] = _mm256_blendv_epi8(rounded, qnan, is_nan);
    }
    // packus works per 128-bit lane: reorder the 64-bit quarters afterwards.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r[0], r[1]), 0xD8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), packed);
  }
  return i;
}
int64_t bf16_to_f32_avx2(const bf16* s, float* d, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), _mm256_slli_epi32(h, 16));
  }
  return i;
}

// ---- AVX-512 ----
// GCC 12 reports -Wmaybe-uninitialized inside its own AVX-512 intrinsic headers when they are used
// from a function with a target attribute (the intrinsics' unused mask operand); it is not our code.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
SEG_TARGET_AVX512 int64_t f32_to_f16_avx512(const float* s, f16* d, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), _mm512_cvtps_ph(_mm512_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT));
  return i;
}
SEG_TARGET_AVX512 int64_t f16_to_f32_avx512(const f16* s, float* d, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(d + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i))));
  return i;
}
SEG_TARGET_AVX512 int64_t f32_to_bf16_avx512(const float* s, bf16* d, int64_t n) {
  const __m512i bias = _mm512_set1_epi32(0x7FFF), one = _mm512_set1_epi32(1);
  const __m512i abs_mask = _mm512_set1_epi32(0x7FFFFFFF), inf = _mm512_set1_epi32(0x7F800000);
  const __m512i qnan = _mm512_set1_epi32(0x7FFF);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i x = _mm512_castps_si512(_mm512_loadu_ps(s + i));
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(x, 16), one);
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(x, bias), lsb), 16);
    const __mmask16 is_nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(x, abs_mask), inf);
    r = _mm512_mask_mov_epi32(r, is_nan, qnan);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), _mm512_cvtepi32_epi16(r));
  }
  return i;
}
SEG_TARGET_AVX512 int64_t bf16_to_f32_avx512(const bf16* s, float* d, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i h = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i)));
    _mm512_storeu_si512(d + i, _mm512_slli_epi32(h, 16));
  }
  return i;
}
#pragma GCC diagnostic pop
#endif

// Runs the vector body for the active ISA, then the scalar tail; in parallel slices.
template <class S, class D, class Scalar, class Avx2, class Avx512>
void convert(const S* src, D* dst, int64_t n, Scalar scalar, Avx2 avx2, Avx512 avx512) {
  const CpuIsa isa = cpu_isa();
  parallel_for(0, n, kGrain, [&](int64_t lo, int64_t hi) {
    const S* s = src + lo;
    D* d = dst + lo;
    const int64_t len = hi - lo;
    int64_t done = 0;
#if defined(__x86_64__)
    if (isa == CpuIsa::avx512) done = avx512(s, d, len);
    else if (isa == CpuIsa::avx2) done = avx2(s, d, len);
#else
    (void)avx2; (void)avx512; (void)isa;
#endif
    scalar(s + done, d + done, len - done);
  });
}

}  // namespace

#if defined(__x86_64__)
#define SEG_SIMD_PAIR(name) name##_avx2, name##_avx512
#else
#define SEG_SIMD_PAIR(name) nullptr, nullptr
#endif

void convert_f32_to_f16(const float* src, f16* dst, int64_t n) {
  convert(src, dst, n, f32_to_f16_scalar, SEG_SIMD_PAIR(f32_to_f16));
}
void convert_f16_to_f32(const f16* src, float* dst, int64_t n) {
  convert(src, dst, n, f16_to_f32_scalar, SEG_SIMD_PAIR(f16_to_f32));
}
void convert_f32_to_bf16(const float* src, bf16* dst, int64_t n) {
  convert(src, dst, n, f32_to_bf16_scalar, SEG_SIMD_PAIR(f32_to_bf16));
}
void convert_bf16_to_f32(const bf16* src, float* dst, int64_t n) {
  convert(src, dst, n, bf16_to_f32_scalar, SEG_SIMD_PAIR(bf16_to_f32));
}

}  // namespace seg::cpu
