// Softmax, log-softmax and argmax over channels (kernels/cuda/softmax.h: math, launch configuration,
// memory traffic and accuracy against the CPU).
#include <cmath>
#include <cstdint>

#include "kernels/cuda/channel_rows.cuh"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/softmax.h"
#include "kernels/cuda/storage_access.cuh"

namespace seg::cuda {

namespace {

using dev::device_t;

// hot-kernel: softmax_forward_kernel
template <class T>
__global__ void softmax_forward_kernel(const T* __restrict__ x, int64_t P, int64_t C, T* __restrict__ y, bool log,
                                       int G) {
  const int gl = static_cast<int>(threadIdx.x) & (G - 1);
  const int64_t rows_per_block = blockDim.x / G;
  for (int64_t base = blockIdx.x * rows_per_block; base < P; base += static_cast<int64_t>(gridDim.x) * rows_per_block) {
    const int64_t row = base + threadIdx.x / G;
    const bool active = row < P;
    const T* xr = x + row * C;
    float m = -INFINITY;
    if (active)
      for (int64_t c = gl; c < C; c += G) m = dev::max_keep_nan(m, dev::to_float(xr[c]));
    m = dev::group_max(m, G);
    float s = 0.0f;
    if (active)
      for (int64_t c = gl; c < C; c += G) s += expf(dev::to_float(xr[c]) - m);
    s = dev::group_sum(s, G);
    if (!active) continue;
    T* yr = y + row * C;
    if (log) {
      const float shift = m + logf(s);
      for (int64_t c = gl; c < C; c += G) yr[c] = dev::from_float<T>(dev::to_float(xr[c]) - shift);
    } else {
      const float inv = 1.0f / s;
      for (int64_t c = gl; c < C; c += G) yr[c] = dev::from_float<T>(dev::mul(expf(dev::to_float(xr[c]) - m), inv));
    }
  }
}

template <class T>
__global__ void softmax_backward_kernel(const T* __restrict__ y, const T* __restrict__ dy, int64_t P, int64_t C,
                                        T* __restrict__ dx, bool log, int G) {
  const int gl = static_cast<int>(threadIdx.x) & (G - 1);
  const int64_t rows_per_block = blockDim.x / G;
  for (int64_t base = blockIdx.x * rows_per_block; base < P; base += static_cast<int64_t>(gridDim.x) * rows_per_block) {
    const int64_t row = base + threadIdx.x / G;
    const bool active = row < P;
    const T* yr = y + row * C;
    const T* gr = dy + row * C;
    float s = 0.0f;
    if (active) {
      if (log)
        for (int64_t c = gl; c < C; c += G) s += dev::to_float(gr[c]);
      else
        for (int64_t c = gl; c < C; c += G) s = dev::add(s, dev::mul(dev::to_float(gr[c]), dev::to_float(yr[c])));
    }
    s = dev::group_sum(s, G);
    if (!active) continue;
    T* dr = dx + row * C;
    if (log)
      for (int64_t c = gl; c < C; c += G)
        dr[c] = dev::from_float<T>(dev::sub(dev::to_float(gr[c]), dev::mul(expf(dev::to_float(yr[c])), s)));
    else
      for (int64_t c = gl; c < C; c += G)
        dr[c] = dev::from_float<T>(dev::mul(dev::to_float(yr[c]), dev::sub(dev::to_float(gr[c]), s)));
  }
}

// hot-kernel: argmax_channels_kernel
template <class T>
__global__ void argmax_channels_kernel(const T* __restrict__ x, int64_t P, int64_t C, int32_t* __restrict__ out, int G) {
  const int gl = static_cast<int>(threadIdx.x) & (G - 1);
  const int64_t rows_per_block = blockDim.x / G;
  for (int64_t base = blockIdx.x * rows_per_block; base < P; base += static_cast<int64_t>(gridDim.x) * rows_per_block) {
    const int64_t row = base + threadIdx.x / G;
    const bool active = row < P;
    uint64_t key = 0;
    if (active)
      for (int64_t c = gl; c < C; c += G) {
        const uint64_t k = dev::argmax_key(dev::to_float(x[row * C + c]), c);
        key = k > key ? k : key;
      }
    key = dev::group_max_key(key, G);
    const int32_t where = dev::argmax_index(key);
    if (active && gl == 0) out[row] = where;
  }
}

}  // namespace

template <class T> void softmax_forward(const T* x, int64_t P, int64_t C, T* y, bool log, Stream stream) {
  if (P <= 0 || C <= 0) return;
  const int G = dev::group_width(C);
  SEG_LAUNCH((softmax_forward_kernel<device_t<T>>), dev::row_blocks(P, C), dev::kRowBlock, 0, stream, dev::dptr(x), P,
             C, dev::dptr(y), log, G);
}

template <class T> void softmax_backward(const T* y, const T* dy, int64_t P, int64_t C, T* dx, bool log, Stream stream) {
  if (P <= 0 || C <= 0) return;
  const int G = dev::group_width(C);
  SEG_LAUNCH((softmax_backward_kernel<device_t<T>>), dev::row_blocks(P, C), dev::kRowBlock, 0, stream, dev::dptr(y),
             dev::dptr(dy), P, C, dev::dptr(dx), log, G);
}

template <class T> void argmax_channels(const T* x, int64_t P, int64_t C, int32_t* out, Stream stream) {
  if (P <= 0 || C <= 0) return;
  const int G = dev::group_width(C);
  SEG_LAUNCH((argmax_channels_kernel<device_t<T>>), dev::row_blocks(P, C), dev::kRowBlock, 0, stream, dev::dptr(x), P,
             C, out, G);
}

#define SEG_SOFTMAX_INSTANTIATE(T)                                                            \
  template void softmax_forward<T>(const T*, int64_t, int64_t, T*, bool, Stream);            \
  template void softmax_backward<T>(const T*, const T*, int64_t, int64_t, T*, bool, Stream); \
  template void argmax_channels<T>(const T*, int64_t, int64_t, int32_t*, Stream);
SEG_SOFTMAX_INSTANTIATE(float)
SEG_SOFTMAX_INSTANTIATE(f16)
SEG_SOFTMAX_INSTANTIATE(bf16)
#undef SEG_SOFTMAX_INSTANTIATE

}  // namespace seg::cuda
