// Every float32 convolution path (direct, implicit GEMM, depthwise) against the naive reference,
// forward and both backward halves, on awkward shapes.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "kernels/cpu/conv2d.h"

using namespace seg::cpu;

namespace {
struct Case {
  int64_t N, H, W, C, O, K, stride, pad, dil, groups;
};
const Case kCases[] = {
    {1, 5, 7, 3, 4, 3, 1, 1, 1, 1},    {2, 6, 5, 4, 6, 3, 2, 1, 1, 1},   {1, 9, 8, 4, 4, 3, 1, 2, 2, 1},
    {2, 7, 7, 6, 6, 3, 1, 4, 4, 6},    {1, 8, 9, 8, 8, 3, 2, 1, 1, 8},   {2, 5, 5, 6, 9, 1, 1, 0, 1, 1},
    {1, 6, 6, 4, 6, 3, 1, 1, 1, 2},    {1, 7, 5, 5, 3, 1, 2, 0, 1, 1},   {3, 4, 6, 2, 5, 5, 1, 2, 1, 1},
    {1, 11, 13, 40, 40, 3, 1, 2, 2, 40}, {2, 9, 9, 33, 37, 3, 1, 1, 1, 1}, {1, 16, 16, 17, 70, 1, 1, 0, 1, 1},
    {1, 10, 10, 20, 20, 3, 2, 1, 1, 20}, {2, 12, 10, 24, 30, 3, 2, 1, 1, 1},
};
std::vector<float> fill(int64_t n, float a, float b) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = std::sin(a * static_cast<float>(i) + b);
  return v;
}
double max_err(const std::vector<float>& a, const std::vector<float>& b) {
  double e = 0;
  for (size_t i = 0; i < a.size(); ++i) e = std::max(e, std::abs(double(a[i]) - b[i]));
  return e;
}
}  // namespace

TEST_CASE("conv2d f32 paths equal the reference, forward and backward") {
  const ConvAlgo saved = conv_algo();
  for (const Case& c : kCases) {
    ConvShape s;
    s.N = c.N, s.H = c.H, s.W = c.W, s.C = c.C, s.O = c.O, s.KH = s.KW = c.K;
    s.stride_h = s.stride_w = c.stride, s.pad_h = s.pad_w = c.pad, s.dil_h = s.dil_w = c.dil, s.groups = c.groups;
    const auto x = fill(s.x_numel(), 0.31f, 0.2f), w = fill(s.w_numel(), 0.17f, 0.5f), b = fill(s.O, 0.7f, 0.1f);
    const auto dy = fill(s.y_numel(), 0.13f, 0.9f);
    std::vector<float> y_ref(s.y_numel()), dx_ref(s.x_numel()), dw_ref(s.w_numel()), db_ref(s.O);
    conv2d_forward_ref(s, x.data(), w.data(), b.data(), y_ref.data());
    conv2d_backward_ref(s, x.data(), w.data(), dy.data(), dx_ref.data(), dw_ref.data(), db_ref.data());
    for (ConvAlgo algo : {ConvAlgo::direct, ConvAlgo::gemm, ConvAlgo::depthwise}) {
      if (algo == ConvAlgo::depthwise && !conv2d_is_depthwise(s)) continue;
      set_conv_algo(algo);
      CAPTURE(static_cast<int>(algo));
      CAPTURE(c.H);
      CAPTURE(c.C);
      CAPTURE(c.groups);
      CAPTURE(c.stride);
      std::vector<float> y(s.y_numel()), dx(s.x_numel()), dw(s.w_numel()), db(s.O);
      conv2d_forward_f32(s, x.data(), w.data(), b.data(), y.data());
      conv2d_backward_data_f32(s, w.data(), dy.data(), dx.data());
      conv2d_backward_weight_f32(s, x.data(), dy.data(), dw.data(), db.data());
      const double tol = 2e-5 * std::sqrt(double(s.KH * s.KW * s.Cg() * s.N * s.Ho() * s.Wo()));
      CHECK(max_err(y, y_ref) < tol);
      CHECK(max_err(dx, dx_ref) < tol);
      CHECK(max_err(dw, dw_ref) < tol);
      CHECK(max_err(db, db_ref) < tol);
    }
  }
  set_conv_algo(saved);
}
