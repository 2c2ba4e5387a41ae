// Bilinear resize kernels: math, the backward's index ranges, launch configuration and memory
// traffic in kernels/cuda/resize.h.
#include "kernels/cuda/resize.h"

#include "kernels/cuda/kernel_util.cuh"
#include "kernels/cuda/launch.h"

namespace seg::cuda {

namespace {

struct ResizeDims {
  int N, H, W, C, Ho, Wo;
};

struct Tap {
  int i0, i1;
  float l0, l1;
};

// kernels/common/resize_shape.h's bilinear_tap<float>, operation for operation: its one fma, then
// single roundings (the _rn intrinsics are never contracted), so the tap of an output is the
// CPU's, and the same wherever it is computed: in readers_of's range search and in the gather loop.
__device__ __forceinline__ Tap tap_of(int out_index, int in_size, int out_size) {
  const float scale = static_cast<float>(in_size) / static_cast<float>(out_size);
  float src = __fmaf_rn(scale, __fadd_rn(static_cast<float>(out_index), 0.5f), -0.5f);
  if (src < 0) src = 0;
  int i0 = static_cast<int>(src);
  if (i0 > in_size - 1) i0 = in_size - 1;
  const int i1 = i0 < in_size - 1 ? i0 + 1 : i0;
  const float l1 = __fsub_rn(src, static_cast<float>(i0));
  return Tap{i0, i1, __fsub_rn(1.0f, l1), l1};
}

// The contiguous range [lo, hi] of output indices whose taps include input index h (empty: lo > hi).
__device__ __forceinline__ void readers_of(int h, int in_size, int out_size, int& lo, int& hi) {
  const float inv_scale = static_cast<float>(out_size) / static_cast<float>(in_size);
  // Estimates from src(i) = (i + 0.5)*scale - 0.5, i.e. i = (src + 0.5)/scale - 0.5.
  lo = static_cast<int>(floorf((static_cast<float>(h) - 0.5f) * inv_scale - 0.5f));
  hi = static_cast<int>(ceilf((static_cast<float>(h) + 1.5f) * inv_scale - 0.5f));
  lo = min(max(lo, 0), out_size - 1);
  hi = min(max(hi, 0), out_size - 1);
  // Exact ends: lo = min{i : i0(i) >= h-1}, hi = max{i : i0(i) <= h}; i0 is non-decreasing in i.
  while (lo > 0 && tap_of(lo - 1, in_size, out_size).i0 >= h - 1) --lo;
  while (lo < out_size && tap_of(lo, in_size, out_size).i0 < h - 1) ++lo;
  while (hi >= 0 && tap_of(hi, in_size, out_size).i0 > h) --hi;
  while (hi + 1 < out_size && tap_of(hi + 1, in_size, out_size).i0 <= h) ++hi;
}

// hot-kernel: resize_bilinear_forward_kernel
template <class D, int V>
__global__ void resize_bilinear_forward_kernel(ResizeDims d, const D* __restrict__ x, D* __restrict__ y) {
  const int packs = d.C / V;
  const int total = d.N * d.Ho * d.Wo * packs;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    const int c0 = (i % packs) * V;
    const int pix = i / packs;
    const int oj = pix % d.Wo, oi = (pix / d.Wo) % d.Ho, n = pix / (d.Wo * d.Ho);
    const Tap a = tap_of(oi, d.H, d.Ho), b = tap_of(oj, d.W, d.Wo);
    const int64_t row0 = static_cast<int64_t>(n * d.H + a.i0) * d.W, row1 = static_cast<int64_t>(n * d.H + a.i1) * d.W;
    float p00[V], p01[V], p10[V], p11[V];
    load_f32<V>(x + (row0 + b.i0) * d.C + c0, p00);
    load_f32<V>(x + (row0 + b.i1) * d.C + c0, p01);
    load_f32<V>(x + (row1 + b.i0) * d.C + c0, p10);
    load_f32<V>(x + (row1 + b.i1) * d.C + c0, p11);
    float out[V];
    SEG_UNROLL
    for (int v = 0; v < V; ++v) {
      const float top = b.l0 * p00[v] + b.l1 * p01[v];
      const float bottom = b.l0 * p10[v] + b.l1 * p11[v];
      out[v] = a.l0 * top + a.l1 * bottom;
    }
    store_f32<V>(y + static_cast<int64_t>(pix) * d.C + c0, out);
  }
}

// hot-kernel: resize_bilinear_backward_kernel
template <class D, int V>
__global__ void resize_bilinear_backward_kernel(ResizeDims d, const D* __restrict__ dy, D* __restrict__ dx) {
  const int packs = d.C / V;
  const int total = d.N * d.H * d.W * packs;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    const int c0 = (i % packs) * V;
    const int pix = i / packs;
    const int w = pix % d.W, h = (pix / d.W) % d.H, n = pix / (d.W * d.H);
    int i_lo, i_hi, j_lo, j_hi;
    readers_of(h, d.H, d.Ho, i_lo, i_hi);
    readers_of(w, d.W, d.Wo, j_lo, j_hi);
    float acc[V];
    SEG_UNROLL
    for (int v = 0; v < V; ++v) acc[v] = 0.0f;
    for (int oi = i_lo; oi <= i_hi; ++oi) {
      const Tap a = tap_of(oi, d.H, d.Ho);
      for (int oj = j_lo; oj <= j_hi; ++oj) {
        const Tap b = tap_of(oj, d.W, d.Wo);
        float g[V];
        load_f32<V>(dy + (static_cast<int64_t>(n * d.Ho + oi) * d.Wo + oj) * d.C + c0, g);
        // The CPU adds w00, w01, w10, w11 (in this order) into the four taps of each output.
        const float wts[4] = {a.l0 * b.l0, a.l0 * b.l1, a.l1 * b.l0, a.l1 * b.l1};
        const bool hit[4] = {a.i0 == h && b.i0 == w, a.i0 == h && b.i1 == w, a.i1 == h && b.i0 == w,
                             a.i1 == h && b.i1 == w};
        SEG_UNROLL
        for (int t = 0; t < 4; ++t)
          if (hit[t]) {
            SEG_UNROLL
            for (int v = 0; v < V; ++v) acc[v] += wts[t] * g[v];
          }
      }
    }
    store_f32<V>(dx + static_cast<int64_t>(pix) * d.C + c0, acc);
  }
}

