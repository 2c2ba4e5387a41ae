// CUDA strided copy with element conversion, and strided fill: the twins of kernels/cpu/copy.h.
//
//   copy_strided: dst[sum_d i_d * dst_stride[d]] = convert<D>(src[sum_d i_d * src_stride[d]])
//   fill_strided: dst[sum_d i_d * dst_stride[d]] = value
// over the index space of a seg::CopyLayout (kernels/common/copy_layout.h; strides in elements, any
// sign, 0 allowed on the source: a broadcast). Conversion rule as on the CPU: f16/bf16 through f32
// with round to nearest even, everything else a C++ static_cast (float -> integer truncates; values
// outside the integer's range are undefined on the CPU and saturate on the GPU: do not rely on them).
// S, D in {float, f16, bf16, int32, int64, uint8}: every pair is instantiated (36), fill for all six.
// Used by contiguous(), to(dtype) (so also the casts of autocast, O2's model cast and the master
// weights), copy_() between views (a concat writes its inputs into channel slices) and fill_/zero_.
//
// Pointers are device pointers; src and dst must not overlap. No synchronisation, no allocation.
//
// Paths, chosen on the host after coalesce() (merges dimensions that are contiguous in both):
//   contiguous   one flat run: 16-byte vector accesses on the wider type (V = 16/max(sizeof S,
//                sizeof D) elements per thread and step: f32->f32 4, f16->f16 8, f32<->f16 4,
//                u8->f32 4), when src and dst reach pack alignment at the same element (a scalar
//                head of < V elements first, a scalar tail after); else element by element
//   rows         unit inner stride on both sides, e.g. a channel slice [N,H,W,c] of [N,H,W,C]:
//                (row, pack) pairs, vectorised as above when the row length and every row start
//                keep pack alignment (C and the slice offset multiples of V), else scalar
//   generic      anything else (a permuted view, a broadcast): one element per thread and step,
//                the index decomposed over up to 6 dimensions; writes are in dst's index order.
//                Reads of a transposed source are then strided (uncoalesced); a shared-memory
//                tiled transpose would fix that, but no step of the training loop copies one.
// Launch: 256 threads per block (8 warps, few registers: full occupancy), grid = ceil(work / 256)
// capped at 1024 blocks, grid-stride loops beyond: 262K threads, about one full wave of an H100/H200
// (132 SMs x 2048 threads), each with a 16-byte access in flight per step, which is what saturates
// HBM bandwidth; more blocks would only add scheduling.
// Memory traffic: numel * (sizeof(S) + sizeof(D)) bytes; bandwidth-bound. fill: numel * sizeof(D).
#pragma once

#include <cstdint>

#include "kernels/common/copy_layout.h"
#include "kernels/common/half.h"
#include "kernels/cuda/stream.h"

namespace seg::cuda {

using ::seg::CopyLayout;

template <class S, class D>
void copy_strided(const S* src, D* dst, const CopyLayout& layout, Stream stream);

template <class D>
void fill_strided(D* dst, const CopyLayout& layout, D value, Stream stream);

}  // namespace seg::cuda
