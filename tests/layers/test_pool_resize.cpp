#include <doctest/doctest.h>

#include <limits>

#include "core/autograd.h"
#include "core/gradcheck.h"
#include "kernels/cpu/pool.h"
#include "layers/ops.h"
#include "tests/layers/test_helpers.h"

using namespace seg;
using seg::test::randn;
using seg::test::Tolerance;

TEST_CASE("max_pool2d 3x3 s2 p1 gives ceil(H/2) and equals the reference, ties and NaN included") {
  for (int64_t H : {1, 2, 5, 8, 9}) {
    CAPTURE(H);
    const int64_t W = H + 2;
    Tensor x = randn({2, H, W, 3}, DType::f32, static_cast<uint64_t>(H));
    // Round to a coarse grid so windows contain ties; plant a NaN.
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = std::round(x.data<float>()[i] * 2) / 2;
    x.data<float>()[x.numel() / 2] = std::numeric_limits<float>::quiet_NaN();
    const Tensor y = ops::max_pool2d(x, 3, 2, 1);
    CHECK(y.size(1) == (H + 1) / 2);
    CHECK(y.size(2) == (W + 1) / 2);
    cpu::PoolShape s;
    s.N = 2, s.H = H, s.W = W, s.C = 3;
    Tensor y_ref = Tensor::empty(y.shape()), arg_ref = Tensor::empty(y.shape(), DType::i32);
    cpu::maxpool2d_forward_ref(s, x.data<float>(), y_ref.data<float>(), arg_ref.data<int32_t>());
    Tensor y2 = Tensor::empty(y.shape()), arg = Tensor::empty(y.shape(), DType::i32);
    cpu::maxpool2d_forward(s, x.data<float>(), y2.data<float>(), arg.data<int32_t>());
    // The reference ignores NaN semantics (it keeps the first maximum it compares true with): the
    // expected values are the reference's, except in the windows that hold the planted NaN, which
    // must be NaN as in PyTorch (their argmax is not compared).
    const int64_t planted = x.numel() / 2, pc = planted % 3, pw = (planted / 3) % W, ph = (planted / (3 * W)) % H,
                  pn = planted / (3 * W * H);
    const auto vy = y2.to_vector<float>(), vy_op = y.to_vector<float>();
    auto want = y_ref.to_vector<float>();
    auto ai = arg.to_vector<int32_t>(), ar = arg_ref.to_vector<int32_t>();
    int nan_windows = 0;
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t ho = 0; ho < y.size(1); ++ho)
        for (int64_t wo = 0; wo < y.size(2); ++wo) {
          const bool holds = n == pn && std::abs(ph - 2 * ho) <= 1 && std::abs(pw - 2 * wo) <= 1;
          if (!holds) continue;
          const size_t i = static_cast<size_t>(((n * y.size(1) + ho) * y.size(2) + wo) * 3 + pc);
          want[i] = std::numeric_limits<float>::quiet_NaN();
          ai[i] = ar[i] = -1;
          ++nan_windows;
        }
    SEG_CHECK_CLOSE(vy, want, Tolerance{});
    SEG_CHECK_CLOSE(ai, ar, Tolerance{});     // the first maximum in window order
    SEG_CHECK_CLOSE(vy_op, vy, Tolerance{});  // the op gives the kernel's result
    CHECK(nan_windows >= 1);  // NaN propagates, as in PyTorch
  }
}

TEST_CASE("max_pool2d gradient goes to the window maximum") {
  const Tensor x = randn({2, 7, 6, 3}, DType::f64, 3);
  GradCheckOptions opt;
  opt.skip_kinks = true;
  const GradCheckResult r =
      gradcheck([](const std::vector<Tensor>& in) { return ops::max_pool2d(in[0], 3, 2, 1); }, {x}, opt);
  CHECK_MESSAGE(r.ok, r.report);
  CHECK(r.checked > 100);
}

