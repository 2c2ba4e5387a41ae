// seg::cuda SGD and mixed-precision kernels against kernels/cpu/sgd.h and kernels/cpu/amp.h.
//
// All exact: the unscaled gradients, the device found-inf flag against the CPU's returned bool
// (set when the CPU says true, left alone otherwise: a flag already set stays set), five
// successive SGD steps (each under another schedule) (plain, momentum with weight decay) bit for bit in every state array, the
// master-weight step's f32 master, momentum and half copy, the half step, and the fp16 range
// counts. Sizes 1, 31, 33, 1007 in the three alignment cases of the pack path; non-finite values at
// the first element, inside the packs and in the tail; a half store that overflows to inf while
// the f32 value is finite (not a found inf, as on the CPU).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/cpu/amp.h"
#include "kernels/cpu/sgd.h"
#include "kernels/cuda/amp.h"
#include "kernels/cuda/sgd.h"
#include "tests/kernels/cuda/cuda_test_util.h"
#include "tests/kernels/cuda/typed_test_data.h"

namespace {

using namespace seg;
using seg::test::DeviceBuffer;

struct Offsets {
  const char* name;
  int64_t a, b, c, d;  // element offsets of up to four arrays
};
constexpr Offsets kOffsets[] = {{"aligned", 0, 0, 0, 0}, {"same misalignment", 3, 3, 3, 3}, {"mixed", 1, 0, 2, 3}};
constexpr int64_t kSizes[] = {1, 31, 33, 1007};

template <class T> std::vector<T> padded(const std::vector<float>& v, int64_t off) {
  std::vector<float> p(static_cast<size_t>(off), 0.5f);
  p.insert(p.end(), v.begin(), v.end());
  return test::to_storage<T>(p);
}

// Where to put a non-finite gradient: nowhere, first, middle (inside the packs), last (tail).
std::vector<int64_t> special_positions(int64_t n) { return {-1, 0, n / 2, n - 1}; }

template <class T> void expect_bits(const std::vector<T>& got, const std::vector<T>& want, const char* what) {
  const int64_t bad = test::bits_mismatch(got, want);
  CHECK_MESSAGE(bad < 0, what, ": first mismatch at [", bad, "] got ", test::as_double_or_zero(got, bad), " want ",
                test::as_double_or_zero(want, bad));
}

// Runs one unscale variant: host_fn(host arrays) -> bool, dev_fn(device arrays, flag) on the device.
template <class G, class HostFn, class DevFn>
void check_unscale(const char* name, float inv, float magnitude, bool to_f32, HostFn host_fn, DevFn dev_fn) {
  uint64_t seed = 70;
  for (int64_t n : kSizes)
    for (const Offsets& o : kOffsets)
      for (int64_t pos : special_positions(n))
        for (float special : {NAN, INFINITY}) {
          if (pos < 0 && std::isinf(special)) continue;  // one clean case per size is enough
          CAPTURE(name);
          CAPTURE(n);
          CAPTURE(o.name);
          CAPTURE(pos);
          std::vector<float> v = test::random_floats(static_cast<size_t>(n), seed++, -magnitude, magnitude);
          if (pos >= 0) v[static_cast<size_t>(pos)] = special;
          const std::vector<G> g0 = padded<G>(v, o.a);
          std::vector<G> g_want = g0;
          std::vector<float> out_want(static_cast<size_t>(n + o.b), 0.25f);
          const bool want_inf = host_fn(g_want.data() + o.a, out_want.data() + o.b, n);
          DeviceBuffer<G> dg(g0.size());
          DeviceBuffer<float> dout(out_want.size());
          DeviceBuffer<int> flag(1);
          for (const auto& cfg : test::cuda_configs())
            for (int initial : {0, 1}) {
              CAPTURE(cfg.name);
              CAPTURE(initial);
              test::ScopedConfig scoped(cfg);
              dg.upload(g0);
              dout.upload(std::vector<float>(out_want.size(), 0.25f));
              flag.upload(std::vector<int>{initial});
              dev_fn(dg.get() + o.a, dout.get() + o.b, n, flag.get());
              CHECK(flag.download()[0] == (initial || want_inf ? 1 : 0));
              expect_bits(dg.download(), g_want, "gradients");
              if (to_f32) expect_bits(dout.download(), out_want, "f32 gradients");
            }
        }
  (void)inv;
}

template <class H> void check_unscale_half() {
  for (float inv : {1.0f / 65536.0f, 4.0f}) {
    // magnitude: scaled gradients for inv 2^-16; for inv 4, halves near the top of f16's range so
    // that the in-place store overflows to inf from a finite f32 value.
    const float magnitude = inv < 1.0f ? 6.0e4f : 3.0e4f;
    check_unscale<H>(
        "unscale_to_f32", inv, magnitude, true,
        [inv](H* g, float* out, int64_t n) { return cpu::unscale_to_f32_check<H>(g, out, n, inv); },
        [inv](H* g, float* out, int64_t n, int* flag) { cuda::unscale_to_f32_check<H>(g, out, n, inv, flag, nullptr); });
    check_unscale<H>(
        "unscale_half_inplace", inv, magnitude, false,
        [inv](H* g, float*, int64_t n) { return cpu::unscale_half_inplace_check<H>(g, n, inv); },
        [inv](H* g, float*, int64_t n, int* flag) { cuda::unscale_half_inplace_check<H>(g, n, inv, flag, nullptr); });
  }
}

struct SgdCase {
  double lr, momentum, wd;
};
constexpr SgdCase kSgd[] = {{0.1, 0.0, 0.0}, {0.02, 0.9, 1e-4}};

}  // namespace

