// Row groups for the per-pixel channel kernels (softmax, argmax, the fused loss): the [P, C] rows of a
// channels-last tensor, each handled by a group of G lanes of one warp (.cu files only).
//
//   G = the smallest power of two >= C, at most 32: C = 150 (ADE20K) uses whole warps, C = 3 groups
//   of 4 lanes, 8 rows per warp. Lane l of a group reads channels l, l + G, l + 2G, ...: G adjacent
//   elements per step, so a warp's loads are coalesced for any C. Group reductions are butterfly
//   shuffles of width G (every lane of the group ends with the same bits).
//   A block of 256 threads handles 256 / G rows per step and strides over the rows by the grid; the
//   loop bound is the same for the whole block, so every lane reaches every shuffle (rows past P
//   take part with neutral values and write nothing).
#pragma once

#include <cstdint>

#include "kernels/cuda/block_reduce.cuh"

namespace seg::cuda::dev {

constexpr int kRowBlock = 256;
constexpr int64_t kRowMaxBlocks = 1024;

inline int group_width(int64_t C) {
  int g = 1;
  while (g < C && g < 32) g *= 2;
  return g;
}
inline int row_blocks(int64_t P, int64_t C) {
  return grid_blocks(P, kRowBlock / group_width(C), kRowMaxBlocks);
}

// Argmax order: a NaN beats any number, then the larger value; ties (and two NaNs) go to the lower
// index. That is the CPU's scan (kernels/cpu/softmax.cpp: first maximum, first NaN wins) as a total
// order, encoded in one 64-bit key so that a candidate is one value: the high word is the float's
// bits made monotone (negative floats flipped, positive ones with the sign bit set; -0 counted as
// +0 so the two tie; every NaN the largest key), the low word the complement of the index (the
// lower index the larger). The group's argmax is then a max over keys: one shuffle per level, in
// any order. Key 0 (below every real candidate) stands for "no channel yet".
__device__ __forceinline__ uint64_t argmax_key(float v, int64_t c) {
  uint32_t bits = __float_as_uint(v == 0.0f ? 0.0f : v);
  if (v != v) bits = 0xFFFFFFFFu;
  else bits = (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
  return (static_cast<uint64_t>(bits) << 32) | static_cast<uint32_t>(~static_cast<uint32_t>(c));
}
__device__ __forceinline__ int32_t argmax_index(uint64_t key) {
  return static_cast<int32_t>(~static_cast<uint32_t>(key & 0xFFFFFFFFu));
}

// The best key of the group, in every lane of it.
__device__ __forceinline__ uint64_t group_max_key(uint64_t key, int width) {
  for (int offset = width / 2; offset > 0; offset >>= 1) {
    const unsigned long long o = __shfl_xor_sync(kFullMask, static_cast<unsigned long long>(key), offset, width);
    key = o > key ? o : key;
  }
  return key;
}

// Combines values that only group leaders (lane % G == 0) hold, the other lanes holding the identity:
// the butterfly levels of width >= G of the warp (none for G = 32), then lane 0 of each warp writes
// scratch[warp]. The caller then synchronises and thread 0 folds the block's warps in warp order.
template <class T, class Op> __device__ __forceinline__ void leaders_to_scratch(T v, int G, T* scratch, Op op) {
  for (int offset = 16; offset >= G; offset >>= 1) v = op(v, __shfl_xor_sync(kFullMask, v, offset));
  if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = v;
}
template <class T, class Op> __device__ __forceinline__ T fold_warps(const T* scratch, Op op) {
  T t = scratch[0];
  for (int w = 1; w < static_cast<int>(blockDim.x >> 5); ++w) t = op(t, scratch[w]);
  return t;
}

struct SumOp {
  template <class T> __device__ T operator()(T a, T b) const { return a + b; }
};
struct MinOp {
  template <class T> __device__ T operator()(T a, T b) const { return b < a ? b : a; }
};

}  // namespace seg::cuda::dev
