#include "kernels/cpu/copy.h"

namespace seg::cpu {

CopyLayout coalesce(const CopyLayout& in) {
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

}  // namespace seg::cpu
