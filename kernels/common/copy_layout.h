// The index space of a strided copy, shared by the CPU and CUDA copy kernels (DESIGN decision 13).
//
// dst[sum_d i_d * dst_stride[d]] = src[sum_d i_d * src_stride[d]] for every index (i_0 .. i_{ndim-1})
// below shape. Strides are in elements. coalesce() drops size-1 dimensions and merges a dimension
// into its inner neighbour when both tensors step over it contiguously, so a copy between two
// channel slices becomes "rows of C elements" and a contiguous copy one flat run.
#pragma once

#include <cstdint>

#include "kernels/common/hostdevice.h"

namespace seg {

constexpr int kMaxCopyDims = 6;

struct CopyLayout {
  int ndim = 0;
  int64_t shape[kMaxCopyDims];
  int64_t src_stride[kMaxCopyDims];
  int64_t dst_stride[kMaxCopyDims];
};

SEG_HD_INLINE CopyLayout coalesce(const CopyLayout& in) {
  CopyLayout out;
  for (int d = 0; d < in.ndim; ++d) {
    if (in.shape[d] == 1) continue;
    if (out.ndim > 0) {
      const int p = out.ndim - 1;
      // Merge the previous (outer) dim into this one when stepping it equals stepping over this dim.
      if (out.src_stride[p] == in.src_stride[d] * in.shape[d] && out.dst_stride[p] == in.dst_stride[d] * in.shape[d]) {
        out.shape[p] *= in.shape[d];
        out.src_stride[p] = in.src_stride[d];
        out.dst_stride[p] = in.dst_stride[d];
        continue;
      }
    }
    out.shape[out.ndim] = in.shape[d];
    out.src_stride[out.ndim] = in.src_stride[d];
    out.dst_stride[out.ndim] = in.dst_stride[d];
    ++out.ndim;
  }
  return out;
}

}  // namespace seg
