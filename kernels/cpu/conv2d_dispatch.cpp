// The one place that chooses how a float32 convolution runs on the CPU.
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

void conv2d_forward_f32(const ConvShape& s, const float* x, const float* w, const float* b, float* y) {
  switch (pick(s)) {
    case ConvAlgo::depthwise: return conv2d_forward_depthwise(s, x, w, b, y);
    case ConvAlgo::gemm: return conv2d_forward_gemm(s, x, w, b, y);
    default: return conv2d_forward_direct<float>(s, x, w, b, y);
  }
}

void conv2d_backward_data_f32(const ConvShape& s, const float* w, const float* dy, float* dx) {
  switch (pick(s)) {
    case ConvAlgo::depthwise: return conv2d_backward_data_depthwise(s, w, dy, dx);
    case ConvAlgo::gemm: return conv2d_backward_data_gemm(s, w, dy, dx);
    default: return conv2d_backward_data_direct<float>(s, w, dy, dx);
  }
}

void conv2d_backward_weight_f32(const ConvShape& s, const float* x, const float* dy, float* dw, float* db) {
  switch (pick(s)) {
    case ConvAlgo::depthwise: return conv2d_backward_weight_depthwise(s, x, dy, dw, db);
    case ConvAlgo::gemm: return conv2d_backward_weight_gemm(s, x, dy, dw, db);
    default: return conv2d_backward_weight_direct<float>(s, x, dy, dw, db);
  }
}

}  // namespace seg::cpu