TEST_CASE("cuda unscale_inplace_check (f32): exact values, device found-inf flag equals the CPU's bool") {
  for (float inv : {1.0f / 65536.0f, 3.0f})
    check_unscale<float>(
        "unscale_inplace", inv, 1.0e5f, false,
        [inv](float* g, float*, int64_t n) { return cpu::unscale_inplace_check(g, n, inv); },
        [inv](float* g, float*, int64_t n, int* flag) { cuda::unscale_inplace_check(g, n, inv, flag, nullptr); });
}

TEST_CASE("cuda unscale_to_f32_check / unscale_half_inplace_check (f16, bf16): exact, flag as the CPU") {
  check_unscale_half<f16>();
  check_unscale_half<bf16>();
}

TEST_CASE("cuda sgd_momentum_step (f32): successive steps (one per schedule) bit-identical to the CPU, plain and momentum + decay") {
  for (const SgdCase& sc : kSgd)
    for (int64_t n : kSizes)
      for (const Offsets& o : kOffsets) {
        CAPTURE(sc.momentum);
        CAPTURE(n);
        CAPTURE(o.name);
        std::vector<float> p = padded<float>(test::random_floats(static_cast<size_t>(n), 1, -1, 1), o.a);
        std::vector<float> buf = padded<float>(std::vector<float>(static_cast<size_t>(n), 0.0f), o.c);
        DeviceBuffer<float> dp(p), dbuf(buf), dg(static_cast<size_t>(n + o.b));
        const auto configs = test::cuda_configs();  // one schedule per step
        for (int step = 0; step < static_cast<int>(configs.size()); ++step) {
          CAPTURE(configs[static_cast<size_t>(step)].name);
          test::ScopedConfig scoped(configs[static_cast<size_t>(step)]);
          const std::vector<float> g = padded<float>(test::random_floats(static_cast<size_t>(n), 10 + step, -0.5f, 0.5f), o.b);
          cpu::sgd_momentum_step<float>(p.data() + o.a, g.data() + o.b, buf.data() + o.c, n, sc.lr, sc.momentum, sc.wd);
          dg.upload(g);
          cuda::sgd_momentum_step<float>(dp.get() + o.a, dg.get() + o.b, dbuf.get() + o.c, n, sc.lr, sc.momentum, sc.wd,
                                         nullptr);
          expect_bits(dp.download(), p, "parameters");
          expect_bits(dbuf.download(), buf, "momentum");
        }
      }
}

