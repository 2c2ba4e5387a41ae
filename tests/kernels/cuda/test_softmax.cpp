// seg::cuda softmax / log_softmax (forward, backward) and argmax_channels against kernels/cpu/softmax.h.
//
// argmax is exact (ties go to the first index, a NaN wins, an all -inf row gives 0). The softmax
// family differs from the CPU in two ways only: the channel sum's order (lanes strided by G, then a
// butterfly, against one sequential loop) and the GPU's expf/logf (CUDA: <= 2 ulp; the simulator
// uses the C library, like the CPU). With u = 2^-24 and sums of C positive terms, each side's sum is
// within (C - 1) u relative of exact, so the stated bounds, per element, are
//   softmax:          |dy - y| <= (2C + 16) u |y|
//   log_softmax:      |dy - y| <= (2C + 16) u (2 + R + ln C)      R = range of the inputs (16 here)
//   softmax bwd:      |d dx|   <= (2C + 8) u max|dy| + 4u |dx|    (sum dy*y <= max|dy| as sum y = 1)
//   log_softmax bwd:  |d dx|   <= (2C + 8) C u max|dy| + 4u |dx|  (sum |dy| <= C max|dy|)
// and for f16/bf16 outputs one more unit in the last place of the storage type (the two f32 results
// may round to neighbouring halves), plus f16's subnormal step 2^-24 absolute.
// Rows with NaN or +inf are NaN on both sides (compared: NaN must match NaN).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/cpu/softmax.h"
#include "kernels/cuda/softmax.h"
#include "tests/kernels/cuda/cuda_test_util.h"
#include "tests/kernels/cuda/typed_test_data.h"

namespace {

using namespace seg;
using seg::test::DeviceBuffer;

constexpr double kU = 1.0 / 16777216.0;  // 2^-24

struct Shape {
  int64_t P, C;
};
constexpr Shape kShapes[] = {{1, 1}, {31, 3}, {33, 33}, {1007, 2}, {64, 150}, {5, 1007}, {300, 17}};

template <class T> double storage_ulp() {
  if constexpr (std::is_same_v<T, float>) return 0.0;
  else if constexpr (std::is_same_v<T, f16>) return std::ldexp(1.0, -10);
  else return std::ldexp(1.0, -7);
}
template <class T> double storage_subnormal() { return std::is_same_v<T, f16> ? std::ldexp(1.0, -24) : 0.0; }

// Logits in [-8, 8) with, when the shape allows, special rows: 0 has a NaN, 1 a +inf, 2 is all -inf,
// 3 has a -inf among finite values, 4 two equal maxima, 5 a -0/+0 tie at the top.
std::vector<float> logits_for(const Shape& s, uint64_t seed) {
  std::vector<float> x = test::random_floats(static_cast<size_t>(s.P * s.C), seed, -8.0f, 8.0f);
  auto at = [&](int64_t p, int64_t c) -> float& { return x[static_cast<size_t>(p * s.C + c)]; };
  if (s.P > 5 && s.C > 2) {
    at(0, s.C / 2) = NAN;
    at(1, s.C - 1) = INFINITY;
    for (int64_t c = 0; c < s.C; ++c) at(2, c) = -INFINITY;
    at(3, 1) = -INFINITY;
    at(4, 0) = 9.0f;
    at(4, s.C - 1) = 9.0f;
    for (int64_t c = 0; c < s.C; ++c) at(5, c) = -1.0f;
    at(5, 1) = -0.0f;
    at(5, s.C - 1) = 0.0f;
  }
  return x;
}

template <class T> void check_softmax_forward(bool log) {
  uint64_t seed = log ? 300 : 200;
  for (const Shape& s : kShapes) {
    CAPTURE(test::type_name<T>());
    CAPTURE(log);
    CAPTURE(s.P);
    CAPTURE(s.C);
    const std::vector<T> x = test::to_storage<T>(logits_for(s, seed++));
    std::vector<T> want(x.size());
    cpu::softmax_forward<T>(x.data(), s.P, s.C, want.data(), log);
    const double c = static_cast<double>(s.C);
    const test::Tolerance tol =
        log ? test::Tolerance{(2 * c + 16) * kU * (2 + 16 + std::log(c)) + storage_subnormal<T>(), storage_ulp<T>()}
            : test::Tolerance{1e-37 + storage_subnormal<T>(), (2 * c + 16) * kU + storage_ulp<T>()};
    DeviceBuffer<T> dx(x), dy(x.size());
    for (const auto& cfg : test::cuda_configs()) {
      CAPTURE(cfg.name);
      test::ScopedConfig scoped(cfg);
      cuda::softmax_forward<T>(dx.get(), s.P, s.C, dy.get(), log, nullptr);
      SEG_CHECK_CLOSE(dy.download(), want, tol);
    }
  }
}

template <class T> void check_softmax_backward(bool log) {
  uint64_t seed = log ? 500 : 400;
  for (const Shape& s : kShapes) {
    CAPTURE(test::type_name<T>());
    CAPTURE(log);
    CAPTURE(s.P);
    CAPTURE(s.C);
    // y: the forward of finite logits (the backward's real input); dy in [-1, 1) with one NaN row.
    std::vector<T> x = test::to_storage<T>(test::random_floats(static_cast<size_t>(s.P * s.C), seed++, -8.0f, 8.0f));
    std::vector<T> y(x.size());
    cpu::softmax_forward<T>(x.data(), s.P, s.C, y.data(), log);
    std::vector<float> gf = test::random_floats(x.size(), seed++, -1.0f, 1.0f);
    if (s.P > 3) gf[static_cast<size_t>(3 * s.C)] = NAN;
    const std::vector<T> g = test::to_storage<T>(gf);
    std::vector<T> want(x.size());
    cpu::softmax_backward<T>(y.data(), g.data(), s.P, s.C, want.data(), log);
    const double c = static_cast<double>(s.C);
    const double atol = (log ? (2 * c + 8) * c : (2 * c + 8)) * kU * 1.0 + storage_subnormal<T>();
    const test::Tolerance tol{atol, 4 * kU + storage_ulp<T>()};
    DeviceBuffer<T> dy_(y), dg(g), ddx(x.size());
    for (const auto& cfg : test::cuda_configs()) {
      CAPTURE(cfg.name);
      test::ScopedConfig scoped(cfg);
      cuda::softmax_backward<T>(dy_.get(), dg.get(), s.P, s.C, ddx.get(), log, nullptr);
      SEG_CHECK_CLOSE(ddx.download(), want, tol);
    }
  }
}

}  // namespace

