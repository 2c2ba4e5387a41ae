// Dropout2d mask and apply (kernels/cuda/dropout.h: math, launch configuration, memory traffic).
#include <cstdint>

#include "kernels/common/philox.h"
#include "kernels/cuda/block_reduce.cuh"
#include "kernels/cuda/dropout.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/storage_access.cuh"

namespace seg::cuda {

namespace {

using dev::device_t;
using dev::Pack;

constexpr int kBlock = 256;
constexpr int64_t kMaxBlocks = 1024;

// The CPU's loop body (kernels/cpu/dropout.cpp), one element per step.
__global__ void dropout2d_mask_kernel(PhiloxKey key, uint64_t philox_stream, int64_t count, double p, uint8_t* keep) {
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = tid; i < count; i += stride) {
    const PhiloxCounter ctr{{static_cast<uint32_t>(i), static_cast<uint32_t>(static_cast<uint64_t>(i) >> 32),
                             static_cast<uint32_t>(philox_stream), static_cast<uint32_t>(philox_stream >> 32)}};
    const float u = philox_uniform(philox4x32_10(ctr, key).c[0]);
    keep[i] = static_cast<double>(u) >= p ? 1 : 0;
  }
}

// y = keep ? x * k : 0. With V > 1, C % V == 0 and every pack starts at a multiple of V, so a pack
// covers V channels of one pixel.
// hot-kernel: dropout2d_apply_kernel
template <class T, int V>
__global__ void dropout2d_apply_kernel(const T* __restrict__ x, const uint8_t* __restrict__ keep, float k, int64_t HW,
                                       int64_t C, int64_t packs, T* __restrict__ y) {
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t q = tid; q < packs; q += stride) {
    const int64_t i = q * V;
    const int64_t pixel = i / C;
    const int64_t c = i - pixel * C;
    const uint8_t* m = keep + (pixel / HW) * C + c;
    const Pack<T, V> in = dev::load_pack<T, V>(x + i);
    Pack<T, V> out;
    SEG_UNROLL
    for (int j = 0; j < V; ++j) out.v[j] = dev::from_float<T>(m[j] ? dev::mul(dev::to_float(in.v[j]), k) : 0.0f);
    dev::store_pack<T, V>(y + i, out);
  }
}

}  // namespace

void dropout2d_mask(PhiloxKey key, uint64_t philox_stream, int64_t N, int64_t C, double p, uint8_t* keep,
                    Stream stream) {
  const int64_t count = N * C;
  if (count <= 0) return;
  SEG_LAUNCH(dropout2d_mask_kernel, dev::grid_blocks(count, kBlock, kMaxBlocks), kBlock, 0, stream, key, philox_stream,
             count, p, keep);
}

template <class T>
void dropout2d_apply(const T* x_in, const uint8_t* keep, double scale, int64_t N, int64_t HW, int64_t C, T* y_in,
                     Stream stream) {
  using DT = device_t<T>;
  const DT* x = dev::dptr(x_in);
  DT* y = dev::dptr(y_in);
  const int64_t n = N * HW * C;
  if (n <= 0) return;
  const float k = static_cast<float>(scale);
  constexpr int V = dev::vec_width<DT>();
  if (C % V == 0 && dev::pack_aligned(x, 0, V) && dev::pack_aligned(y, 0, V)) {
    SEG_LAUNCH((dropout2d_apply_kernel<DT, V>), dev::grid_blocks(n / V, kBlock, kMaxBlocks), kBlock, 0, stream, x, keep,
               k, HW, C, n / V, y);
  } else {
    SEG_LAUNCH((dropout2d_apply_kernel<DT, 1>), dev::grid_blocks(n, kBlock, kMaxBlocks), kBlock, 0, stream, x, keep, k,
               HW, C, n, y);
  }
}

template void dropout2d_apply<float>(const float*, const uint8_t*, double, int64_t, int64_t, int64_t, float*, Stream);
template void dropout2d_apply<f16>(const f16*, const uint8_t*, double, int64_t, int64_t, int64_t, f16*, Stream);
template void dropout2d_apply<bf16>(const bf16*, const uint8_t*, double, int64_t, int64_t, int64_t, bf16*, Stream);

}  // namespace seg::cuda