TEST_CASE("cuda sgd_master_step and sgd_half_step (f16, bf16): successive steps bit-identical to the CPU") {
  test::for_each_type(test::TypeList<f16, bf16>{}, [](auto tag) {
    using H = typename decltype(tag)::type;
    for (const SgdCase& sc : kSgd)
      for (int64_t n : kSizes)
        for (const Offsets& o : kOffsets) {
          CAPTURE(test::type_name<H>());
          CAPTURE(sc.momentum);
          CAPTURE(n);
          CAPTURE(o.name);
          // Master step: master a, grad b, buf c, half copy d.
          std::vector<float> m = padded<float>(test::random_floats(static_cast<size_t>(n), 2, -1, 1), o.a);
          std::vector<float> buf = padded<float>(std::vector<float>(static_cast<size_t>(n), 0.0f), o.c);
          std::vector<H> half = padded<H>(std::vector<float>(static_cast<size_t>(n), 0.0f), o.d);
          DeviceBuffer<float> dm(m), dbuf(buf), dg(static_cast<size_t>(n + o.b));
          DeviceBuffer<H> dhalf(half);
          // Half step: p a, grad b, buf c.
          std::vector<H> hp = padded<H>(test::random_floats(static_cast<size_t>(n), 3, -1, 1), o.a);
          std::vector<H> hbuf = padded<H>(std::vector<float>(static_cast<size_t>(n), 0.0f), o.c);
          DeviceBuffer<H> dhp(hp), dhbuf(hbuf), dhg(static_cast<size_t>(n + o.b));
          const auto configs = test::cuda_configs();  // one schedule per step
          for (int step = 0; step < static_cast<int>(configs.size()); ++step) {
            CAPTURE(configs[static_cast<size_t>(step)].name);
            test::ScopedConfig scoped(configs[static_cast<size_t>(step)]);
            const std::vector<float> g = padded<float>(test::random_floats(static_cast<size_t>(n), 20 + step, -0.5f, 0.5f), o.b);
            cpu::sgd_master_step<H>(m.data() + o.a, g.data() + o.b, buf.data() + o.c, half.data() + o.d, n, sc.lr,
                                    sc.momentum, sc.wd);
            dg.upload(g);
            cuda::sgd_master_step<H>(dm.get() + o.a, dg.get() + o.b, dbuf.get() + o.c, dhalf.get() + o.d, n, sc.lr,
                                     sc.momentum, sc.wd, nullptr);
            expect_bits(dm.download(), m, "master");
            expect_bits(dbuf.download(), buf, "master momentum");
            expect_bits(dhalf.download(), half, "half copy");

            const std::vector<H> hg = test::to_storage<H>(std::vector<float>(g.begin(), g.end()));
            cpu::sgd_half_step<H>(hp.data() + o.a, hg.data() + o.b, hbuf.data() + o.c, n, sc.lr, sc.momentum, sc.wd);
            dhg.upload(hg);
            cuda::sgd_half_step<H>(dhp.get() + o.a, dhg.get() + o.b, dhbuf.get() + o.c, n, sc.lr, sc.momentum, sc.wd,
                                   nullptr);
            expect_bits(dhp.download(), hp, "half parameters");
            expect_bits(dhbuf.download(), hbuf, "half momentum");
          }
        }
  });
}

TEST_CASE("cuda fp16_range: the --amp-stats counts exactly as the CPU, into device memory") {
  for (int64_t n : {int64_t{0}, int64_t{31}, int64_t{1007}, int64_t{100003}})
    for (double scale : {1.0, 65536.0}) {
      CAPTURE(n);
      CAPTURE(scale);
      std::vector<float> g = test::random_floats(static_cast<size_t>(n), 5, -2.0f, 2.0f);
      // Magnitudes across f16's range: exact zeros, the 2^-25 boundary (and its neighbour), far
      // below, at and above 65520 / scale, NaN and inf.
      const float edge = std::ldexp(1.0f, -25) / static_cast<float>(scale);
      const float specials[] = {0.0f,  -0.0f,        edge,     std::nextafter(edge, 1.0f), 1e-12f, 65520.0f / static_cast<float>(scale),
                                -7e4f, NAN,          INFINITY, 65519.0f / static_cast<float>(scale)};
      for (size_t i = 1; i < g.size(); i += 7) g[i] = specials[(i / 7) % 10];
      const cpu::Fp16Range want = cpu::fp16_range(g.data(), n, scale);
      DeviceBuffer<float> dg(g);
      DeviceBuffer<cuda::Fp16Range> out(1);
      DeviceBuffer<unsigned char> ws(cuda::fp16_range_workspace_bytes(n));
      for (const auto& cfg : n > 2000 ? test::cuda_config_rr() : test::cuda_configs()) {
        CAPTURE(cfg.name);
        test::ScopedConfig scoped(cfg);
        cuda::fp16_range(dg.get(), n, scale, out.get(), ws.get(), nullptr);
        const cuda::Fp16Range got = out.download()[0];
        CHECK(got.zero == want.zero);
        CHECK(got.underflow == want.underflow);
        CHECK(got.overflow == want.overflow);
        CHECK(got.total == want.total);
      }
      if (n >= 1007) CHECK((want.zero > 0 && want.underflow > 0 && want.overflow > 0));  // the cases are exercised
    }
}
