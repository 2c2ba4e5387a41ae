// Every convolution path (direct, implicit GEMM, depthwise) against the naive reference, forward and
// both backward halves, on awkward shapes, in float32 (the production dtype) and float64 (the same
// paths: gradient checks and the float64 golden runs rely on them).
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "kernels/cpu/conv2d.h"
#include "tests/common/compare.h"

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
    // Depthwise with the register-blocked float loop: several 4-pixel blocks and 16-channel blocks,
    // leftover pixels and channels (W = 21, C = 48 + 3 = 51); stride 2 with dilation; a padding wider
    // than the dilated kernel (backward data cannot use the flipped forward there).
    {2, 7, 21, 51, 51, 3, 1, 1, 1, 51}, {1, 9, 19, 32, 32, 3, 2, 2, 2, 32}, {1, 6, 9, 16, 16, 3, 1, 3, 1, 16},
    // Depthwise 2x2 and 1x1: the backward weight's plain loop (the register block is for 3x3 only).
    {1, 7, 21, 24, 24, 2, 1, 1, 1, 24}, {2, 5, 9, 16, 16, 1, 1, 0, 1, 16},
    // The first layer of a model: 3 input channels (the automatic backward weight is direct), many
    // pixel chunks (P = 2 x 40 x 64 = 5120 > 2048) and more than 64 outputs (two output blocks).
    {2, 80, 128, 3, 70, 3, 2, 1, 1, 1},
};
template <class T>
std::vector<T> fill(int64_t n, float a, float b) {
  std::vector<T> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<T>(std::sin(a * static_cast<float>(i) + b));
  return v;
}

template <class T>
void check_paths_against_reference() {
  const ConvAlgo saved = conv_algo();
  for (const Case& c : kCases) {
    ConvShape s;
    s.N = c.N, s.H = c.H, s.W = c.W, s.C = c.C, s.O = c.O, s.KH = s.KW = c.K;
    s.stride_h = s.stride_w = c.stride, s.pad_h = s.pad_w = c.pad, s.dil_h = s.dil_w = c.dil, s.groups = c.groups;
    const auto x = fill<T>(s.x_numel(), 0.31f, 0.2f), w = fill<T>(s.w_numel(), 0.17f, 0.5f), b = fill<T>(s.O, 0.7f, 0.1f);
    const auto dy = fill<T>(s.y_numel(), 0.13f, 0.9f);
    std::vector<T> y_ref(s.y_numel()), dx_ref(s.x_numel()), dw_ref(s.w_numel()), db_ref(s.O);
    conv2d_forward_ref(s, x.data(), w.data(), b.data(), y_ref.data());
    conv2d_backward_ref(s, x.data(), w.data(), dy.data(), dx_ref.data(), dw_ref.data(), db_ref.data());
    // Sums of up to KH*KW*Cg*N*Ho*Wo products of values in [-1, 1], in another order than the
    // reference's double sums: the rounding grows with sqrt(terms) (2e-5 per sqrt(term) in f32 is
    // ~170 ulps of float; 1e-13 in f64 is ~450 ulps of double).
    const double terms = std::sqrt(double(s.KH * s.KW * s.Cg() * s.N * s.Ho() * s.Wo()));
    const seg::test::Tolerance tol{(sizeof(T) == 4 ? 2e-5 : 1e-13) * terms, 0};
    for (ConvAlgo algo : {ConvAlgo::direct, ConvAlgo::gemm, ConvAlgo::depthwise}) {
      if (algo == ConvAlgo::depthwise && !conv2d_is_depthwise(s)) continue;  // not a path for this shape
      set_conv_algo(algo);
      CAPTURE(sizeof(T));
      CAPTURE(static_cast<int>(algo));
      CAPTURE(c.H);
      CAPTURE(c.C);
      CAPTURE(c.groups);
      CAPTURE(c.stride);
      std::vector<T> y(s.y_numel()), dx(s.x_numel()), dw(s.w_numel()), db(s.O);
      conv2d_forward(s, x.data(), w.data(), b.data(), y.data());
      conv2d_backward_data(s, w.data(), dy.data(), dx.data());
      conv2d_backward_weight(s, x.data(), dy.data(), dw.data(), db.data());
      SEG_CHECK_CLOSE(y, y_ref, tol);
      SEG_CHECK_CLOSE(dx, dx_ref, tol);
      SEG_CHECK_CLOSE(dw, dw_ref, tol);
      SEG_CHECK_CLOSE(db, db_ref, tol);
    }
  }
  set_conv_algo(saved);
}
}  // namespace

TEST_CASE("conv2d f32 paths equal the reference, forward and backward") { check_paths_against_reference<float>(); }

TEST_CASE("conv2d f64 paths (the same implicit GEMM and depthwise loops) equal the reference") {
  check_paths_against_reference<double>();
}
