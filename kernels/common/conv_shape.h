// The shape of one 2-D convolution, shared by the CPU and CUDA kernels (DESIGN decisions 1, 13).
//
//   x  [N, H,  W,  C]            input, channels-last
//   w  [O, KH, KW, C/groups]     weights (one internal layout for every backend)
//   y  [N, Ho, Wo, O]            output
//   Ho = (H + 2*pad_h - dil_h*(KH-1) - 1) / stride_h + 1     (floor, as PyTorch)
//
// Plain data with host/device accessors: a launcher passes it by value into a CUDA kernel.
#pragma once

#include <cstdint>

#include "kernels/common/hostdevice.h"

namespace seg {

struct ConvShape {
  int64_t N = 1, H = 1, W = 1, C = 1;  // input
  int64_t O = 1, KH = 1, KW = 1;       // output channels, kernel
  int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dil_h = 1, dil_w = 1, groups = 1;

  SEG_HD int64_t Ho() const { return (H + 2 * pad_h - dil_h * (KH - 1) - 1) / stride_h + 1; }
  SEG_HD int64_t Wo() const { return (W + 2 * pad_w - dil_w * (KW - 1) - 1) / stride_w + 1; }
  SEG_HD int64_t Cg() const { return C / groups; }
  SEG_HD int64_t Og() const { return O / groups; }
  SEG_HD int64_t x_numel() const { return N * H * W * C; }
  SEG_HD int64_t w_numel() const { return O * KH * KW * Cg(); }
  SEG_HD int64_t y_numel() const { return N * Ho() * Wo() * O; }
};

}  // namespace seg
