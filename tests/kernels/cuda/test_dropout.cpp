// seg::cuda::dropout2d_mask / dropout2d_apply against kernels/cpu/dropout.h.
//
// Both are exact: the mask is the same Philox function of (key, stream, n, c) on both sides, and the
// apply is one rounded f32 multiply or a zero. Masks are compared element by element for ragged
// N*C, several probabilities (p = 0 keeps all, p close to 1 drops almost all), keys and streams
// above 2^32 (the counter's high words). apply: every element, f32/f16/bf16, C a multiple of the
// pack (vector path) and not, a misaligned view (scalar path), NaN/inf inputs in dropped channels
// (they become 0, as on the CPU) and in kept ones (they propagate).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/cpu/dropout.h"
#include "kernels/cuda/dropout.h"
#include "tests/kernels/cuda/cuda_test_util.h"
#include "tests/kernels/cuda/typed_test_data.h"

namespace {

using namespace seg;
using seg::test::DeviceBuffer;

}  // namespace

TEST_CASE("cuda dropout2d_mask: bit-identical to the CPU mask for the same key and stream") {
  const PhiloxKey keys[] = {{{0u, 0u}}, {{0x12345678u, 0x9ABCDEF0u}}};
  const uint64_t streams[] = {0, 7, (uint64_t{1} << 32) + 3};
  const std::pair<int64_t, int64_t> shapes[] = {{1, 1}, {2, 31}, {3, 33}, {1, 1007}, {8, 512}};
  for (const PhiloxKey& key : keys)
    for (uint64_t s : streams)
      for (auto [N, C] : shapes)
        for (double p : {0.0, 0.1, 0.5, 0.999}) {
          CAPTURE(s);
          CAPTURE(N);
          CAPTURE(C);
          CAPTURE(p);
          std::vector<uint8_t> want(static_cast<size_t>(N * C));
          cpu::dropout2d_mask(key, s, N, C, p, want.data());
          DeviceBuffer<uint8_t> keep(want.size());
          for (const auto& cfg : test::cuda_configs()) {
            CAPTURE(cfg.name);
            test::ScopedConfig scoped(cfg);
            cuda::dropout2d_mask(key, s, N, C, p, keep.get(), nullptr);
            SEG_CHECK_CLOSE(keep.download(), want, test::Tolerance{0, 0});
          }
        }
}

TEST_CASE("cuda dropout2d_apply: bit-identical to the CPU, f32 f16 bf16, vector and scalar paths") {
  struct Shape {
    int64_t N, HW, C;
  };
  const Shape shapes[] = {{1, 1, 1}, {2, 5, 31}, {3, 7, 33}, {2, 9, 16}, {1, 3, 1007}, {2, 4, 512}};
  test::for_each_type(test::FloatTypes{}, [&](auto tag) {
    using T = typename decltype(tag)::type;
    uint64_t seed = 40;
    for (const Shape& sh : shapes)
      for (int64_t off : {0, 1}) {
        CAPTURE(test::type_name<T>());
        CAPTURE(sh.N);
        CAPTURE(sh.HW);
        CAPTURE(sh.C);
        CAPTURE(off);
        const int64_t n = sh.N * sh.HW * sh.C;
        std::vector<float> xf = test::random_floats(static_cast<size_t>(n + off), seed++, -5.0f, 5.0f);
        for (size_t i = 0; i < xf.size(); i += 6) xf[i] = (i / 6) % 2 ? NAN : INFINITY;
        const std::vector<T> x = test::to_storage<T>(xf);
        std::vector<uint8_t> keep(static_cast<size_t>(sh.N * sh.C));
        cpu::dropout2d_mask(PhiloxKey{{5u, 6u}}, seed, sh.N, sh.C, 0.4, keep.data());
        const double scale = 1.0 / (1.0 - 0.4);
        const std::vector<T> y0 = test::to_storage<T>(test::random_floats(static_cast<size_t>(n + off), seed++));
        std::vector<T> want = y0;
        cpu::dropout2d_apply<T>(x.data() + off, keep.data(), scale, sh.N, sh.HW, sh.C, want.data() + off);
        DeviceBuffer<T> dx(x), dy(y0.size());
        DeviceBuffer<uint8_t> dkeep(keep);
        for (const auto& cfg : test::cuda_configs()) {
          CAPTURE(cfg.name);
          test::ScopedConfig scoped(cfg);
          dy.upload(y0);
          cuda::dropout2d_apply<T>(dx.get() + off, dkeep.get(), scale, sh.N, sh.HW, sh.C, dy.get() + off, nullptr);
          const std::vector<T> got = dy.download();
          const int64_t bad = test::bits_mismatch(got, want);
          CHECK_MESSAGE(bad < 0, "first mismatch at [", bad, "]: got ", test::as_double_or_zero(got, bad), " want ",
                        test::as_double_or_zero(want, bad));
        }
      }
  });
}
