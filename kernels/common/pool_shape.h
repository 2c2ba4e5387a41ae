// Pooling shapes and PyTorch's adaptive-pooling window rule, shared by the CPU and CUDA kernels.
//
// MaxPool2d(kernel, stride, pad) on x [N, H, W, C], floor mode: Ho = (H + 2*pad - kernel)/stride + 1.
// AdaptiveAvgPool2d to out: window i covers [floor(i*in/out), ceil((i+1)*in/out)).
#pragma once

#include <cstdint>

#include "kernels/common/hostdevice.h"

namespace seg {

struct PoolShape {
  int64_t N = 1, H = 1, W = 1, C = 1;
  int64_t kernel = 3, stride = 2, pad = 1;
  SEG_HD int64_t Ho() const { return (H + 2 * pad - kernel) / stride + 1; }
  SEG_HD int64_t Wo() const { return (W + 2 * pad - kernel) / stride + 1; }
};

SEG_HD_INLINE int64_t adaptive_start(int64_t i, int64_t in, int64_t out) { return (i * in) / out; }
SEG_HD_INLINE int64_t adaptive_end(int64_t i, int64_t in, int64_t out) { return ((i + 1) * in + out - 1) / out; }

}  // namespace seg
