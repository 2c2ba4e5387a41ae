// Gradient unscale with a device found-inf flag, master-weight and half SGD steps, fp16 range counts
// (kernels/cuda/amp.h: math, the flag, launch configuration, memory traffic).
#include <cstdint>

#include "kernels/cuda/amp.h"
#include "kernels/cuda/block_reduce.cuh"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/storage_access.cuh"

namespace seg::cuda {

namespace {

using dev::device_t;
using dev::Pack;

constexpr int kBlock = 256;
constexpr int64_t kMaxBlocks = 1024;
constexpr int kV = 4;  // elements per pack: 16 bytes of f32, 8 of a half type
constexpr int kRangeBlock = 256;
constexpr int64_t kRangePerBlock = 4096;
constexpr int64_t kRangeMaxBlocks = 512;

__device__ __forceinline__ bool not_finite(float v) { return (__float_as_uint(v) & 0x7F800000u) == 0x7F800000u; }

// After the grid-stride loop (every thread of the block gets here): one atomicOr per block that saw
// a non-finite value.
__device__ __forceinline__ void report_nonfinite(bool bad, int* found_inf) {
  if (__syncthreads_or(bad ? 1 : 0) && threadIdx.x == 0) atomicOr(found_inf, 1);
}

// hot-kernel: unscale_f32_inplace_kernel
template <int V>
__global__ void unscale_f32_inplace_kernel(float* __restrict__ g, int64_t n, int64_t head, int64_t packs, float inv,
                                           int* __restrict__ found_inf) {
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  bool bad = false;
  for (int64_t k = tid; k < packs; k += stride) {
    Pack<float, V> v = dev::load_pack<float, V>(g + head + k * V);
    SEG_UNROLL
    for (int j = 0; j < V; ++j) {
      v.v[j] = dev::mul(v.v[j], inv);
      bad |= not_finite(v.v[j]);
    }
    dev::store_pack<float, V>(g + head + k * V, v);
  }
  const int64_t tail = head + packs * V;
  for (int64_t k = tid; k < head + (n - tail); k += stride) {
    const int64_t i = dev::edge_index(k, head, tail);
    const float v = dev::mul(g[i], inv);
    g[i] = v;
    bad |= not_finite(v);
  }
  report_nonfinite(bad, found_inf);
}

// hot-kernel: unscale_to_f32_kernel
template <class H, int V>
__global__ void unscale_to_f32_kernel(const H* __restrict__ g, float* __restrict__ out, int64_t n, int64_t head,
                                      int64_t packs, float inv, int* __restrict__ found_inf) {
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  bool bad = false;
  for (int64_t k = tid; k < packs; k += stride) {
    const int64_t i = head + k * V;
    const Pack<H, V> x = dev::load_pack<H, V>(g + i);
    Pack<float, V> v;
    SEG_UNROLL
    for (int j = 0; j < V; ++j) {
      v.v[j] = dev::mul(dev::to_float(x.v[j]), inv);
      bad |= not_finite(v.v[j]);
    }
    dev::store_pack<float, V>(out + i, v);
  }
  const int64_t tail = head + packs * V;
  for (int64_t k = tid; k < head + (n - tail); k += stride) {
    const int64_t i = dev::edge_index(k, head, tail);
    const float v = dev::mul(dev::to_float(g[i]), inv);
    out[i] = v;
    bad |= not_finite(v);
  }
  report_nonfinite(bad, found_inf);
}

template <class H, int V>
__global__ void unscale_half_inplace_kernel(H* __restrict__ g, int64_t n, int64_t head, int64_t packs, float inv,
                                            int* __restrict__ found_inf) {
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  bool bad = false;
  for (int64_t k = tid; k < packs; k += stride) {
    const int64_t i = head + k * V;
    Pack<H, V> x = dev::load_pack<H, V>(g + i);
    SEG_UNROLL
    for (int j = 0; j < V; ++j) {
      const float v = dev::mul(dev::to_float(x.v[j]), inv);
      x.v[j] = dev::from_float<H>(v);
      bad |= not_finite(v);
    }
    dev::store_pack<H, V>(g + i, x);
  }
  const int64_t tail = head + packs * V;
  for (int64_t k = tid; k < head + (n - tail); k += stride) {
    const int64_t i = dev::edge_index(k, head, tail);
    const float v = dev::mul(dev::to_float(g[i]), inv);
    g[i] = dev::from_float<H>(v);
    bad |= not_finite(v);
  }
  report_nonfinite(bad, found_inf);
}

struct SgdParams {
  float lr, momentum, weight_decay;
};

// The CPU's expressions (kernels/cpu/amp.cpp), with its fused multiply-adds, each rounded once.
__device__ __forceinline__ void master_one(float& m, float g, float& b, const SgdParams& s) {
  const float d = dev::fma(s.weight_decay, m, g);
  b = dev::fma(s.momentum, b, d);
  m = dev::fma(-s.lr, b, m);
}
template <class H> __device__ __forceinline__ void half_one(H& p, float g, H& buf, const SgdParams& s) {
  const float pv = dev::to_float(p);
  const float b = dev::fma(s.weight_decay, pv, dev::fma(s.momentum, dev::to_float(buf), g));
  buf = dev::from_float<H>(b);
  p = dev::from_float<H>(dev::fma(-s.lr, dev::to_float(buf), pv));
}

// hot-kernel: sgd_master_kernel
template <class H, int V>
__global__ void sgd_master_kernel(float* __restrict__ master, const float* __restrict__ grad, float* __restrict__ buf,
                                  H* __restrict__ half_copy, int64_t n, int64_t head, int64_t packs, SgdParams s) {
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t k = tid; k < packs; k += stride) {
    const int64_t i = head + k * V;
    Pack<float, V> m = dev::load_pack<float, V>(master + i), b = dev::load_pack<float, V>(buf + i);
    const Pack<float, V> g = dev::load_pack<float, V>(grad + i);
    Pack<H, V> h;
    SEG_UNROLL
    for (int j = 0; j < V; ++j) {
      master_one(m.v[j], g.v[j], b.v[j], s);
      h.v[j] = dev::from_float<H>(m.v[j]);
    }
    dev::store_pack<float, V>(master + i, m);
    dev::store_pack<float, V>(buf + i, b);
    dev::store_pack<H, V>(half_copy + i, h);
  }
  const int64_t tail = head + packs * V;
  for (int64_t k = tid; k < head + (n - tail); k += stride) {
    const int64_t i = dev::edge_index(k, head, tail);
    float m = master[i], b = buf[i];
    master_one(m, grad[i], b, s);
    master[i] = m;
    buf[i] = b;
    half_copy[i] = dev::from_float<H>(m);
  }
}

// hot-kernel: sgd_half_kernel
template <class H, int V>
__global__ void sgd_half_kernel(H* __restrict__ p, const H* __restrict__ grad, H* __restrict__ buf, int64_t n,
                                int64_t head, int64_t packs, SgdParams s) {
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t k = tid; k < packs; k += stride) {
    const int64_t i = head + k * V;
    Pack<H, V> pv = dev::load_pack<H, V>(p + i), bv = dev::load_pack<H, V>(buf + i);
    const Pack<H, V> gv = dev::load_pack<H, V>(grad + i);
    SEG_UNROLL
    for (int j = 0; j < V; ++j) half_one(pv.v[j], dev::to_float(gv.v[j]), bv.v[j], s);
    dev::store_pack<H, V>(p + i, pv);
    dev::store_pack<H, V>(buf + i, bv);
  }
  const int64_t tail = head + packs * V;
  for (int64_t k = tid; k < head + (n - tail); k += stride) {
    const int64_t i = dev::edge_index(k, head, tail);
    H pi = p[i], bi = buf[i];
    half_one(pi, dev::to_float(grad[i]), bi, s);
    p[i] = pi;
    buf[i] = bi;
  }
}

