// Pooling kernels: math, launch configuration, memory traffic and the atomics choice in
// kernels/cuda/pool.h.
#include "kernels/cuda/pool.h"

#include <cmath>

#include "kernels/cuda/kernel_util.cuh"
#include "kernels/cuda/launch.h"

namespace seg::cuda {

namespace {

// The int-typed shape the kernels index with (the launchers check that every size fits).
struct PoolDims {
  int N, H, W, C, Ho, Wo, k, s, p;
};

PoolDims dims_of(const PoolShape& s) {
  return PoolDims{static_cast<int>(s.N),  static_cast<int>(s.H),    static_cast<int>(s.W),
                  static_cast<int>(s.C),  static_cast<int>(s.Ho()), static_cast<int>(s.Wo()),
                  static_cast<int>(s.kernel), static_cast<int>(s.stride), static_cast<int>(s.pad)};
}

// The first output index whose window [o*s - p, o*s - p + k) contains input index i.
__device__ __forceinline__ int first_window(int i, int k, int s, int p) {
  const int lo = i + p - k + 1;
  return lo <= 0 ? 0 : (lo + s - 1) / s;
}

// hot-kernel: maxpool2d_forward_kernel
template <class D, int V>
__global__ void maxpool2d_forward_kernel(PoolDims d, const D* __restrict__ x, D* __restrict__ y,
                                         int32_t* __restrict__ argmax) {
  const int packs = d.C / V;
  const int total = d.N * d.Ho * d.Wo * packs;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    const int c0 = (i % packs) * V;
    const int pix = i / packs;  // (n*Ho + ho)*Wo + wo
    const int wo = pix % d.Wo, ho = (pix / d.Wo) % d.Ho, n = pix / (d.Wo * d.Ho);
    const int h0 = ho * d.s - d.p, w0 = wo * d.s - d.p;
    const int hs = max(h0, 0), ws = max(w0, 0), he = min(h0 + d.k, d.H), we = min(w0 + d.k, d.W);
    float best[V];
    int32_t where[V];
SEG_UNROLL
    for (int v = 0; v < V; ++v) {
      best[v] = -INFINITY;
      where[v] = hs * d.W + ws;
    }
    for (int h = hs; h < he; ++h)
      for (int w = ws; w < we; ++w) {
        float val[V];
        load_f32<V>(x + (static_cast<int64_t>(n * d.H + h) * d.W + w) * d.C + c0, val);
        const int32_t idx = h * d.W + w;
SEG_UNROLL
        for (int v = 0; v < V; ++v)
          if (val[v] > best[v] || isnan(val[v])) {  // first maximum wins, NaN sticks (PyTorch)
            best[v] = val[v];
            where[v] = idx;
          }
      }
    const int64_t o = static_cast<int64_t>(pix) * d.C + c0;
    store_f32<V>(y + o, best);
    store_i32<V>(argmax + o, where);
  }
}

// hot-kernel: maxpool2d_backward_kernel
template <class D, int V>
__global__ void maxpool2d_backward_kernel(PoolDims d, const D* __restrict__ dy, const int32_t* __restrict__ argmax,
                                          D* __restrict__ dx) {
  const int packs = d.C / V;
  const int total = d.N * d.H * d.W * packs;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    const int c0 = (i % packs) * V;
    const int pix = i / packs;  // (n*H + h)*W + w
    const int w = pix % d.W, h = (pix / d.W) % d.H, n = pix / (d.W * d.H);
    const int ho_lo = first_window(h, d.k, d.s, d.p), ho_hi = min(d.Ho - 1, (h + d.p) / d.s);
    const int wo_lo = first_window(w, d.k, d.s, d.p), wo_hi = min(d.Wo - 1, (w + d.p) / d.s);
    const int32_t me = h * d.W + w;
    float acc[V];
SEG_UNROLL
    for (int v = 0; v < V; ++v) acc[v] = 0.0f;
    for (int ho = ho_lo; ho <= ho_hi; ++ho)
      for (int wo = wo_lo; wo <= wo_hi; ++wo) {
        const int64_t o = (static_cast<int64_t>(n * d.Ho + ho) * d.Wo + wo) * d.C + c0;
        int32_t a[V];
        load_i32<V>(argmax + o, a);
        float g[V];
        load_f32<V>(dy + o, g);
SEG_UNROLL
        for (int v = 0; v < V; ++v)
          if (a[v] == me) acc[v] += g[v];
      }
    store_f32<V>(dx + static_cast<int64_t>(pix) * d.C + c0, acc);
  }
}

