// Elementwise maps, the all-element sum and its backward broadcast (kernels/cuda/elementwise.h:
// math, launch configuration and memory traffic are described there).
#include <cstdint>

#include "kernels/cuda/block_reduce.cuh"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/storage_access.cuh"

namespace seg::cuda {

namespace {

using dev::device_t;
using dev::Pack;

constexpr int kBlock = 256;
constexpr int64_t kMaxBlocks = 1024;
constexpr int kSumBlock = 256;
constexpr int64_t kSumPerBlock = 4096;  // elements per pass-1 block before the cap
constexpr int64_t kSumMaxBlocks = 512;

// ---- the operations, on f32 values (single rounding: see storage_access.cuh) ----
struct AddOp {
  __device__ float operator()(float x, float y) const { return dev::add(x, y); }
};
struct MulOp {
  __device__ float operator()(float x, float y) const { return dev::mul(x, y); }
};
struct ScaleOp {
  float k;
  __device__ float operator()(float x) const { return dev::mul(x, k); }
};
// std::max(v, 0) is (v < 0 ? 0 : v), std::min(t, 6) is (6 < t ? 6 : t): the same selects here.
struct ReluOp {
  __device__ float operator()(float v) const { return v < 0.0f ? 0.0f : v; }
};
struct Relu6Op {
  __device__ float operator()(float v) const {
    const float t = v < 0.0f ? 0.0f : v;
    return 6.0f < t ? 6.0f : t;
  }
};
struct ReluBackwardOp {
  __device__ float operator()(float v, float g) const { return v > 0.0f ? g : 0.0f; }
};
struct Relu6BackwardOp {
  __device__ float operator()(float v, float g) const { return (v > 0.0f) & (v < 6.0f) ? g : 0.0f; }
};

// out[i] = op(a[i]): [head, head + packs*V) in packs, the < 2V others one by one.
// hot-kernel: map1_kernel
template <class T, int V, class Op>
__global__ void map1_kernel(const T* a, T* out, int64_t n, int64_t head, int64_t packs, Op op) {
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t k = tid; k < packs; k += stride) {
    const int64_t i = head + k * V;
    const Pack<T, V> x = dev::load_pack<T, V>(a + i);
    Pack<T, V> y;
    SEG_UNROLL
    for (int j = 0; j < V; ++j) y.v[j] = dev::from_float<T>(op(dev::to_float(x.v[j])));
    dev::store_pack<T, V>(out + i, y);
  }
  const int64_t tail = head + packs * V;
  for (int64_t k = tid; k < head + (n - tail); k += stride) {
    const int64_t i = k < head ? k : tail + (k - head);
    out[i] = dev::from_float<T>(op(dev::to_float(a[i])));
  }
}

// out[i] = op(a[i], b[i]).
// hot-kernel: map2_kernel
template <class T, int V, class Op>
__global__ void map2_kernel(const T* a, const T* b, T* out, int64_t n, int64_t head, int64_t packs, Op op) {
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t k = tid; k < packs; k += stride) {
    const int64_t i = head + k * V;
    const Pack<T, V> x = dev::load_pack<T, V>(a + i);
    const Pack<T, V> y = dev::load_pack<T, V>(b + i);
    Pack<T, V> z;
    SEG_UNROLL
    for (int j = 0; j < V; ++j) z.v[j] = dev::from_float<T>(op(dev::to_float(x.v[j]), dev::to_float(y.v[j])));
    dev::store_pack<T, V>(out + i, z);
  }
  const int64_t tail = head + packs * V;
  for (int64_t k = tid; k < head + (n - tail); k += stride) {
    const int64_t i = k < head ? k : tail + (k - head);
    out[i] = dev::from_float<T>(op(dev::to_float(a[i]), dev::to_float(b[i])));
  }
}

// The vector width and scalar head for a set of pointers, or V = 1 when they do not align together.
struct Split {
  bool vector;
  int64_t head, packs;
};
template <class T, class... Ptrs> Split split_for(int64_t n, const T* first, Ptrs... others) {
  constexpr int V = dev::vec_width<T>();
  int64_t head = dev::aligned_start(first, V);
  if (head > n) head = n;
  const bool together = (dev::pack_aligned(others, head, V) && ...);
  if (!together || n - head < V) return Split{false, 0, n};
  return Split{true, head, (n - head) / V};
}