// fp16 range, pass 1: per block the three counts (int64 zero[B], underflow[B], overflow[B]).
__global__ void fp16_range_kernel(const float* __restrict__ g, int64_t n, double scale, int64_t* __restrict__ part) {
  __shared__ int64_t scratch[32];
  const double tiny = 2.98023223876953125e-08;  // 2^-25: values at or below round to 0 in f16
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  int64_t zero = 0, under = 0, over = 0;
  for (int64_t i = tid; i < n; i += stride) {
    const float x = g[i];
    const double v = fabs(static_cast<double>(x)) * scale;
    if (x == 0.0f) ++zero;
    else if (v <= tiny) ++under;
    else if (v >= 65520.0) ++over;
  }
  zero = dev::block_sum(zero, scratch);
  under = dev::block_sum(under, scratch);
  over = dev::block_sum(over, scratch);
  if (threadIdx.x == 0) {
    part[blockIdx.x] = zero;
    part[gridDim.x + blockIdx.x] = under;
    part[2 * gridDim.x + blockIdx.x] = over;
  }
}

__global__ void fp16_range_finish_kernel(const int64_t* __restrict__ part, int blocks, int64_t n,
                                         Fp16Range* __restrict__ out) {
  __shared__ int64_t scratch[32];
  int64_t c[3] = {0, 0, 0};
  for (int k = 0; k < 3; ++k) {
    for (int i = static_cast<int>(threadIdx.x); i < blocks; i += static_cast<int>(blockDim.x)) c[k] += part[k * blocks + i];
    c[k] = dev::block_sum(c[k], scratch);
  }
  if (threadIdx.x == 0) {
    out->zero = c[0];
    out->underflow = c[1];
    out->overflow = c[2];
    out->total = n;
  }
}

