// The one place that chooses how a convolution runs on the GPU (kernels/cuda/conv2d.h):
//   the cudnn engine (engine.h, conv_engine)       -> engine_cudnn.cu
//   depthwise (groups == C == O > 1)               -> conv2d_depthwise.cu
//   conv2d_tc_preferred (groups == 1, or >= 4 input and output channels per group), in f16/bf16,
//   or in f32 while TF32 is allowed (engine.h)     -> conv2d_tc_*.cu (implicit GEMM on tensor cores)
//   everything else (f32 with TF32 off, groups of 1-3 channels)
//                                                  -> conv2d_igemm.cu (implicit GEMM on CUDA cores)
// SEG_CUDA_CONV_ALGO=auto|igemm|depthwise|direct|tc (or set_conv_algo) forces a path for tests and
// benchmarks (a forced path runs on any shape; `tc` in f32 is TF32 even while TF32 is off); forcing
// depthwise on a shape that is not depthwise falls back to automatic. The cudnn engine wins over
// a forced path: SEG_CUDA_CONV_ALGO chooses among the own kernels only.
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "kernels/common/half.h"
#include "kernels/cuda/conv2d.h"
#include "kernels/cuda/conv2d_paths.h"
#include "kernels/cuda/conv2d_tc.h"
#include "kernels/cuda/engine.h"
#include "kernels/cuda/engine_cudnn.h"

namespace seg::cuda {

namespace {
ConvAlgo algo_from_env() {
  const char* env = std::getenv("SEG_CUDA_CONV_ALGO");
  if (!env) return ConvAlgo::automatic;
  if (!std::strcmp(env, "igemm")) return ConvAlgo::implicit_gemm;
  if (!std::strcmp(env, "depthwise")) return ConvAlgo::depthwise;
  if (!std::strcmp(env, "direct")) return ConvAlgo::direct;
  if (!std::strcmp(env, "tc")) return ConvAlgo::tensor_cores;
  return ConvAlgo::automatic;
}
std::atomic<int>& algo_state() {
  static std::atomic<int> state{static_cast<int>(algo_from_env())};
  return state;
}
template <class T>
constexpr DType dtype_of() {
  return std::is_same_v<T, float> ? DType::f32 : std::is_same_v<T, f16> ? DType::f16 : DType::bf16;
}
bool on_cudnn(ConvDirection d, const ConvShape& s, DType t) { return conv_engine(d, s, t) == Engine::cudnn; }
}  // namespace

ConvAlgo conv_algo() { return static_cast<ConvAlgo>(algo_state().load(std::memory_order_relaxed)); }
void set_conv_algo(ConvAlgo algo) { algo_state().store(static_cast<int>(algo), std::memory_order_relaxed); }

template <class T> ConvAlgo conv2d_algo(const ConvShape& s) {
  const ConvAlgo forced = conv_algo();
  if (forced == ConvAlgo::direct || forced == ConvAlgo::implicit_gemm || forced == ConvAlgo::tensor_cores) return forced;
  if (conv2d_is_depthwise(s)) return ConvAlgo::depthwise;
  return conv2d_tc_preferred(s) && use_tensor_cores(dtype_of<T>()) ? ConvAlgo::tensor_cores : ConvAlgo::implicit_gemm;
}

template <class T> void conv2d_forward(const ConvShape& s, const T* x, const T* w, const T* b, T* y, Stream stream) {
  if (on_cudnn(ConvDirection::forward, s, dtype_of<T>())) return conv2d_forward_cudnn<T>(s, x, w, b, y, stream);
  switch (conv2d_algo<T>(s)) {
    case ConvAlgo::tensor_cores: return conv2d_forward_tc<T>(s, x, w, b, y, stream);
    case ConvAlgo::depthwise: return detail::conv2d_forward_depthwise<T>(s, x, w, b, y, stream);
    case ConvAlgo::direct: return detail::conv2d_forward_direct<T>(s, x, w, b, y, stream);
    default: return detail::conv2d_forward_igemm<T>(s, x, w, b, y, stream);
  }
}

template <class T> void conv2d_backward_data(const ConvShape& s, const T* w, const T* dy, T* dx, Stream stream) {
  if (on_cudnn(ConvDirection::backward_data, s, dtype_of<T>())) return conv2d_backward_data_cudnn<T>(s, w, dy, dx, stream);
  switch (conv2d_algo<T>(s)) {
    case ConvAlgo::tensor_cores: return conv2d_backward_data_tc<T>(s, w, dy, dx, stream);
    case ConvAlgo::depthwise: return detail::conv2d_backward_data_depthwise<T>(s, w, dy, dx, stream);
    case ConvAlgo::direct: return detail::conv2d_backward_data_direct<T>(s, w, dy, dx, stream);
    default: return detail::conv2d_backward_data_igemm<T>(s, w, dy, dx, stream);
  }
}

// Enough for whichever path conv2d_algo() may choose, in any dtype, for this shape now or after set_conv_algo.
size_t conv2d_backward_weight_workspace_bytes(const ConvShape& s) {
  size_t bytes = detail::conv2d_backward_weight_igemm_workspace_bytes(s);
  for (const size_t tc : {conv2d_backward_weight_tc_workspace_bytes<float>(s), conv2d_backward_weight_tc_workspace_bytes<f16>(s),
                          conv2d_backward_weight_tc_workspace_bytes<bf16>(s)})
    if (tc > bytes) bytes = tc;
  if (conv2d_is_depthwise(s)) {
    const size_t dw = detail::conv2d_backward_weight_depthwise_workspace_bytes(s);
    if (dw > bytes) bytes = dw;
  }
  return bytes;
}

template <class T>
void conv2d_backward_weight(const ConvShape& s, const T* x, const T* dy, T* dw, T* db, void* workspace, Stream stream) {
  ConvTcArgs tc;
  tc.workspace = TcWorkspace{workspace, conv2d_backward_weight_workspace_bytes(s)};
  if (on_cudnn(ConvDirection::backward_weight, s, dtype_of<T>()))
    return conv2d_backward_weight_cudnn<T>(s, x, dy, dw, db, stream, tc);
  switch (conv2d_algo<T>(s)) {
    case ConvAlgo::tensor_cores: return conv2d_backward_weight_tc<T>(s, x, dy, dw, db, stream, tc);
    case ConvAlgo::depthwise: return detail::conv2d_backward_weight_depthwise<T>(s, x, dy, dw, db, workspace, stream);
    case ConvAlgo::direct: return detail::conv2d_backward_weight_direct<T>(s, x, dy, dw, db, stream);
    default: return detail::conv2d_backward_weight_igemm<T>(s, x, dy, dw, db, workspace, stream);
  }
}

#define SEG_INSTANTIATE_CUDA_CONV(T)                                                               \
  template ConvAlgo conv2d_algo<T>(const ConvShape&);                                              \
  template void conv2d_forward<T>(const ConvShape&, const T*, const T*, const T*, T*, Stream);     \
  template void conv2d_backward_data<T>(const ConvShape&, const T*, const T*, T*, Stream);         \
  template void conv2d_backward_weight<T>(const ConvShape&, const T*, const T*, T*, T*, void*, Stream);
SEG_INSTANTIATE_CUDA_CONV(float)
SEG_INSTANTIATE_CUDA_CONV(f16)
SEG_INSTANTIATE_CUDA_CONV(bf16)

}  // namespace seg::cuda