template <class T, class Op> void launch_map1(const T* a, T* out, int64_t n, Op op, Stream stream) {
  if (n <= 0) return;
  constexpr int V = dev::vec_width<T>();
  const Split s = split_for(n, a, static_cast<const T*>(out));
  if (s.vector)
    SEG_LAUNCH((map1_kernel<T, V, Op>), dev::grid_blocks(s.packs, kBlock, kMaxBlocks), kBlock, 0, stream, a, out, n,
               s.head, s.packs, op);
  else
    SEG_LAUNCH((map1_kernel<T, 1, Op>), dev::grid_blocks(n, kBlock, kMaxBlocks), kBlock, 0, stream, a, out, n,
               int64_t{0}, n, op);
}

template <class T, class Op> void launch_map2(const T* a, const T* b, T* out, int64_t n, Op op, Stream stream) {
  if (n <= 0) return;
  constexpr int V = dev::vec_width<T>();
  const Split s = split_for(n, a, b, static_cast<const T*>(out));
  if (s.vector)
    SEG_LAUNCH((map2_kernel<T, V, Op>), dev::grid_blocks(s.packs, kBlock, kMaxBlocks), kBlock, 0, stream, a, b, out,
               n, s.head, s.packs, op);
  else
    SEG_LAUNCH((map2_kernel<T, 1, Op>), dev::grid_blocks(n, kBlock, kMaxBlocks), kBlock, 0, stream, a, b, out, n,
               int64_t{0}, n, op);
}

// ---- sum ----
int sum_blocks(int64_t n) { return dev::grid_blocks(n, kSumPerBlock, kSumMaxBlocks); }

// Pass 1: partial[blockIdx.x] = f32 sum of this block's grid-stride elements (packs when aligned).
template <class T, int V>
__global__ void sum_partials_kernel(const T* a, int64_t n, int64_t head, int64_t packs, float* partial) {
  __shared__ float scratch[32];
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  float s = 0.0f;
  for (int64_t k = tid; k < packs; k += stride) {
    const Pack<T, V> x = dev::load_pack<T, V>(a + head + k * V);
    SEG_UNROLL
    for (int j = 0; j < V; ++j) s += dev::to_float(x.v[j]);
  }
  const int64_t tail = head + packs * V;
  for (int64_t k = tid; k < head + (n - tail); k += stride) s += dev::to_float(a[k < head ? k : tail + (k - head)]);
  s = dev::block_sum(s, scratch);
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

// Pass 2 (one block): out = T(float(double(sum of partials) * factor)), the partials in a fixed order.
template <class T>
__global__ void sum_finish_kernel(const float* partial, int count, double factor, T* out) {
  __shared__ float scratch[32];
  float s = 0.0f;
  for (int i = static_cast<int>(threadIdx.x); i < count; i += static_cast<int>(blockDim.x)) s += partial[i];
  s = dev::block_sum(s, scratch);
  if (threadIdx.x == 0) out[0] = dev::from_float<T>(static_cast<float>(static_cast<double>(s) * factor));
}

template <class T, int V>
__global__ void fill_from_scalar_kernel(const T* scalar, double factor, T* out, int64_t n, int64_t head, int64_t packs) {
  const T value = dev::from_float<T>(static_cast<float>(static_cast<double>(dev::to_float(scalar[0])) * factor));
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  Pack<T, V> p;
  SEG_UNROLL
  for (int j = 0; j < V; ++j) p.v[j] = value;
  for (int64_t k = tid; k < packs; k += stride) dev::store_pack<T, V>(out + head + k * V, p);
  const int64_t tail = head + packs * V;
  for (int64_t k = tid; k < head + (n - tail); k += stride) out[k < head ? k : tail + (k - head)] = value;
}

}  // namespace

