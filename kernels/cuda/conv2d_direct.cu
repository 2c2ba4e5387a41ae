// Direct convolution: one thread per output element, the definition of kernels/cuda/conv2d.h as a
// loop, f32 accumulation. Every shape; no shared memory, no workspace. It is the slow, plain path
// (ConvAlgo::direct): a fallback and a second opinion on the fast paths, not used by default.
//   forward          thread per y element (pixel, o): KH*KW*Cg products
//   backward data    thread per dx element (pixel, c): the (kh, kw, o) whose output reads the pixel
//   backward weight  thread per dw element (o, kh, kw, c): N*Ho*Wo products; thread per db element
// Launch: grid-stride loops, 256 threads per block, grid_for() blocks. Memory traffic: every
// product reads both operands (from L1/L2); each output is written once (no atomics).
#include <cstdint>

#include "kernels/cuda/conv2d_common.cuh"
#include "kernels/cuda/conv2d_paths.h"
#include "kernels/cuda/launch.h"

namespace seg::cuda::detail {

namespace {

template <class D>
__global__ void conv2d_forward_direct_kernel(ConvDims d, const D* __restrict__ x, const D* __restrict__ w,
                                             const D* __restrict__ b, D* __restrict__ y) {
  const int total = d.N * d.Ho * d.Wo * d.O;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    const int o = i % d.O, pix = i / d.O;
    const int wo = pix % d.Wo, ho = (pix / d.Wo) % d.Ho, n = pix / (d.Wo * d.Ho);
    const int g = o / d.Og;
    float acc = b ? to_f32(b[o]) : 0.0f;
    for (int kh = 0; kh < d.KH; ++kh) {
      const int hi = ho * d.sh - d.ph + kh * d.dh;
      if (hi < 0 || hi >= d.H) continue;
      for (int kw = 0; kw < d.KW; ++kw) {
        const int wi = wo * d.sw - d.pw + kw * d.dw;
        if (wi < 0 || wi >= d.W) continue;
        const D* xp = x + (static_cast<int64_t>(n * d.H + hi) * d.W + wi) * d.C + g * d.Cg;
        const D* wp = w + (static_cast<int64_t>(o * d.KH + kh) * d.KW + kw) * d.Cg;
        for (int c = 0; c < d.Cg; ++c) acc += to_f32(xp[c]) * to_f32(wp[c]);
      }
    }
    y[i] = from_f32<D>(acc);
  }
}

template <class D>
__global__ void conv2d_backward_data_direct_kernel(ConvDims d, const D* __restrict__ w, const D* __restrict__ dy,
                                                   D* __restrict__ dx) {
  const int total = d.N * d.H * d.W * d.C;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    const int cc = i % d.C, pix = i / d.C;
    const int wi = pix % d.W, hi = (pix / d.W) % d.H, n = pix / (d.W * d.H);
    const int g = cc / d.Cg, c = cc - g * d.Cg;
    float acc = 0.0f;
    for (int kh = 0; kh < d.KH; ++kh) {
      const int ho = reader_of(hi, kh, d.sh, d.ph, d.dh, d.Ho);
      if (ho < 0) continue;
      for (int kw = 0; kw < d.KW; ++kw) {
        const int wo = reader_of(wi, kw, d.sw, d.pw, d.dw, d.Wo);
        if (wo < 0) continue;
        const D* gp = dy + (static_cast<int64_t>(n * d.Ho + ho) * d.Wo + wo) * d.O + g * d.Og;
        for (int o = 0; o < d.Og; ++o)
          acc += to_f32(gp[o]) * to_f32(w[(static_cast<int64_t>((g * d.Og + o) * d.KH + kh) * d.KW + kw) * d.Cg + c]);
      }
    }
    dx[i] = from_f32<D>(acc);
  }
}

