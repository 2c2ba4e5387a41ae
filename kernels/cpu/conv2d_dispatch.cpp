// The one place that chooses how a convolution runs on the CPU, float32 and float64 alike.
//   depthwise (groups == C == O)  -> conv2d_depthwise.cpp (vector loops over channels)
//   everything else               -> conv2d_gemm.cpp (implicit GEMM)
// SEG_CONV_ALGO=direct|gemm|depthwise|auto (or set_conv_algo) forces a path for tests and benchmarks;
// forcing depthwise on a non-depthwise shape falls back to automatic.
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "kernels/cpu/conv2d.h"

namespace seg::cpu {

namespace {
ConvAlgo algo_from_env() {
  const char* env = std::getenv("SEG_CONV_ALGO");
  if (!env) return ConvAlgo::automatic;
  if (!std::strcmp(env, "direct")) return ConvAlgo::direct;
  if (!std::strcmp(env, "gemm")) return ConvAlgo::gemm;
  if (!std::strcmp(env, "depthwise")) return ConvAlgo::depthwise;
  return ConvAlgo::automatic;
}
std::atomic<int>& algo_state() {
  static std::atomic<int> state{static_cast<int>(algo_from_env())};
  return state;
}
ConvAlgo pick(const ConvShape& s) {
  const ConvAlgo forced = conv_algo();
  if (forced == ConvAlgo::direct || forced == ConvAlgo::gemm) return forced;
  return conv2d_is_depthwise(s) ? ConvAlgo::depthwise : ConvAlgo::gemm;
}
}  // namespace

ConvAlgo conv_algo() { return static_cast<ConvAlgo>(algo_state().load(std::memory_order_relaxed)); }
void set_conv_algo(ConvAlgo algo) { algo_state().store(static_cast<int>(algo), std::memory_order_relaxed); }

template <class T>
void conv2d_forward(const ConvShape& s, const T* x, const T* w, const T* b, T* y) {
  switch (pick(s)) {
    case ConvAlgo::depthwise: return conv2d_forward_depthwise<T>(s, x, w, b, y);
    case ConvAlgo::gemm: return conv2d_forward_gemm<T>(s, x, w, b, y);
    default: return conv2d_forward_direct<T>(s, x, w, b, y);
  }
}

template <class T>
void conv2d_backward_data(const ConvShape& s, const T* w, const T* dy, T* dx) {
  switch (pick(s)) {
    case ConvAlgo::depthwise: return conv2d_backward_data_depthwise<T>(s, w, dy, dx);
    case ConvAlgo::gemm: return conv2d_backward_data_gemm<T>(s, w, dy, dx);
    default: return conv2d_backward_data_direct<T>(s, w, dy, dx);
  }
}

template <class T>
void conv2d_backward_weight(const ConvShape& s, const T* x, const T* dy, T* dw, T* db) {
  switch (pick(s)) {
    case ConvAlgo::depthwise: return conv2d_backward_weight_depthwise<T>(s, x, dy, dw, db);
    case ConvAlgo::gemm: return conv2d_backward_weight_gemm<T>(s, x, dy, dw, db);
    default: return conv2d_backward_weight_direct<T>(s, x, dy, dw, db);
  }
}

#define SEG_CONV_DISPATCH_INSTANTIATE(T)                                                       \
  template void conv2d_forward<T>(const ConvShape&, const T*, const T*, const T*, T*);       \
  template void conv2d_backward_data<T>(const ConvShape&, const T*, const T*, T*);           \
  template void conv2d_backward_weight<T>(const ConvShape&, const T*, const T*, T*, T*);
SEG_CONV_DISPATCH_INSTANTIATE(float)
SEG_CONV_DISPATCH_INSTANTIATE(double)
#undef SEG_CONV_DISPATCH_INSTANTIATE

}  // namespace seg::cpu
