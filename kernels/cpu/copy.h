// Strided copy with element conversion: dst[i] = convert<D>(src[i]) over an N-d index space.
//
// Used for contiguous(), to(dtype), copy_() between views (channel slices of a concat buffer) and
// fill. Dimensions that are contiguous in both tensors are merged first, so a copy between two
// channel slices becomes "rows of C elements" and a fully contiguous copy becomes one flat loop
// (memcpy when the types match, the SIMD converters of convert.h for float <-> f16/bf16).
// Memory traffic: numel * (sizeof(S) + sizeof(D)).
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/common/copy_layout.h"
#include "kernels/common/half.h"
#include "kernels/cpu/convert.h"
#include "kernels/cpu/thread_pool.h"

namespace seg::cpu {

using ::seg::CopyLayout;  // kernels/common/copy_layout.h (with coalesce())
using ::seg::kMaxCopyDims;
using ::seg::coalesce;


template <class T> struct is_half16 : std::false_type {};
template <> struct is_half16<f16> : std::true_type {};
template <> struct is_half16<bf16> : std::true_type {};

// Value conversion through float for the 16-bit types, a plain cast otherwise.
template <class D, class S>
inline D convert_value(S v) {
  if constexpr (std::is_same_v<D, S>) {
    return v;
  } else if constexpr (is_half16<D>::value) {
    return D(static_cast<float>(v));
  } else if constexpr (is_half16<S>::value) {
    return static_cast<D>(static_cast<float>(v));
  } else {
    return static_cast<D>(v);
  }
}

// Contiguous run of n elements.
template <class S, class D>
inline void convert_run(const S* src, D* dst, int64_t n) {
  if constexpr (std::is_same_v<S, D>) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(S));
  } else if constexpr (std::is_same_v<S, float> && std::is_same_v<D, f16>) {
    convert_f32_to_f16(src, dst, n);
  } else if constexpr (std::is_same_v<S, f16> && std::is_same_v<D, float>) {
    convert_f16_to_f32(src, dst, n);
  } else if constexpr (std::is_same_v<S, float> && std::is_same_v<D, bf16>) {
    convert_f32_to_bf16(src, dst, n);
  } else if constexpr (std::is_same_v<S, bf16> && std::is_same_v<D, float>) {
    convert_bf16_to_f32(src, dst, n);
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = convert_value<D>(src[i]);
  }
}

template <class S, class D>
void copy_strided(const S* src, D* dst, const CopyLayout& layout_in) {
  const CopyLayout L = coalesce(layout_in);
  if (L.ndim == 0) {
    dst[0] = convert_value<D>(src[0]);
    return;
  }
  const int inner = L.ndim - 1;
  const int64_t inner_n = L.shape[inner];
  if (L.ndim == 1 && L.src_stride[0] == 1 && L.dst_stride[0] == 1) {
    // One flat run: convert_run parallelises the 16-bit conversions itself; split memcpy/casts here.
    if constexpr (std::is_same_v<S, D> || !((std::is_same_v<S, float> || std::is_same_v<D, float>) &&
                                            (is_half16<S>::value || is_half16<D>::value))) {
      parallel_for(0, inner_n, 1 << 16, [&](int64_t lo, int64_t hi) { convert_run(src + lo, dst + lo, hi - lo); });
    } else {
      convert_run(src, dst, inner_n);
    }
    return;
  }
  int64_t outer_n = 1;
  for (int d = 0; d < inner; ++d) outer_n *= L.shape[d];
  const bool unit = L.src_stride[inner] == 1 && L.dst_stride[inner] == 1;
  const int64_t grain = inner_n >= (1 << 14) ? 1 : (1 << 14) / inner_n + 1;
  parallel_for(0, outer_n, grain, [&](int64_t lo, int64_t hi) {
    for (int64_t o = lo; o < hi; ++o) {
      // Offsets of outer index o (row-major over the outer dims).
      int64_t rem = o, so = 0, dof = 0;
      for (int d = inner - 1; d >= 0; --d) {
        const int64_t idx = rem % L.shape[d];
        rem /= L.shape[d];
        so += idx * L.src_stride[d];
        dof += idx * L.dst_stride[d];
      }
      if (unit) {
        if constexpr (std::is_same_v<S, D>) {
          std::memcpy(dst + dof, src + so, static_cast<size_t>(inner_n) * sizeof(S));
        } else {
          for (int64_t i = 0; i < inner_n; ++i) dst[dof + i] = convert_value<D>(src[so + i]);
        }
      } else {
        const int64_t ss = L.src_stride[inner], ds = L.dst_stride[inner];
        for (int64_t i = 0; i < inner_n; ++i) dst[dof + i * ds] = convert_value<D>(src[so + i * ss]);
      }
    }
  });
}

// dst[i] = value over a strided index space.
template <class D>
void fill_strided(D* dst, const CopyLayout& layout_in, D value) {
  CopyLayout layout = layout_in;
  for (int d = 0; d < layout.ndim; ++d) layout.src_stride[d] = 0;
  // Reuse copy_strided with a zero-stride source: every element reads the one value.
  copy_strided<D, D>(&value, dst, layout);
}

}  // namespace seg::cpu
