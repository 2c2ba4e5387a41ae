// The fused BatchNorm+ReLU(6) backward decides its gradient mask on v = (x - mean)*scale + beta,
// recomputed, against two bounds (kernels/common/batchnorm_math.h, bn_pass_bounds), instead of
// reading the forward's output y = round_T(act(v)). These tests check that the two are the same
// test: on every float around each bound (where rounding to the storage type decides), on special
// values, and on random ones; then that the fused kernels give, bit for bit, what the plain
// BatchNorm backward gives on dy masked by y (the formulation that reads y), with betas placed on
// the bounds so that the boundary cases really occur inside the kernels.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/common/batchnorm_math.h"
#include "kernels/common/half.h"
#include "kernels/cpu/batchnorm.h"
#include "kernels/cpu/elementwise.h"

using seg::BnActivation;

namespace {

template <class T> const char* type_label() {
  if constexpr (std::is_same_v<T, seg::f16>) return "f16";
  else if constexpr (std::is_same_v<T, seg::bf16>) return "bf16";
  else if constexpr (std::is_same_v<T, double>) return "f64";
  else return "f32";
}

// What the forward stores and the old backward read: y = round_T(act(v)), then passes(y).
template <class T> bool passes_via_y(float v, BnActivation act) {
  const T y = seg::cpu::store<T>(seg::bn_activate<float>(v, act));
  return seg::bn_activation_passes<float>(seg::cpu::load(y), act);
}

template <class T> void check_equivalence() {
  CAPTURE(type_label<T>());
  const seg::BnPassBounds b = seg::bn_pass_bounds<T>();
  std::vector<float> values = {0.0f, -0.0f, 6.0f, -6.0f, 1.0f, 65504.0f, 65520.0f, 1e30f,
                               std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                               std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::denorm_min()};
  // Every float within 4096 ulps of each bound, of 0 and of 6 (both sides).
  for (float centre : {b.lo, b.hi, 0.0f, 6.0f}) {
    float up = centre, down = centre;
    for (int i = 0; i < 4096; ++i) {
      values.push_back(up = std::nextafter(up, std::numeric_limits<float>::infinity()));
      values.push_back(down = std::nextafter(down, -std::numeric_limits<float>::infinity()));
    }
  }
  // Random values over the activation's range and around the smallest magnitudes.
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> wide(-1.0f, 7.0f), tiny(-1e-6f, 1e-6f), tinier(-0x1p-120f, 0x1p-120f);
  for (int i = 0; i < 100000; ++i) values.insert(values.end(), {wide(rng), tiny(rng), tinier(rng)});
  int64_t mismatches = 0, passes = 0;
  for (BnActivation act : {BnActivation::relu, BnActivation::relu6}) {
    for (float v : values) {
      const bool want = passes_via_y<T>(v, act), got = seg::bn_activation_passes_at<float>(v, b, act);
      passes += want;
      if (want != got && ++mismatches <= 5) {
        CAPTURE(static_cast<int>(act));
        CAPTURE(v);
        CHECK(got == want);
      }
    }
  }
  CHECK(mismatches == 0);
  CHECK(passes > 0);
}

}  // namespace

TEST_CASE("the fused BatchNorm backward's bounds on v decide the mask exactly as y = round(act(v)) does") {
  check_equivalence<float>();
  check_equivalence<seg::f16>();
  check_equivalence<seg::bf16>();
  // The bounds are not the naive ones where rounding matters: without them f16 would disagree.
  CHECK(passes_via_y<seg::f16>(0x1p-25f, BnActivation::relu) == false);
  CHECK(passes_via_y<seg::f16>(std::nextafter(6.0f - 0x1p-9f, 0.0f), BnActivation::relu6) == true);
  CHECK(passes_via_y<seg::f16>(6.0f - 0x1p-9f, BnActivation::relu6) == false);
  CHECK(passes_via_y<seg::bf16>(6.0f - 0x1p-6f, BnActivation::relu6) == false);
}