template <class D>
__global__ void conv2d_backward_weight_direct_kernel(ConvDims d, const D* __restrict__ x, const D* __restrict__ dy,
                                                     D* __restrict__ dw) {
  const int total = d.O * d.KH * d.KW * d.Cg, P = d.N * d.Ho * d.Wo;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    const int c = i % d.Cg, kw = (i / d.Cg) % d.KW, kh = (i / (d.Cg * d.KW)) % d.KH, o = i / (d.Cg * d.KW * d.KH);
    const int g = o / d.Og;
    float acc = 0.0f;
    for (int p = 0; p < P; ++p) {
      const int wo = p % d.Wo, ho = (p / d.Wo) % d.Ho, n = p / (d.Wo * d.Ho);
      const int hi = ho * d.sh - d.ph + kh * d.dh, wi = wo * d.sw - d.pw + kw * d.dw;
      if (hi < 0 || hi >= d.H || wi < 0 || wi >= d.W) continue;
      acc += to_f32(dy[static_cast<int64_t>(p) * d.O + o]) *
             to_f32(x[(static_cast<int64_t>(n * d.H + hi) * d.W + wi) * d.C + g * d.Cg + c]);
    }
    dw[i] = from_f32<D>(acc);
  }
}

template <class D> __global__ void conv2d_bias_grad_direct_kernel(ConvDims d, const D* __restrict__ dy, D* __restrict__ db) {
  const int P = d.N * d.Ho * d.Wo;
  for (int o = blockIdx.x * blockDim.x + threadIdx.x; o < d.O; o += gridDim.x * blockDim.x) {
    float acc = 0.0f;
    for (int p = 0; p < P; ++p) acc += to_f32(dy[static_cast<int64_t>(p) * d.O + o]);
    db[o] = from_f32<D>(acc);
  }
}

}  // namespace

template <class T>
void conv2d_forward_direct(const ConvShape& s, const T* x, const T* w, const T* b, T* y, Stream stream) {
  const ConvDims d = conv_dims(s, "conv2d_forward (direct)");
  if (s.y_numel() <= 0) return;
  using D = device_t<T>;
  SEG_LAUNCH(conv2d_forward_direct_kernel<D>, grid_for(s.y_numel()), kThreads, 0, stream, d, dev(x), dev(w), dev(b),
             dev(y));
}

template <class T> void conv2d_backward_data_direct(const ConvShape& s, const T* w, const T* dy, T* dx, Stream stream) {
  const ConvDims d = conv_dims(s, "conv2d_backward_data (direct)");
  if (s.x_numel() <= 0) return;
  using D = device_t<T>;
  SEG_LAUNCH(conv2d_backward_data_direct_kernel<D>, grid_for(s.x_numel()), kThreads, 0, stream, d, dev(w), dev(dy),
             dev(dx));
}

template <class T>
void conv2d_backward_weight_direct(const ConvShape& s, const T* x, const T* dy, T* dw, T* db, Stream stream) {
  const ConvDims d = conv_dims(s, "conv2d_backward_weight (direct)");
  using D = device_t<T>;
  if (s.w_numel() > 0)
    SEG_LAUNCH(conv2d_backward_weight_direct_kernel<D>, grid_for(s.w_numel()), kThreads, 0, stream, d, dev(x),
               dev(dy), dev(dw));
  if (db && s.O > 0)
    SEG_LAUNCH(conv2d_bias_grad_direct_kernel<D>, grid_for(s.O), kThreads, 0, stream, d, dev(dy), dev(db));
}

#define SEG_INSTANTIATE_CONV_DIRECT(T)                                                                   \
  template void conv2d_forward_direct<T>(const ConvShape&, const T*, const T*, const T*, T*, Stream);    \
  template void conv2d_backward_data_direct<T>(const ConvShape&, const T*, const T*, T*, Stream);        \
  template void conv2d_backward_weight_direct<T>(const ConvShape&, const T*, const T*, T*, T*, Stream);
SEG_INSTANTIATE_CONV_DIRECT(float)
SEG_INSTANTIATE_CONV_DIRECT(f16)
SEG_INSTANTIATE_CONV_DIRECT(bf16)

}  // namespace seg::cuda::detail