ResizeDims dims_of(const ResizeShape& s) {
  return ResizeDims{static_cast<int>(s.N), static_cast<int>(s.H),  static_cast<int>(s.W),
                    static_cast<int>(s.C), static_cast<int>(s.Ho), static_cast<int>(s.Wo)};
}

void check_sizes(const ResizeShape& s, const char* what) {
  require_int32(s.N * s.H * s.W * s.C, what);
  require_int32(s.N * s.Ho * s.Wo * s.C, what);
}

}  // namespace

template <class T> void resize_bilinear_forward(const ResizeShape& s, const T* x, T* y, Stream stream) {
  check_sizes(s, "resize_bilinear_forward");
  const int64_t out = s.N * s.Ho * s.Wo * s.C;
  if (out <= 0) return;
  using D = device_t<T>;
  constexpr int V = kVec16<D>;
  if (s.C % V == 0 && aligned16(x) && aligned16(y))
    SEG_LAUNCH((resize_bilinear_forward_kernel<D, V>), grid_for(out / V), kThreads, 0, stream, dims_of(s), dev(x), dev(y));
  else
    SEG_LAUNCH((resize_bilinear_forward_kernel<D, 1>), grid_for(out), kThreads, 0, stream, dims_of(s), dev(x), dev(y));
}

template <class T> void resize_bilinear_backward(const ResizeShape& s, const T* dy, T* dx, Stream stream) {
  check_sizes(s, "resize_bilinear_backward");
  const int64_t in = s.N * s.H * s.W * s.C;
  if (in <= 0) return;
  using D = device_t<T>;
  constexpr int V = kVec16<D>;
  if (s.C % V == 0 && aligned16(dy) && aligned16(dx))
    SEG_LAUNCH((resize_bilinear_backward_kernel<D, V>), grid_for(in / V), kThreads, 0, stream, dims_of(s), dev(dy),
               dev(dx));
  else
    SEG_LAUNCH((resize_bilinear_backward_kernel<D, 1>), grid_for(in), kThreads, 0, stream, dims_of(s), dev(dy), dev(dx));
}

#define SEG_INSTANTIATE_CUDA_RESIZE(T)                                                  \
  template void resize_bilinear_forward<T>(const ResizeShape&, const T*, T*, Stream); \
  template void resize_bilinear_backward<T>(const ResizeShape&, const T*, T*, Stream);
SEG_INSTANTIATE_CUDA_RESIZE(float)
SEG_INSTANTIATE_CUDA_RESIZE(f16)
SEG_INSTANTIATE_CUDA_RESIZE(bf16)

}  // namespace seg::cuda