TEST_CASE("cuda softmax_forward and log_softmax: against the CPU within the stated f32 bounds") {
  test::for_each_type(test::FloatTypes{}, [](auto tag) {
    using T = typename decltype(tag)::type;
    check_softmax_forward<T>(false);
    check_softmax_forward<T>(true);
  });
}

TEST_CASE("cuda softmax_backward (softmax and log_softmax): against the CPU within the stated f32 bounds") {
  test::for_each_type(test::FloatTypes{}, [](auto tag) {
    using T = typename decltype(tag)::type;
    check_softmax_backward<T>(false);
    check_softmax_backward<T>(true);
  });
}

TEST_CASE("cuda argmax_channels: exact, first maximum, NaN first, all -inf -> 0") {
  test::for_each_type(test::FloatTypes{}, [](auto tag) {
    using T = typename decltype(tag)::type;
    uint64_t seed = 600;
    for (const Shape& s : kShapes) {
      CAPTURE(test::type_name<T>());
      CAPTURE(s.P);
      CAPTURE(s.C);
      // Halves make ties common (f16 has 11 bits of precision): the first-index rule is exercised.
      std::vector<float> xf = logits_for(s, seed++);
      if (s.P > 7 && s.C > 3) {
        xf[static_cast<size_t>(6 * s.C + 1)] = NAN;  // two NaNs: the first one wins
        xf[static_cast<size_t>(6 * s.C + 3)] = NAN;
      }
      const std::vector<T> x = test::to_storage<T>(xf);
      std::vector<int32_t> want(static_cast<size_t>(s.P));
      cpu::argmax_channels<T>(x.data(), s.P, s.C, want.data());
      DeviceBuffer<T> dx(x);
      DeviceBuffer<int32_t> out(want.size());
      for (const auto& cfg : test::cuda_configs()) {
        CAPTURE(cfg.name);
        test::ScopedConfig scoped(cfg);
        cuda::argmax_channels<T>(dx.get(), s.P, s.C, out.get(), nullptr);
        SEG_CHECK_CLOSE(out.download(), want, test::Tolerance{0, 0});
      }
    }
  });
}