namespace {

// bn_backward_{sums,dx}_act (mask recomputed) against bn_backward_{sums,dx} on dy masked by y.
template <class T> void check_fused_backward_equals_masked_plain() {
  CAPTURE(type_label<T>());
  using F = seg::cpu::acc_t<T>;
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const seg::BnPassBounds b = seg::bn_pass_bounds<T>();
  // Channels whose beta sits on, or a few ulps beside, each bound and 0 and 6; x = 0 in every third
  // pixel makes v = beta exactly there, the rest are random.
  std::vector<A> beta;
  for (float centre : {b.lo, b.hi, 0.0f, 6.0f}) {
    float v = centre;
    for (int i = 0; i < 3; ++i) v = std::nextafter(v, 0.0f);
    for (int i = 0; i < 7; ++i, v = std::nextafter(v, 100.0f)) beta.push_back(static_cast<A>(v));
  }
  const int64_t C = static_cast<int64_t>(beta.size()), P = 1500;
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<T> x(static_cast<size_t>(P * C)), dy(x.size()), y(x.size()), dy_masked(x.size());
  for (int64_t i = 0; i < P * C; ++i) {
    x[i] = seg::cpu::store<T>(static_cast<F>((i / C) % 3 == 0 ? 0.0f : 4.0f * u(rng)));
    dy[i] = seg::cpu::store<T>(static_cast<F>(u(rng)));
  }
  std::vector<A> mean(C, A(0)), invstd(C), scale(C), k1(C), k2(C), k3(C);
  for (int64_t c = 0; c < C; ++c) {
    invstd[c] = static_cast<A>(0.5f + 0.01f * c);
    scale[c] = static_cast<A>(0.75f + 0.02f * c);
    k1[c] = static_cast<A>(1.25f - 0.01f * c);
    k2[c] = static_cast<A>(-0.003f * c);
    k3[c] = static_cast<A>(0.001f * c);
  }
  for (BnActivation act : {BnActivation::relu, BnActivation::relu6}) {
    CAPTURE(static_cast<int>(act));
    seg::cpu::bn_apply_act<T, A>(x.data(), P, C, mean.data(), scale.data(), beta.data(), act, y.data());
    int64_t masked = 0;
    for (int64_t i = 0; i < P * C; ++i) {
      const bool pass = seg::bn_activation_passes<F>(seg::cpu::load(y[i]), act);
      dy_masked[i] = pass ? dy[i] : seg::cpu::store<T>(F(0));
      masked += !pass;
    }
    CHECK(masked > 0);
    CHECK(masked < P * C);
    std::vector<double> s1(C), s2(C), w1(C), w2(C);
    seg::cpu::bn_backward_sums_act<T, A>(x.data(), dy.data(), P, C, mean.data(), invstd.data(), scale.data(),
                                         beta.data(), act, s1.data(), s2.data());
    seg::cpu::bn_backward_sums<T, A>(x.data(), dy_masked.data(), P, C, mean.data(), invstd.data(), w1.data(), w2.data());
    CHECK(std::memcmp(s1.data(), w1.data(), s1.size() * sizeof(double)) == 0);
    CHECK(std::memcmp(s2.data(), w2.data(), s2.size() * sizeof(double)) == 0);
    std::vector<T> dx(x.size()), want(x.size());
    seg::cpu::bn_backward_dx_act<T, A>(x.data(), dy.data(), P, C, mean.data(), scale.data(), beta.data(), k1.data(),
                                       k2.data(), k3.data(), act, dx.data());
    seg::cpu::bn_backward_dx<T, A>(x.data(), dy_masked.data(), P, C, mean.data(), k1.data(), k2.data(), k3.data(),
                                   want.data());
    CHECK(std::memcmp(dx.data(), want.data(), dx.size() * sizeof(T)) == 0);
  }
}

}  // namespace

TEST_CASE("fused BatchNorm+ReLU(6) backward equals the plain backward on dy masked by y, bit for bit, at the bounds") {
  check_fused_backward_equals_masked_plain<float>();
  check_fused_backward_equals_masked_plain<double>();
  check_fused_backward_equals_masked_plain<seg::f16>();
  check_fused_backward_equals_masked_plain<seg::bf16>();
}
