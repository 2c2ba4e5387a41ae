// SGD with momentum on f32 parameters (kernels/cuda/sgd.h: math, launch configuration, traffic).
#include <cstdint>

#include "kernels/cuda/block_reduce.cuh"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/sgd.h"
#include "kernels/cuda/storage_access.cuh"

namespace seg::cuda {

namespace {

using dev::Pack;

constexpr int kBlock = 256;
constexpr int64_t kMaxBlocks = 1024;

struct SgdParams {
  float lr, momentum, weight_decay;
};

// kernels/cpu/sgd.h's three fused multiply-adds, each rounded once (storage_access.cuh).
__device__ __forceinline__ void sgd_one(float& p, float g, float& b, const SgdParams& s) {
  const float d = dev::fma(s.weight_decay, p, g);
  b = dev::fma(s.momentum, b, d);
  p = dev::fma(-s.lr, b, p);
}

// hot-kernel: sgd_momentum_kernel
template <int V>
__global__ void sgd_momentum_kernel(float* __restrict__ p, const float* __restrict__ grad, float* __restrict__ buf,
                                    int64_t n, int64_t head, int64_t packs, SgdParams s) {
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t k = tid; k < packs; k += stride) {
    const int64_t i = head + k * V;
    Pack<float, V> pv = dev::load_pack<float, V>(p + i), bv = dev::load_pack<float, V>(buf + i);
    const Pack<float, V> gv = dev::load_pack<float, V>(grad + i);
    SEG_UNROLL
    for (int j = 0; j < V; ++j) sgd_one(pv.v[j], gv.v[j], bv.v[j], s);
    dev::store_pack<float, V>(p + i, pv);
    dev::store_pack<float, V>(buf + i, bv);
  }
  const int64_t tail = head + packs * V;
  for (int64_t k = tid; k < head + (n - tail); k += stride) {
    const int64_t i = dev::edge_index(k, head, tail);
    float pi = p[i], bi = buf[i];
    sgd_one(pi, grad[i], bi, s);
    p[i] = pi;
    buf[i] = bi;
  }
}

}  // namespace

template <class T>
void sgd_momentum_step(T* p, const T* grad, T* buf, int64_t n, double lr, double momentum, double weight_decay,
                       Stream stream) {
  static_assert(std::is_same_v<T, float>, "the device SGD step is f32 (halves: sgd_half_step, sgd_master_step)");
  if (n <= 0) return;
  const SgdParams s{static_cast<float>(lr), static_cast<float>(momentum), static_cast<float>(weight_decay)};
  const dev::PackSplit split = dev::pack_split<4>(n, p, grad, static_cast<const float*>(buf));
  if (split.vector)
    SEG_LAUNCH(sgd_momentum_kernel<4>, dev::grid_blocks(split.packs, kBlock, kMaxBlocks), kBlock, 0, stream, p, grad,
               buf, n, split.head, split.packs, s);
  else
    SEG_LAUNCH(sgd_momentum_kernel<1>, dev::grid_blocks(n, kBlock, kMaxBlocks), kBlock, 0, stream, p, grad, buf, n,
               int64_t{0}, n, s);
}

template void sgd_momentum_step<float>(float*, const float*, float*, int64_t, double, double, double, Stream);

}  // namespace seg::cuda