template <class T> void add(const T* a, const T* b, T* out, int64_t n, Stream stream) {
  launch_map2(dev::dptr(a), dev::dptr(b), dev::dptr(out), n, AddOp{}, stream);
}
template <class T> void add_inplace(T* dst, const T* src, int64_t n, Stream stream) {
  launch_map2(dev::dptr(static_cast<const T*>(dst)), dev::dptr(src), dev::dptr(dst), n, AddOp{}, stream);
}
template <class T> void mul(const T* a, const T* b, T* out, int64_t n, Stream stream) {
  launch_map2(dev::dptr(a), dev::dptr(b), dev::dptr(out), n, MulOp{}, stream);
}
template <class T> void scale(const T* a, double s, T* out, int64_t n, Stream stream) {
  launch_map1(dev::dptr(a), dev::dptr(out), n, ScaleOp{static_cast<float>(s)}, stream);
}
template <class T> void relu_forward(const T* x, T* y, int64_t n, bool relu6, Stream stream) {
  if (relu6) launch_map1(dev::dptr(x), dev::dptr(y), n, Relu6Op{}, stream);
  else launch_map1(dev::dptr(x), dev::dptr(y), n, ReluOp{}, stream);
}
template <class T> void relu_backward(const T* x, const T* dy, T* dx, int64_t n, bool relu6, Stream stream) {
  if (relu6) launch_map2(dev::dptr(x), dev::dptr(dy), dev::dptr(dx), n, Relu6BackwardOp{}, stream);
  else launch_map2(dev::dptr(x), dev::dptr(dy), dev::dptr(dx), n, ReluBackwardOp{}, stream);
}

size_t sum_workspace_bytes(int64_t n) { return static_cast<size_t>(sum_blocks(n)) * sizeof(float); }

template <class T> void sum(const T* a_in, int64_t n, double factor, T* out, void* workspace, Stream stream) {
  using DT = device_t<T>;
  const DT* a = dev::dptr(a_in);
  float* partial = static_cast<float*>(workspace);
  const int blocks = sum_blocks(n);
  constexpr int V = dev::vec_width<DT>();
  const Split s = n > 0 ? split_for(n, a) : Split{false, 0, 0};
  if (s.vector)
    SEG_LAUNCH((sum_partials_kernel<DT, V>), blocks, kSumBlock, 0, stream, a, n, s.head, s.packs, partial);
  else
    SEG_LAUNCH((sum_partials_kernel<DT, 1>), blocks, kSumBlock, 0, stream, a, n, int64_t{0}, n, partial);
  SEG_LAUNCH((sum_finish_kernel<DT>), 1, kSumBlock, 0, stream, static_cast<const float*>(partial), blocks, factor,
             dev::dptr(out));
}

template <class T> void fill_from_device_scalar(const T* scalar, double factor, T* out_in, int64_t n, Stream stream) {
  if (n <= 0) return;
  using DT = device_t<T>;
  DT* out = dev::dptr(out_in);
  constexpr int V = dev::vec_width<DT>();
  const Split s = split_for(n, static_cast<const DT*>(out));
  if (s.vector)
    SEG_LAUNCH((fill_from_scalar_kernel<DT, V>), dev::grid_blocks(s.packs, kBlock, kMaxBlocks), kBlock, 0, stream,
               dev::dptr(scalar), factor, out, n, s.head, s.packs);
  else
    SEG_LAUNCH((fill_from_scalar_kernel<DT, 1>), dev::grid_blocks(n, kBlock, kMaxBlocks), kBlock, 0, stream,
               dev::dptr(scalar), factor, out, n, int64_t{0}, n);
}

#define SEG_ELEMENTWISE_INSTANTIATE(T)                                                      \
  template void add<T>(const T*, const T*, T*, int64_t, Stream);                           \
  template void add_inplace<T>(T*, const T*, int64_t, Stream);                             \
  template void mul<T>(const T*, const T*, T*, int64_t, Stream);                           \
  template void scale<T>(const T*, double, T*, int64_t, Stream);                           \
  template void relu_forward<T>(const T*, T*, int64_t, bool, Stream);                      \
  template void relu_backward<T>(const T*, const T*, T*, int64_t, bool, Stream);           \
  template void sum<T>(const T*, int64_t, double, T*, void*, Stream);                      \
  template void fill_from_device_scalar<T>(const T*, double, T*, int64_t, Stream);
SEG_ELEMENTWISE_INSTANTIATE(float)
SEG_ELEMENTWISE_INSTANTIATE(f16)
SEG_ELEMENTWISE_INSTANTIATE(bf16)
#undef SEG_ELEMENTWISE_INSTANTIATE

}  // namespace seg::cuda