TEST_CASE("adaptive_avg_pool2d uses PyTorch's window rule (PPM scales on sizes that do not divide)") {
  const int64_t H = 9, W = 11, C = 2;
  const Tensor x = randn({2, H, W, C}, DType::f64, 5);
  for (int64_t s : {1, 2, 3, 6}) {
    CAPTURE(s);
    const Tensor y = ops::adaptive_avg_pool2d(x, s, s);
    const auto vx = x.to_vector<double>(), vy = y.to_vector<double>();
    std::vector<double> want(vy.size());
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t i = 0; i < s; ++i)
        for (int64_t j = 0; j < s; ++j)
          for (int64_t c = 0; c < C; ++c) {
            // Written independently: start = floor(i*H/s), end = ceil((i+1)*H/s).
            const int64_t h0 = static_cast<int64_t>(std::floor(double(i) * H / s));
            const int64_t h1 = static_cast<int64_t>(std::ceil(double(i + 1) * H / s));
            const int64_t w0 = static_cast<int64_t>(std::floor(double(j) * W / s));
            const int64_t w1 = static_cast<int64_t>(std::ceil(double(j + 1) * W / s));
            double sum = 0;
            for (int64_t h = h0; h < h1; ++h)
              for (int64_t w = w0; w < w1; ++w) sum += vx[((n * H + h) * W + w) * C + c];
            want[((n * s + i) * s + j) * C + c] = sum / static_cast<double>((h1 - h0) * (w1 - w0));
          }
    SEG_CHECK_CLOSE(vy, want, Tolerance{1e-15, 1e-12});  // f64 sums in another order
    const GradCheckResult r =
        gradcheck([s](const std::vector<Tensor>& in) { return ops::adaptive_avg_pool2d(in[0], s, s); }, {x});
    CHECK_MESSAGE(r.ok, r.report);
  }
}

namespace {
// Bilinear resize written from the definition in double, independently of the kernel.
std::vector<double> resize_naive(const std::vector<double>& x, int64_t N, int64_t H, int64_t W, int64_t C, int64_t Ho,
                                 int64_t Wo) {
  auto src = [](int64_t o, int64_t in, int64_t out) {
    double v = (double(in) / out) * (o + 0.5) - 0.5;
    return v < 0 ? 0.0 : v;
  };
  std::vector<double> y(static_cast<size_t>(N * Ho * Wo * C));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t i = 0; i < Ho; ++i)
      for (int64_t j = 0; j < Wo; ++j)
        for (int64_t c = 0; c < C; ++c) {
          const double sh = src(i, H, Ho), sw = src(j, W, Wo);
          const int64_t h0 = static_cast<int64_t>(sh), w0 = static_cast<int64_t>(sw);
          const int64_t h1 = std::min(h0 + 1, H - 1), w1 = std::min(w0 + 1, W - 1);
          const double lh = sh - h0, lw = sw - w0;
          auto at = [&](int64_t h, int64_t w) { return x[((n * H + h) * W + w) * C + c]; };
          y[((n * Ho + i) * Wo + j) * C + c] = (1 - lh) * ((1 - lw) * at(h0, w0) + lw * at(h0, w1)) +
                                                lh * ((1 - lw) * at(h1, w0) + lw * at(h1, w1));
        }
  return y;
}
}  // namespace

TEST_CASE("resize_bilinear (align_corners=False) up and down against the definition, with gradients") {
  const Tensor x = randn({2, 5, 7, 3}, DType::f64, 9);
  for (auto [Ho, Wo] : std::vector<std::pair<int64_t, int64_t>>{{10, 14}, {40, 9}, {3, 4}, {1, 1}, {5, 7}, {8, 3}}) {
    CAPTURE(Ho);
    CAPTURE(Wo);
    const Tensor y = ops::resize_bilinear(x, Ho, Wo);
    const auto ref = resize_naive(x.to_vector<double>(), 2, 5, 7, 3, Ho, Wo);
    // f64 tensors use f64 weights (f32 tensors use f32 weights, as PyTorch)
    SEG_CHECK_CLOSE(y.to_vector<double>(), ref, Tolerance{1e-12, 0});
    const GradCheckResult r = gradcheck(
        [Ho = Ho, Wo = Wo](const std::vector<Tensor>& in) { return ops::resize_bilinear(in[0], Ho, Wo); }, {x});
    CHECK_MESSAGE(r.ok, r.report);
  }
}