struct AdaptiveDims {
  int N, H, W, C, Ho, Wo;
};

__device__ __forceinline__ int window_start(int i, int in, int out) { return (i * in) / out; }
__device__ __forceinline__ int window_end(int i, int in, int out) { return ((i + 1) * in + out - 1) / out; }

// hot-kernel: adaptive_avgpool2d_forward_kernel
template <class D, int V>
__global__ void adaptive_avgpool2d_forward_kernel(AdaptiveDims d, const D* __restrict__ x, D* __restrict__ y) {
  const int packs = d.C / V;
  const int total = d.N * d.Ho * d.Wo * packs;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    const int c0 = (i % packs) * V;
    const int pix = i / packs;
    const int oj = pix % d.Wo, oi = (pix / d.Wo) % d.Ho, n = pix / (d.Wo * d.Ho);
    const int h0 = window_start(oi, d.H, d.Ho), h1 = window_end(oi, d.H, d.Ho);
    const int w0 = window_start(oj, d.W, d.Wo), w1 = window_end(oj, d.W, d.Wo);
    float acc[V];
SEG_UNROLL
    for (int v = 0; v < V; ++v) acc[v] = 0.0f;
    for (int h = h0; h < h1; ++h)
      for (int w = w0; w < w1; ++w) {
        float val[V];
        load_f32<V>(x + (static_cast<int64_t>(n * d.H + h) * d.W + w) * d.C + c0, val);
SEG_UNROLL
        for (int v = 0; v < V; ++v) acc[v] += val[v];
      }
    const float inv = 1.0f / static_cast<float>((h1 - h0) * (w1 - w0));
SEG_UNROLL
    for (int v = 0; v < V; ++v) acc[v] *= inv;
    store_f32<V>(y + static_cast<int64_t>(pix) * d.C + c0, acc);
  }
}

// hot-kernel: adaptive_avgpool2d_backward_kernel
template <class D, int V>
__global__ void adaptive_avgpool2d_backward_kernel(AdaptiveDims d, const D* __restrict__ dy, D* __restrict__ dx) {
  const int packs = d.C / V;
  const int total = d.N * d.H * d.W * packs;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    const int c0 = (i % packs) * V;
    const int pix = i / packs;
    const int w = pix % d.W, h = (pix / d.W) % d.H, n = pix / (d.W * d.H);
    // start(i) <= h  <=>  i <= ((h+1)*Ho - 1)/H;   end(i) > h  <=>  i >= h*Ho/H (floors).
    const int i_lo = (h * d.Ho) / d.H, i_hi = min(d.Ho - 1, ((h + 1) * d.Ho - 1) / d.H);
    const int j_lo = (w * d.Wo) / d.W, j_hi = min(d.Wo - 1, ((w + 1) * d.Wo - 1) / d.W);
    float acc[V];
SEG_UNROLL
    for (int v = 0; v < V; ++v) acc[v] = 0.0f;
    for (int oi = i_lo; oi <= i_hi; ++oi) {
      const int h0 = window_start(oi, d.H, d.Ho), h1 = window_end(oi, d.H, d.Ho);
      for (int oj = j_lo; oj <= j_hi; ++oj) {
        const int w0 = window_start(oj, d.W, d.Wo), w1 = window_end(oj, d.W, d.Wo);
        const float inv = 1.0f / static_cast<float>((h1 - h0) * (w1 - w0));
        float g[V];
        load_f32<V>(dy + (static_cast<int64_t>(n * d.Ho + oi) * d.Wo + oj) * d.C + c0, g);
SEG_UNROLL
        for (int v = 0; v < V; ++v) acc[v] += g[v] * inv;
      }
    }
    store_f32<V>(dx + static_cast<int64_t>(pix) * d.C + c0, acc);
  }
}

}  // namespace

template <class T> void maxpool2d_forward(const PoolShape& s, const T* x, T* y, int32_t* argmax, Stream stream) {
  require_int32(s.N * s.H * s.W * s.C, "maxpool2d_forward input");
  require_int32(s.N * s.Ho() * s.Wo() * s.C, "maxpool2d_forward output");
  const int64_t out = s.N * s.Ho() * s.Wo() * s.C;
  if (out <= 0) return;
  using D = device_t<T>;
  constexpr int V = kVec16<D>;
  const PoolDims d = dims_of(s);
  if (s.C % V == 0 && aligned16(x) && aligned16(y) && aligned16(argmax))
    SEG_LAUNCH((maxpool2d_forward_kernel<D, V>), grid_for(out / V), kThreads, 0, stream, d, dev(x), dev(y), argmax);
  else
    SEG_LAUNCH((maxpool2d_forward_kernel<D, 1>), grid_for(out), kThreads, 0, stream, d, dev(x), dev(y), argmax);
}

