// Bilinear resize (align_corners=False, PyTorch's and upstream's) shared by the CPU and CUDA kernels.
//
//   x [N, H, W, C] -> y [N, Ho, Wo, C]
//   source coordinate of output index i: src = (in/out) * (i + 0.5) - 0.5, clamped below at 0;
//   i0 = min(floor(src), in-1), i1 = min(i0+1, in-1), weights l0 = 1 - (src - i0), l1 = src - i0.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/common/hostdevice.h"

namespace seg {

struct ResizeShape {
  int64_t N = 1, H = 1, W = 1, C = 1, Ho = 1, Wo = 1;
};

// The two input taps of one output index along one axis and their weights.
template <class A> struct LinearTap {
  int64_t i0, i1;
  A l0, l1;
};

template <class A>
SEG_HD_INLINE LinearTap<A> bilinear_tap(int64_t out_index, int64_t in_size, int64_t out_size) {
  const A scale = static_cast<A>(in_size) / static_cast<A>(out_size);
  // One fused multiply-add (rounded once), spelled out: g++ contracts scale * (i + 0.5) - 0.5 into
  // exactly this under -march=x86-64-v3, and the CUDA twin (kernels/cuda/resize.cu, tap_of) must
  // round at the same place (kernels/cuda/storage_access.cuh).
  A src = std::fma(scale, static_cast<A>(out_index) + A(0.5), A(-0.5));
  if (src < 0) src = 0;
  int64_t i0 = static_cast<int64_t>(src);
  if (i0 > in_size - 1) i0 = in_size - 1;
  const int64_t i1 = i0 < in_size - 1 ? i0 + 1 : i0;
  const A l1 = src - static_cast<A>(i0);
  return LinearTap<A>{i0, i1, A(1) - l1, l1};
}

}  // namespace seg