int range_blocks(int64_t n) { return dev::grid_blocks(n, kRangePerBlock, kRangeMaxBlocks); }

template <class... Ptrs> dev::PackSplit split4(int64_t n, const Ptrs*... ptrs) { return dev::pack_split<kV>(n, ptrs...); }

SgdParams params(double lr, double momentum, double weight_decay) {
  return SgdParams{static_cast<float>(lr), static_cast<float>(momentum), static_cast<float>(weight_decay)};
}

}  // namespace

void unscale_inplace_check(float* g, int64_t n, float inv_scale, int* found_inf, Stream stream) {
  if (n <= 0) return;
  const dev::PackSplit s = split4(n, static_cast<const float*>(g));
  if (s.vector)
    SEG_LAUNCH(unscale_f32_inplace_kernel<kV>, dev::grid_blocks(s.packs, kBlock, kMaxBlocks), kBlock, 0, stream, g, n,
               s.head, s.packs, inv_scale, found_inf);
  else
    SEG_LAUNCH(unscale_f32_inplace_kernel<1>, dev::grid_blocks(n, kBlock, kMaxBlocks), kBlock, 0, stream, g, n,
               int64_t{0}, n, inv_scale, found_inf);
}

template <class H>
void unscale_to_f32_check(const H* g_in, float* out, int64_t n, float inv_scale, int* found_inf, Stream stream) {
  if (n <= 0) return;
  using DH = device_t<H>;
  const DH* g = dev::dptr(g_in);
  const dev::PackSplit s = split4(n, g, static_cast<const float*>(out));
  if (s.vector)
    SEG_LAUNCH((unscale_to_f32_kernel<DH, kV>), dev::grid_blocks(s.packs, kBlock, kMaxBlocks), kBlock, 0, stream, g,
               out, n, s.head, s.packs, inv_scale, found_inf);
  else
    SEG_LAUNCH((unscale_to_f32_kernel<DH, 1>), dev::grid_blocks(n, kBlock, kMaxBlocks), kBlock, 0, stream, g, out, n,
               int64_t{0}, n, inv_scale, found_inf);
}