template <class T>
void maxpool2d_backward(const PoolShape& s, const T* dy, const int32_t* argmax, T* dx, Stream stream) {
  require_int32(s.N * s.H * s.W * s.C, "maxpool2d_backward input");
  require_int32(s.N * s.Ho() * s.Wo() * s.C, "maxpool2d_backward output");
  const int64_t in = s.N * s.H * s.W * s.C;
  if (in <= 0) return;
  using D = device_t<T>;
  constexpr int V = kVec16<D>;
  const PoolDims d = dims_of(s);
  if (s.C % V == 0 && aligned16(dy) && aligned16(argmax) && aligned16(dx))
    SEG_LAUNCH((maxpool2d_backward_kernel<D, V>), grid_for(in / V), kThreads, 0, stream, d, dev(dy), argmax, dev(dx));
  else
    SEG_LAUNCH((maxpool2d_backward_kernel<D, 1>), grid_for(in), kThreads, 0, stream, d, dev(dy), argmax, dev(dx));
}

template <class T>
void adaptive_avgpool2d_forward(const T* x, int64_t N, int64_t H, int64_t W, int64_t C, int64_t Ho, int64_t Wo, T* y,
                                Stream stream) {
  require_int32(N * H * W * C, "adaptive_avgpool2d_forward input");
  require_int32(N * Ho * Wo * C, "adaptive_avgpool2d_forward output");
  require_int32((H + 1) * Ho + (W + 1) * Wo, "adaptive_avgpool2d_forward window arithmetic");
  const int64_t out = N * Ho * Wo * C;
  if (out <= 0) return;
  using D = device_t<T>;
  constexpr int V = kVec16<D>;
  const AdaptiveDims d{static_cast<int>(N), static_cast<int>(H),  static_cast<int>(W),
                       static_cast<int>(C), static_cast<int>(Ho), static_cast<int>(Wo)};
  if (C % V == 0 && aligned16(x) && aligned16(y))
    SEG_LAUNCH((adaptive_avgpool2d_forward_kernel<D, V>), grid_for(out / V), kThreads, 0, stream, d, dev(x), dev(y));
  else
    SEG_LAUNCH((adaptive_avgpool2d_forward_kernel<D, 1>), grid_for(out), kThreads, 0, stream, d, dev(x), dev(y));
}

template <class T>
void adaptive_avgpool2d_backward(const T* dy, int64_t N, int64_t H, int64_t W, int64_t C, int64_t Ho, int64_t Wo,
                                 T* dx, Stream stream) {
  require_int32(N * H * W * C, "adaptive_avgpool2d_backward input");
  require_int32(N * Ho * Wo * C, "adaptive_avgpool2d_backward output");
  require_int32((H + 1) * Ho + (W + 1) * Wo, "adaptive_avgpool2d_backward window arithmetic");
  const int64_t in = N * H * W * C;
  if (in <= 0) return;
  using D = device_t<T>;
  constexpr int V = kVec16<D>;
  const AdaptiveDims d{static_cast<int>(N), static_cast<int>(H),  static_cast<int>(W),
                       static_cast<int>(C), static_cast<int>(Ho), static_cast<int>(Wo)};
  if (C % V == 0 && aligned16(dy) && aligned16(dx))
    SEG_LAUNCH((adaptive_avgpool2d_backward_kernel<D, V>), grid_for(in / V), kThreads, 0, stream, d, dev(dy), dev(dx));
  else
    SEG_LAUNCH((adaptive_avgpool2d_backward_kernel<D, 1>), grid_for(in), kThreads, 0, stream, d, dev(dy), dev(dx));
}

#define SEG_INSTANTIATE_CUDA_POOL(T)                                                                            \
  template void maxpool2d_forward<T>(const PoolShape&, const T*, T*, int32_t*, Stream);                         \
  template void maxpool2d_backward<T>(const PoolShape&, const T*, const int32_t*, T*, Stream);                  \
  template void adaptive_avgpool2d_forward<T>(const T*, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, T*, \
                                              Stream);                                                          \
  template void adaptive_avgpool2d_backward<T>(const T*, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,  \
                                               T*, Stream);
SEG_INSTANTIATE_CUDA_POOL(float)
SEG_INSTANTIATE_CUDA_POOL(f16)
SEG_INSTANTIATE_CUDA_POOL(bf16)

}  // namespace seg::cuda
