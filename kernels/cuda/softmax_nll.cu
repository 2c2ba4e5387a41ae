// Fused log-softmax + NLL loss, its backward, and pixel accuracy (kernels/cuda/softmax_nll.h: math,
// the device result, launch configuration, memory traffic and accuracy against the CPU).
#include <cmath>
#include <cstdint>

#include "kernels/cuda/channel_rows.cuh"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/softmax_nll.h"
#include "kernels/cuda/storage_access.cuh"

namespace seg::cuda {

namespace {

using dev::device_t;

constexpr int64_t kNoBad = 0x7FFFFFFFFFFFFFFF;

// Workspace of the loss: int64 valid[B], int64 bad[B], float loss[B].
struct LossPartials {
  int64_t* valid;
  int64_t* bad;
  float* loss;
};
LossPartials loss_partials(void* workspace, int blocks) {
  auto* base = static_cast<int64_t*>(workspace);
  return LossPartials{base, base + blocks, reinterpret_cast<float*>(base + 2 * static_cast<int64_t>(blocks))};
}

// Pass 1: lse for every pixel; per block the f32 loss sum, the valid count and the first bad pixel.
// hot-kernel: nll_forward_kernel
template <class T>
__global__ void nll_forward_kernel(const T* __restrict__ logits, const int32_t* __restrict__ labels, int64_t P, int64_t C,
                                   int G, float* __restrict__ lse, LossPartials part) {
  __shared__ float warp_loss[32];
  __shared__ int64_t warp_valid[32], warp_bad[32];
  const int gl = static_cast<int>(threadIdx.x) & (G - 1);
  const int64_t rows_per_block = blockDim.x / G;
  float loss = 0.0f;
  int64_t valid = 0, bad = kNoBad;
  for (int64_t base = blockIdx.x * rows_per_block; base < P; base += static_cast<int64_t>(gridDim.x) * rows_per_block) {
    const int64_t row = base + threadIdx.x / G;
    const bool active = row < P;
    const T* xr = logits + row * C;
    float m = -INFINITY;
    if (active)
      for (int64_t c = gl; c < C; c += G) m = dev::max_keep_nan(m, dev::to_float(xr[c]));
    m = dev::group_max(m, G);
    float s = 0.0f;
    if (active)
      for (int64_t c = gl; c < C; c += G) s += expf(dev::to_float(xr[c]) - m);
    s = dev::group_sum(s, G);
    if (active && gl == 0) {
      const float l = m + logf(s);
      lse[row] = l;
      const int32_t y = labels[row];
      if (y < -1 || y >= C) {
        if (row < bad) bad = row;
      } else if (y >= 0) {
        loss += l - dev::to_float(xr[y]);
        ++valid;
      }
    }
  }
  // Only group leaders hold accumulations: reduce over leaders, then over warps in order.
  dev::leaders_to_scratch(loss, G, warp_loss, dev::SumOp{});
  dev::leaders_to_scratch(valid, G, warp_valid, dev::SumOp{});
  dev::leaders_to_scratch(bad, G, warp_bad, dev::MinOp{});
  __syncthreads();
  if (threadIdx.x == 0) {
    part.loss[blockIdx.x] = dev::fold_warps(warp_loss, dev::SumOp{});
    part.valid[blockIdx.x] = dev::fold_warps(warp_valid, dev::SumOp{});
    part.bad[blockIdx.x] = dev::fold_warps(warp_bad, dev::MinOp{});
  }
}

// Pass 2 (one block): the partials in a fixed order, into the device result.
__global__ void nll_finish_kernel(LossPartials part, int count, const int32_t* __restrict__ labels,
                                  NllDeviceResult* __restrict__ result, float* __restrict__ loss_out) {
  __shared__ float scratch_f[32];
  __shared__ int64_t scratch_i[32];
  float loss = 0.0f;
  int64_t valid = 0, bad = kNoBad;
  for (int i = static_cast<int>(threadIdx.x); i < count; i += static_cast<int>(blockDim.x)) {
    loss += part.loss[i];
    valid += part.valid[i];
    if (part.bad[i] < bad) bad = part.bad[i];
  }
  loss = dev::block_sum(loss, scratch_f);
  valid = dev::block_sum(valid, scratch_i);
  bad = dev::block_min(bad, scratch_i);
  if (threadIdx.x == 0) {
    const float mean = valid > 0 ? static_cast<float>(static_cast<double>(loss) / static_cast<double>(valid)) : 0.0f;
    result->loss_sum = loss;
    result->loss = mean;
    result->valid = valid;
    result->bad_pixel = bad == kNoBad ? -1 : bad;
    result->bad_label = bad == kNoBad ? 0 : labels[bad];
    if (loss_out != nullptr) *loss_out = mean;
  }
}

// dlogits; k from the host, or from the device when grad_loss is given.
// hot-kernel: nll_backward_kernel
template <class T>
__global__ void nll_backward_kernel(const T* __restrict__ logits, const int32_t* __restrict__ labels,
                                    const float* __restrict__ lse, int64_t P, int64_t C, int G, float k_host,
                                    const float* __restrict__ grad_loss, const NllDeviceResult* __restrict__ result,
                                    T* __restrict__ dlogits) {
  float k = k_host;
  if (grad_loss != nullptr) {
    const int64_t valid = result->valid;
    k = valid > 0 ? static_cast<float>(static_cast<double>(*grad_loss) / static_cast<double>(valid)) : 0.0f;
  }
  const int gl = static_cast<int>(threadIdx.x) & (G - 1);
  const int64_t rows_per_block = blockDim.x / G;
  for (int64_t base = blockIdx.x * rows_per_block; base < P; base += static_cast<int64_t>(gridDim.x) * rows_per_block) {
    const int64_t row = base + threadIdx.x / G;
    if (row >= P) continue;
    T* d = dlogits + row * C;
    const int32_t y = labels[row];
    if (y < 0 || y >= C) {
      for (int64_t c = gl; c < C; c += G) d[c] = dev::from_float<T>(0.0f);
      continue;
    }
    const T* xr = logits + row * C;
    const float l = lse[row];
    for (int64_t c = gl; c < C; c += G) {
      float v = dev::mul(k, expf(dev::to_float(xr[c]) - l));
      if (c == y) v = dev::sub(v, k);
      d[c] = dev::from_float<T>(v);
    }
  }
}

// Pixel accuracy, pass 1: per block the labelled and correct counts.
template <class T>
__global__ void accuracy_kernel(const T* __restrict__ logits, const int32_t* __restrict__ labels, int64_t P, int64_t C,
                                int G, int64_t* __restrict__ part_correct, int64_t* __restrict__ part_labelled) {
  __shared__ int64_t warp_correct[32], warp_labelled[32];
  const int gl = static_cast<int>(threadIdx.x) & (G - 1);
  const int64_t rows_per_block = blockDim.x / G;
  int64_t correct = 0, labelled = 0;
  for (int64_t base = blockIdx.x * rows_per_block; base < P; base += static_cast<int64_t>(gridDim.x) * rows_per_block) {
    const int64_t row = base + threadIdx.x / G;
    const bool active = row < P;
    uint64_t key = 0;
    if (active)
      for (int64_t c = gl; c < C; c += G) {
        const uint64_t k = dev::argmax_key(dev::to_float(logits[row * C + c]), c);
        key = k > key ? k : key;
      }
    key = dev::group_max_key(key, G);
    const int32_t where = dev::argmax_index(key);
    if (active && gl == 0) {
      const int32_t y = labels[row];
      if (y >= 0) {
        ++labelled;
        correct += where == y ? 1 : 0;
      }
    }
  }
  dev::leaders_to_scratch(correct, G, warp_correct, dev::SumOp{});
  dev::leaders_to_scratch(labelled, G, warp_labelled, dev::SumOp{});
  __syncthreads();
  if (threadIdx.x == 0) {
    part_correct[blockIdx.x] = dev::fold_warps(warp_correct, dev::SumOp{});
    part_labelled[blockIdx.x] = dev::fold_warps(warp_labelled, dev::SumOp{});
  }
}

__global__ void accuracy_finish_kernel(const int64_t* __restrict__ part_correct, const int64_t* __restrict__ part_labelled,
                                       int count, NllDeviceResult* __restrict__ result) {
  __shared__ int64_t scratch[32];
  int64_t correct = 0, labelled = 0;
  for (int i = static_cast<int>(threadIdx.x); i < count; i += static_cast<int>(blockDim.x)) {
    correct += part_correct[i];
    labelled += part_labelled[i];
  }
  correct = dev::block_sum(correct, scratch);
  labelled = dev::block_sum(labelled, scratch);
  if (threadIdx.x == 0) {
    result->correct = correct;
    result->labelled = labelled;
  }
}

constexpr int kFinishBlock = 256;

}  // namespace

size_t softmax_nll_workspace_bytes(int64_t P, int64_t C) {
  return static_cast<size_t>(dev::row_blocks(P, C)) * (2 * sizeof(int64_t) + sizeof(float));
}
size_t pixel_accuracy_workspace_bytes(int64_t P, int64_t C) {
  return static_cast<size_t>(dev::row_blocks(P, C)) * 2 * sizeof(int64_t);
}

template <class T>
void softmax_nll_forward(const T* logits, const int32_t* labels, int64_t P, int64_t C, float* lse,
                         NllDeviceResult* result, float* loss_out, void* workspace, Stream stream) {
  const int blocks = dev::row_blocks(P, C);
  const LossPartials part = loss_partials(workspace, blocks);
  SEG_LAUNCH((nll_forward_kernel<device_t<T>>), blocks, dev::kRowBlock, 0, stream, dev::dptr(logits), labels, P, C,
             dev::group_width(C), lse, part);
  SEG_LAUNCH(nll_finish_kernel, 1, kFinishBlock, 0, stream, part, blocks, labels, result, loss_out);
}

template <class T>
void softmax_nll_backward(const T* logits, const int32_t* labels, const float* lse, int64_t P, int64_t C, double scale,
                          T* dlogits, Stream stream) {
  if (P <= 0) return;
  SEG_LAUNCH((nll_backward_kernel<device_t<T>>), dev::row_blocks(P, C), dev::kRowBlock, 0, stream, dev::dptr(logits),
             labels, lse, P, C, dev::group_width(C), static_cast<float>(scale), static_cast<const float*>(nullptr),
             static_cast<const NllDeviceResult*>(nullptr), dev::dptr(dlogits));
}

template <class T>
void softmax_nll_backward_device_scale(const T* logits, const int32_t* labels, const float* lse, int64_t P, int64_t C,
                                       const float* grad_loss, const NllDeviceResult* result, T* dlogits,
                                       Stream stream) {
  if (P <= 0) return;
  SEG_LAUNCH((nll_backward_kernel<device_t<T>>), dev::row_blocks(P, C), dev::kRowBlock, 0, stream, dev::dptr(logits),
             labels, lse, P, C, dev::group_width(C), 0.0f, grad_loss, result, dev::dptr(dlogits));
}

template <class T>
void pixel_accuracy(const T* logits, const int32_t* labels, int64_t P, int64_t C, NllDeviceResult* result,
                    void* workspace, Stream stream) {
  const int blocks = dev::row_blocks(P, C);
  auto* part_correct = static_cast<int64_t*>(workspace);
  int64_t* part_labelled = part_correct + blocks;
  SEG_LAUNCH((accuracy_kernel<device_t<T>>), blocks, dev::kRowBlock, 0, stream, dev::dptr(logits), labels, P, C,
             dev::group_width(C), part_correct, part_labelled);
  SEG_LAUNCH(accuracy_finish_kernel, 1, kFinishBlock, 0, stream, static_cast<const int64_t*>(part_correct),
             static_cast<const int64_t*>(part_labelled), blocks, result);
}

#define SEG_NLL_INSTANTIATE(T)                                                                                      \
  template void softmax_nll_forward<T>(const T*, const int32_t*, int64_t, int64_t, float*, NllDeviceResult*, float*, \
                                       void*, Stream);                                                              \
  template void softmax_nll_backward<T>(const T*, const int32_t*, const float*, int64_t, int64_t, double, T*,        \
                                        Stream);                                                                     \
  template void softmax_nll_backward_device_scale<T>(const T*, const int32_t*, const float*, int64_t, int64_t,       \
                                                     const float*, const NllDeviceResult*, T*, Stream);              \
  template void pixel_accuracy<T>(const T*, const int32_t*, int64_t, int64_t, NllDeviceResult*, void*, Stream);
SEG_NLL_INSTANTIATE(float)
SEG_NLL_INSTANTIATE(f16)
SEG_NLL_INSTANTIATE(bf16)
#undef SEG_NLL_INSTANTIATE

}  // namespace seg::cuda
