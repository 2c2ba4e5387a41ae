// Strided copy, dtype conversion and fill (kernels/cuda/copy.h, kernels/cuda/convert.h: the math,
// paths, launch configuration and memory traffic are described there).
#include <cstdint>

#include "kernels/cuda/block_reduce.cuh"
#include "kernels/cuda/convert.h"
#include "kernels/cuda/copy.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/storage_access.cuh"

namespace seg::cuda {

namespace {

using dev::device_t;
using dev::Pack;

constexpr int kBlock = 256;
constexpr int64_t kMaxBlocks = 1024;

// Element offsets in src and dst of the multi-index number idx over the first dims dimensions of L
// (row-major: the last of those dimensions varies fastest).
__device__ __forceinline__ void layout_offsets(const CopyLayout& L, int dims, int64_t idx, int64_t& src_off,
                                               int64_t& dst_off) {
  src_off = 0;
  dst_off = 0;
  for (int d = dims - 1; d >= 0; --d) {
    const int64_t q = idx / L.shape[d];
    const int64_t r = idx - q * L.shape[d];
    src_off += r * L.src_stride[d];
    dst_off += r * L.dst_stride[d];
    idx = q;
  }
}

// One flat run of n elements: [head, head + packs*V) in packs of V, the rest (< 2V) one by one.
// hot-kernel: copy_contiguous_kernel
template <class S, class D, int V>
__global__ void copy_contiguous_kernel(const S* __restrict__ src, D* __restrict__ dst, int64_t n, int64_t head,
                                       int64_t packs) {
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t k = tid; k < packs; k += stride) {
    const int64_t i = head + k * V;
    const Pack<S, V> in = dev::load_pack<S, V>(src + i);
    Pack<D, V> out;
SEG_UNROLL
    for (int j = 0; j < V; ++j) out.v[j] = dev::convert_value<D>(in.v[j]);
    dev::store_pack<D, V>(dst + i, out);
  }
  const int64_t tail = head + packs * V;
  const int64_t edge = head + (n - tail);
  for (int64_t k = tid; k < edge; k += stride) {
    const int64_t i = k < head ? k : tail + (k - head);
    dst[i] = dev::convert_value<D>(src[i]);
  }
}

// Rows: L.ndim >= 2, unit inner stride on both sides; each row of row_len elements is row_len / V
// packs (V divides row_len, and every row start is pack-aligned when V > 1).
// hot-kernel: copy_rows_kernel
template <class S, class D, int V>
__global__ void copy_rows_kernel(const S* __restrict__ src, D* __restrict__ dst, CopyLayout L, int64_t row_packs,
                                 int64_t total_packs) {
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t k = tid; k < total_packs; k += stride) {
    const int64_t row = k / row_packs;
    const int64_t col = (k - row * row_packs) * V;
    int64_t so, dof;
    layout_offsets(L, L.ndim - 1, row, so, dof);
    const Pack<S, V> in = dev::load_pack<S, V>(src + so + col);
    Pack<D, V> out;
SEG_UNROLL
    for (int j = 0; j < V; ++j) out.v[j] = dev::convert_value<D>(in.v[j]);
    dev::store_pack<D, V>(dst + dof + col, out);
  }
}

// Any layout: one element per step, the index decomposed over every dimension.
template <class S, class D>
__global__ void copy_generic_kernel(const S* __restrict__ src, D* __restrict__ dst, CopyLayout L, int64_t numel) {
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t k = tid; k < numel; k += stride) {
    int64_t so, dof;
    layout_offsets(L, L.ndim, k, so, dof);
    dst[dof] = dev::convert_value<D>(src[so]);
  }
}

// hot-kernel: fill_contiguous_kernel
template <class D, int V>
__global__ void fill_contiguous_kernel(D* __restrict__ dst, int64_t n, int64_t head, int64_t packs, D value) {
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  Pack<D, V> p;
SEG_UNROLL
  for (int j = 0; j < V; ++j) p.v[j] = value;
  for (int64_t k = tid; k < packs; k += stride) dev::store_pack<D, V>(dst + head + k * V, p);
  const int64_t tail = head + packs * V;
  const int64_t edge = head + (n - tail);
  for (int64_t k = tid; k < edge; k += stride) dst[k < head ? k : tail + (k - head)] = value;
}

template <class D>
__global__ void fill_generic_kernel(D* __restrict__ dst, CopyLayout L, int64_t numel, D value) {
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t k = tid; k < numel; k += stride) {
    int64_t so, dof;
    layout_offsets(L, L.ndim, k, so, dof);
    dst[dof] = value;
  }
}

int64_t numel_of(const CopyLayout& L) {
  int64_t n = 1;
  for (int d = 0; d < L.ndim; ++d) n *= L.shape[d];
  return n;
}

// The flat run (device types): vectorised when src and dst reach pack alignment at the same element.
template <class S, class D>
void copy_run(const S* src, D* dst, int64_t n, Stream stream) {
  constexpr int V = dev::vec_width<S, D>();
  int64_t head = dev::aligned_start(src, V);
  if (head > n) head = n;
  if (V > 1 && dev::pack_aligned(dst, head, V) && n - head >= V) {
    const int64_t packs = (n - head) / V;
    SEG_LAUNCH((copy_contiguous_kernel<S, D, V>), dev::grid_blocks(packs, kBlock, kMaxBlocks), kBlock, 0, stream, src,
               dst, n, head, packs);
  } else {
    SEG_LAUNCH((copy_contiguous_kernel<S, D, 1>), dev::grid_blocks(n, kBlock, kMaxBlocks), kBlock, 0, stream, src, dst,
               n, int64_t{0}, n);
  }
}

