// The one place that chooses how a convolution runs on the GPU (kernels/cuda/conv2d.h):
//   depthwise (groups == C == O > 1)  -> conv2d_depthwise.cu
//   everything else                   -> conv2d_igemm.cu (implicit GEMM on CUDA cores)
// SEG_CUDA_CONV_ALGO=auto|igemm|depthwise|direct (or set_conv_algo) forces a path for tests and
// benchmarks; forcing depthwise on a shape that is not depthwise falls back to automatic.
// The tensor-core kernels (issue 15) add their ConvAlgo value and their branch in pick().
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "kernels/common/half.h"
#include "kernels/cuda/conv2d.h"
#include "kernels/cuda/conv2d_paths.h"

namespace seg::cuda {

namespace {
ConvAlgo algo_from_env() {
  const char* env = std::getenv("SEG_CUDA_CONV_ALGO");
  if (!env) return ConvAlgo::automatic;
  if (!std::strcmp(env, "igemm")) return ConvAlgo::implicit_gemm;
  if (!std::strcmp(env, "depthwise")) return ConvAlgo::depthwise;
  if (!std::strcmp(env, "direct")) return ConvAlgo::direct;
  return ConvAlgo::automatic;
}
std::atomic<int>& algo_state() {
  static std::atomic<int> state{static_cast<int>(algo_from_env())};
  return state;
}
ConvAlgo pick(const ConvShape& s) {
  const ConvAlgo forced = conv_algo();
  if (forced == ConvAlgo::direct || forced == ConvAlgo::implicit_gemm) return forced;
  return conv2d_is_depthwise(s) ? ConvAlgo::depthwise : ConvAlgo::implicit_gemm;
}
}  // namespace

ConvAlgo conv_algo() { return static_cast<ConvAlgo>(algo_state().load(std::memory_order_relaxed)); }
void set_conv_algo(ConvAlgo algo) { algo_state().store(static_cast<int>(algo), std::memory_order_relaxed); }

template <class T> void conv2d_forward(const ConvShape& s, const T* x, const T* w, const T* b, T* y, Stream stream) {
  switch (pick(s)) {
    case ConvAlgo::depthwise: return detail::conv2d_forward_depthwise<T>(s, x, w, b, y, stream);
    case ConvAlgo::direct: return detail::conv2d_forward_direct<T>(s, x, w, b, y, stream);
    default: return detail::conv2d_forward_igemm<T>(s, x, w, b, y, stream);
  }
}

template <class T> void conv2d_backward_data(const ConvShape& s, const T* w, const T* dy, T* dx, Stream stream) {
  switch (pick(s)) {
    case ConvAlgo::depthwise: return detail::conv2d_backward_data_depthwise<T>(s, w, dy, dx, stream);
    case ConvAlgo::direct: return detail::conv2d_backward_data_direct<T>(s, w, dy, dx, stream);
    default: return detail::conv2d_backward_data_igemm<T>(s, w, dy, dx, stream);
  }
}

// Enough for whichever path pick() may choose for this shape now or after set_conv_algo.
size_t conv2d_backward_weight_workspace_bytes(const ConvShape& s) {
  size_t bytes = detail::conv2d_backward_weight_igemm_workspace_bytes(s);
  if (conv2d_is_depthwise(s)) {
    const size_t dw = detail::conv2d_backward_weight_depthwise_workspace_bytes(s);
    if (dw > bytes) bytes = dw;
  }
  return bytes;
}

template <class T>
void conv2d_backward_weight(const ConvShape& s, const T* x, const T* dy, T* dw, T* db, void* workspace, Stream stream) {
  switch (pick(s)) {
    case ConvAlgo::depthwise: return detail::conv2d_backward_weight_depthwise<T>(s, x, dy, dw, db, workspace, stream);
    case ConvAlgo::direct: return detail::conv2d_backward_weight_direct<T>(s, x, dy, dw, db, stream);
    default: return detail::conv2d_backward_weight_igemm<T>(s, x, dy, dw, db, workspace, stream);
  }
}

#define SEG_INSTANTIATE_CUDA_CONV(T)                                                               \
  template void conv2d_forward<T>(const ConvShape&, const T*, const T*, const T*, T*, Stream);     \
  template void conv2d_backward_data<T>(const ConvShape&, const T*, const T*, T*, Stream);         \
  template void conv2d_backward_weight<T>(const ConvShape&, const T*, const T*, T*, T*, void*, Stream);
SEG_INSTANTIATE_CUDA_CONV(float)
SEG_INSTANTIATE_CUDA_CONV(f16)
SEG_INSTANTIATE_CUDA_CONV(bf16)

}  // namespace seg::cuda
