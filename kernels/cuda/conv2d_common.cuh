// Device-side pieces every convolution path shares: the shape as 32-bit integers (kernels index with
// int, kernel_util.cuh) and the checks that make that safe. Included by the conv2d_*.cu files only.
#pragma once

#include "kernels/cuda/conv2d.h"
#include "kernels/cuda/kernel_util.cuh"

namespace seg::cuda::detail {

struct ConvDims {
  int N, H, W, C, O, KH, KW, sh, sw, ph, pw, dh, dw, groups, Ho, Wo, Cg, Og;
};

// Refuses shapes the int indexing cannot hold (every tensor and every im2col extent < 2^31).
inline ConvDims conv_dims(const ConvShape& s, const char* what) {
  require_int32(s.x_numel(), what);
  require_int32(s.y_numel(), what);
  require_int32(s.w_numel() + s.O, what);
  require_int32(s.N * s.H * s.W * s.KH * s.KW, what);
  return ConvDims{static_cast<int>(s.N),        static_cast<int>(s.H),        static_cast<int>(s.W),
                  static_cast<int>(s.C),        static_cast<int>(s.O),        static_cast<int>(s.KH),
                  static_cast<int>(s.KW),       static_cast<int>(s.stride_h), static_cast<int>(s.stride_w),
                  static_cast<int>(s.pad_h),    static_cast<int>(s.pad_w),    static_cast<int>(s.dil_h),
                  static_cast<int>(s.dil_w),    static_cast<int>(s.groups),   static_cast<int>(s.Ho()),
                  static_cast<int>(s.Wo()),     static_cast<int>(s.Cg()),     static_cast<int>(s.Og())};
}

// The output index o along one axis whose tap k reads input index i: i = o*stride - pad + k*dil,
// or -1 when that o is not an integer or out of range.
__device__ __forceinline__ int reader_of(int i, int k, int stride, int pad, int dil, int out) {
  const int num = i + pad - k * dil;
  if (num < 0 || num % stride != 0) return -1;
  const int o = num / stride;
  return o < out ? o : -1;
}

}  // namespace seg::cuda::detail