// Whether every row of a rows layout starts pack-aligned on both sides.
template <class S, class D>
bool rows_vectorisable(const S* src, const D* dst, const CopyLayout& L, int V) {
  if (V <= 1 || L.shape[L.ndim - 1] % V != 0) return false;
  if (!dev::pack_aligned(src, 0, V) || !dev::pack_aligned(dst, 0, V)) return false;
  for (int d = 0; d < L.ndim - 1; ++d)
    if (L.src_stride[d] % V != 0 || L.dst_stride[d] % V != 0) return false;
  return true;
}

}  // namespace

template <class S, class D>
void copy_strided(const S* src_in, D* dst_in, const CopyLayout& layout, Stream stream) {
  using DS = device_t<S>;
  using DD = device_t<D>;
  const DS* src = dev::dptr(src_in);
  DD* dst = dev::dptr(dst_in);
  const CopyLayout L = coalesce(layout);
  const int64_t numel = numel_of(L);
  if (numel == 0) return;
  if (L.ndim == 0 || (L.ndim == 1 && L.src_stride[0] == 1 && L.dst_stride[0] == 1)) {
    copy_run(src, dst, numel, stream);
    return;
  }
  const int inner = L.ndim - 1;
  if (L.ndim >= 2 && L.src_stride[inner] == 1 && L.dst_stride[inner] == 1) {
    constexpr int V = dev::vec_width<DS, DD>();
    if (rows_vectorisable(src, dst, L, V)) {
      const int64_t row_packs = L.shape[inner] / V, total = numel / V;
      SEG_LAUNCH((copy_rows_kernel<DS, DD, V>), dev::grid_blocks(total, kBlock, kMaxBlocks), kBlock, 0, stream, src,
                 dst, L, row_packs, total);
    } else {
      SEG_LAUNCH((copy_rows_kernel<DS, DD, 1>), dev::grid_blocks(numel, kBlock, kMaxBlocks), kBlock, 0, stream, src,
                 dst, L, L.shape[inner], numel);
    }
    return;
  }
  SEG_LAUNCH((copy_generic_kernel<DS, DD>), dev::grid_blocks(numel, kBlock, kMaxBlocks), kBlock, 0, stream, src, dst, L,
             numel);
}

template <class D>
void fill_strided(D* dst_in, const CopyLayout& layout, D value_in, Stream stream) {
  using DD = device_t<D>;
  DD* dst = dev::dptr(dst_in);
  const DD value = dev::dvalue(value_in);
  CopyLayout L = layout;
  for (int d = 0; d < L.ndim; ++d) L.src_stride[d] = 0;
  L = coalesce(L);
  const int64_t numel = numel_of(L);
  if (numel == 0) return;
  if (L.ndim == 0 || (L.ndim == 1 && L.dst_stride[0] == 1)) {
    constexpr int V = dev::vec_width<DD>();
    int64_t head = dev::aligned_start(dst, V);
    if (head > numel) head = numel;
    const int64_t packs = (numel - head) / V;
    SEG_LAUNCH((fill_contiguous_kernel<DD, V>), dev::grid_blocks(packs > 0 ? packs : numel, kBlock, kMaxBlocks), kBlock,
               0, stream, dst, numel, head, packs, value);
    return;
  }
  SEG_LAUNCH((fill_generic_kernel<DD>), dev::grid_blocks(numel, kBlock, kMaxBlocks), kBlock, 0, stream, dst, L, numel,
             value);
}

void convert_f32_to_f16(const float* src, f16* dst, int64_t n, Stream stream) {
  if (n > 0) copy_run(src, dev::dptr(dst), n, stream);
}
void convert_f16_to_f32(const f16* src, float* dst, int64_t n, Stream stream) {
  if (n > 0) copy_run(dev::dptr(src), dst, n, stream);
}
void convert_f32_to_bf16(const float* src, bf16* dst, int64_t n, Stream stream) {
  if (n > 0) copy_run(src, dev::dptr(dst), n, stream);
}
void convert_bf16_to_f32(const bf16* src, float* dst, int64_t n, Stream stream) {
  if (n > 0) copy_run(dev::dptr(src), dst, n, stream);
}

// Every (S, D) pair of {float, f16, bf16, int32, int64, uint8}, and fill for each.
#define SEG_COPY_PAIR(S, D) template void copy_strided<S, D>(const S*, D*, const CopyLayout&, Stream);
#define SEG_COPY_FROM(S)      \
  SEG_COPY_PAIR(S, float)     \
  SEG_COPY_PAIR(S, f16)       \
  SEG_COPY_PAIR(S, bf16)      \
  SEG_COPY_PAIR(S, int32_t)   \
  SEG_COPY_PAIR(S, int64_t)   \
  SEG_COPY_PAIR(S, uint8_t)   \
  template void fill_strided<S>(S*, const CopyLayout&, S, Stream);
SEG_COPY_FROM(float)
SEG_COPY_FROM(f16)
SEG_COPY_FROM(bf16)
SEG_COPY_FROM(int32_t)
SEG_COPY_FROM(int64_t)
SEG_COPY_FROM(uint8_t)
#undef SEG_COPY_FROM
#undef SEG_COPY_PAIR

}  // namespace seg::cuda