template <class H> void unscale_half_inplace_check(H* g_in, int64_t n, float inv_scale, int* found_inf, Stream stream) {
  if (n <= 0) return;
  using DH = device_t<H>;
  DH* g = dev::dptr(g_in);
  const dev::PackSplit s = split4(n, static_cast<const DH*>(g));
  if (s.vector)
    SEG_LAUNCH((unscale_half_inplace_kernel<DH, kV>), dev::grid_blocks(s.packs, kBlock, kMaxBlocks), kBlock, 0, stream,
               g, n, s.head, s.packs, inv_scale, found_inf);
  else
    SEG_LAUNCH((unscale_half_inplace_kernel<DH, 1>), dev::grid_blocks(n, kBlock, kMaxBlocks), kBlock, 0, stream, g, n,
               int64_t{0}, n, inv_scale, found_inf);
}

template <class H>
void sgd_master_step(float* master, const float* grad, float* buf, H* half_in, int64_t n, double lr, double momentum,
                     double weight_decay, Stream stream) {
  if (n <= 0) return;
  using DH = device_t<H>;
  DH* half_copy = dev::dptr(half_in);
  const SgdParams p = params(lr, momentum, weight_decay);
  const dev::PackSplit s =
      split4(n, static_cast<const float*>(master), grad, static_cast<const float*>(buf), static_cast<const DH*>(half_copy));
  if (s.vector)
    SEG_LAUNCH((sgd_master_kernel<DH, kV>), dev::grid_blocks(s.packs, kBlock, kMaxBlocks), kBlock, 0, stream, master,
               grad, buf, half_copy, n, s.head, s.packs, p);
  else
    SEG_LAUNCH((sgd_master_kernel<DH, 1>), dev::grid_blocks(n, kBlock, kMaxBlocks), kBlock, 0, stream, master, grad,
               buf, half_copy, n, int64_t{0}, n, p);
}

template <class H>
void sgd_half_step(H* p_in, const H* grad_in, H* buf_in, int64_t n, double lr, double momentum, double weight_decay,
                   Stream stream) {
  if (n <= 0) return;
  using DH = device_t<H>;
  DH* p = dev::dptr(p_in);
  const DH* grad = dev::dptr(grad_in);
  DH* buf = dev::dptr(buf_in);
  const SgdParams sp = params(lr, momentum, weight_decay);
  const dev::PackSplit s = split4(n, static_cast<const DH*>(p), grad, static_cast<const DH*>(buf));
  if (s.vector)
    SEG_LAUNCH((sgd_half_kernel<DH, kV>), dev::grid_blocks(s.packs, kBlock, kMaxBlocks), kBlock, 0, stream, p, grad,
               buf, n, s.head, s.packs, sp);
  else
    SEG_LAUNCH((sgd_half_kernel<DH, 1>), dev::grid_blocks(n, kBlock, kMaxBlocks), kBlock, 0, stream, p, grad, buf, n,
               int64_t{0}, n, sp);
}

size_t fp16_range_workspace_bytes(int64_t n) { return static_cast<size_t>(range_blocks(n)) * 3 * sizeof(int64_t); }

void fp16_range(const float* g, int64_t n, double scale, Fp16Range* out, void* workspace, Stream stream) {
  const int blocks = range_blocks(n);
  auto* part = static_cast<int64_t*>(workspace);
  SEG_LAUNCH(fp16_range_kernel, blocks, kRangeBlock, 0, stream, g, n, scale, part);
  SEG_LAUNCH(fp16_range_finish_kernel, 1, kRangeBlock, 0, stream, static_cast<const int64_t*>(part), blocks, n, out);
}

#define SEG_AMP_INSTANTIATE(H)                                                                                 \
  template void unscale_to_f32_check<H>(const H*, float*, int64_t, float, int*, Stream);                      \
  template void unscale_half_inplace_check<H>(H*, int64_t, float, int*, Stream);                              \
  template void sgd_master_step<H>(float*, const float*, float*, H*, int64_t, double, double, double, Stream); \
  template void sgd_half_step<H>(H*, const H*, H*, int64_t, double, double, double, Stream);
SEG_AMP_INSTANTIATE(f16)
SEG_AMP_INSTANTIATE(bf16)
#undef SEG_AMP_INSTANTIATE

}  // namespace seg::cuda
