// seg::cuda elementwise kernels against kernels/cpu/elementwise.h.
//
// add, add_inplace, mul, scale, relu/relu6 forward and backward are bit-exact (both sides compute
// one f32 operation per element and round once to the storage type): compared bit for bit, NaN
// matching NaN. Inputs include NaN, +-inf, -0, 0, 6 and its neighbours (the ReLU6 edges), and
// products that overflow f16. Sizes 1, 31, 33, 1007 with the three alignment cases of the vector
// path: all pointers aligned, all misaligned by the same amount (scalar head), misaligned differently
// (scalar fallback). The whole output buffer is compared, so writes outside the view are caught.
//
// sum/mean: the CPU adds in f64, the device in f32 in a fixed tree order; the bound is the header's,
// (ceil(n / (256 G)) + 16 + 18) * 2^-24 * sum|a_i| for the f32 sum (16: the scalar head and tail a
// thread may add besides its packs), plus one ulp of T for the final rounding.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cpu/elementwise.h"
#include "kernels/cuda/elementwise.h"
#include "tests/kernels/cuda/cuda_test_util.h"
#include "tests/kernels/cuda/typed_test_data.h"

namespace {

using namespace seg;
using seg::test::DeviceBuffer;

struct Offsets {
  const char* name;
  int64_t a, b, out;
};
constexpr Offsets kOffsets[] = {{"aligned", 0, 0, 0}, {"same misalignment", 3, 3, 3}, {"mixed misalignment", 1, 0, 2}};
constexpr int64_t kSizes[] = {1, 31, 33, 1007};

// Random values in [-8, 8) with the special values every 5th element.
std::vector<float> values_with_specials(size_t n, uint64_t seed) {
  std::vector<float> v = test::random_floats(n, seed, -8.0f, 8.0f);
  const float specials[] = {NAN, INFINITY, -INFINITY, -0.0f, 0.0f, 6.0f, std::nextafter(6.0f, 0.0f),
                            std::nextafter(6.0f, 7.0f), 300.0f, -300.0f, 1e-30f, std::nextafter(0.0f, 1.0f)};
  for (size_t i = 0; i < n; i += 5) v[i] = specials[(i / 5 + seed) % (sizeof specials / sizeof specials[0])];
  return v;
}

// Runs a unary or binary map on the device and on the CPU with the given offsets; every element of
// the output buffer must match bit for bit.
template <class T, class Cpu, class Cuda>
void check_map(const std::string& name, bool binary, Cpu cpu_fn, Cuda cuda_fn) {
  uint64_t seed = 1;
  for (int64_t n : kSizes)
    for (const Offsets& o : kOffsets) {
      CAPTURE(name);
      CAPTURE(test::type_name<T>());
      CAPTURE(n);
      CAPTURE(o.name);
      const std::vector<T> a = test::to_storage<T>(values_with_specials(static_cast<size_t>(n + o.a), seed++));
      const std::vector<T> b = test::to_storage<T>(values_with_specials(static_cast<size_t>(n + o.b), seed++));
      const std::vector<T> out0 = test::to_storage<T>(test::random_floats(static_cast<size_t>(n + o.out + 2), seed++));
      std::vector<T> want = out0;
      cpu_fn(a.data() + o.a, b.data() + o.b, want.data() + o.out, n);
      DeviceBuffer<T> da(a), db(b), dout(out0.size());
      for (const auto& cfg : test::cuda_configs()) {
        CAPTURE(cfg.name);
        test::ScopedConfig scoped(cfg);
        dout.upload(out0);
        cuda_fn(da.get() + o.a, db.get() + o.b, dout.get() + o.out, n, nullptr);
        const std::vector<T> got = dout.download();
        const int64_t bad = test::bits_mismatch(got, want);
        CHECK_MESSAGE(bad < 0, "first mismatch at [", bad, "]: got ", test::as_double_or_zero(got, bad), " want ",
                      test::as_double_or_zero(want, bad), (binary ? "" : " (unary)"));
      }
    }
}

template <class T> void check_all_maps() {
  check_map<T>("add", true, [](const T* a, const T* b, T* o, int64_t n) { cpu::add(a, b, o, n); },
               [](const T* a, const T* b, T* o, int64_t n, cuda::Stream s) { cuda::add(a, b, o, n, s); });
  check_map<T>("mul", true, [](const T* a, const T* b, T* o, int64_t n) { cpu::mul(a, b, o, n); },
               [](const T* a, const T* b, T* o, int64_t n, cuda::Stream s) { cuda::mul(a, b, o, n, s); });
  for (double k : {0.5, -3.0, 1.0 / 3.0, 1e-5})
    check_map<T>("scale " + std::to_string(k), false,
                 [k](const T* a, const T*, T* o, int64_t n) { cpu::scale(a, k, o, n); },
                 [k](const T* a, const T*, T* o, int64_t n, cuda::Stream s) { cuda::scale(a, k, o, n, s); });
  for (bool six : {false, true}) {
    check_map<T>(six ? "relu6_forward" : "relu_forward", false,
                 [six](const T* a, const T*, T* o, int64_t n) { cpu::relu_forward(a, o, n, six); },
                 [six](const T* a, const T*, T* o, int64_t n, cuda::Stream s) { cuda::relu_forward(a, o, n, six, s); });
    check_map<T>(six ? "relu6_backward" : "relu_backward", true,
                 [six](const T* x, const T* g, T* o, int64_t n) { cpu::relu_backward(x, g, o, n, six); },
                 [six](const T* x, const T* g, T* o, int64_t n, cuda::Stream s) { cuda::relu_backward(x, g, o, n, six, s); });
  }
  // add_inplace: the destination is also the first operand.
  uint64_t seed = 500;
  for (int64_t n : kSizes)
    for (const Offsets& o : kOffsets) {
      CAPTURE(test::type_name<T>());
      CAPTURE(n);
      CAPTURE(o.name);
      const std::vector<T> dst0 = test::to_storage<T>(values_with_specials(static_cast<size_t>(n + o.a + 1), seed++));
      const std::vector<T> src = test::to_storage<T>(values_with_specials(static_cast<size_t>(n + o.b), seed++));
      std::vector<T> want = dst0;
      cpu::add_inplace(want.data() + o.a, src.data() + o.b, n);
      DeviceBuffer<T> ddst(dst0.size()), dsrc(src);
      for (const auto& cfg : test::cuda_configs()) {
        CAPTURE(cfg.name);
        test::ScopedConfig scoped(cfg);
        ddst.upload(dst0);
        cuda::add_inplace(ddst.get() + o.a, dsrc.get() + o.b, n, nullptr);
        CHECK(test::bits_mismatch(ddst.download(), want) < 0);
      }
    }
}

template <class T> double ulp_rel() {
  if constexpr (std::is_same_v<T, float>) return std::ldexp(1.0, -23);
  else if constexpr (std::is_same_v<T, f16>) return std::ldexp(1.0, -10);
  else return std::ldexp(1.0, -7);
}

template <class T> void check_sum(int64_t n, const std::vector<test::CudaConfig>& configs, bool with_mean = true) {
  CAPTURE(test::type_name<T>());
  CAPTURE(n);
  const std::vector<T> a = test::to_storage<T>(test::random_floats(static_cast<size_t>(n), static_cast<uint64_t>(n) + 9, -1.0f, 2.0f));
  double abs_sum = 0;
  for (const T& v : a) abs_sum += std::abs(static_cast<double>(static_cast<float>(v)));
  const double cpu_sum = cpu::sum(a.data(), n);
  const int64_t blocks = std::min<int64_t>(512, std::max<int64_t>(1, (n + 4095) / 4096));
  const double k = static_cast<double>((n + 256 * blocks - 1) / (256 * blocks) + 16 + 18);
  DeviceBuffer<T> da(a);
  DeviceBuffer<T> out(2);
  DeviceBuffer<unsigned char> ws(cuda::sum_workspace_bytes(n));
  std::vector<double> factors{1.0};
  if (with_mean && n > 0) factors.push_back(1.0 / static_cast<double>(n));
  for (double factor : factors) {
    const T want = test::from_float<T>(static_cast<float>(cpu_sum * factor));
    const test::Tolerance tol{k * std::ldexp(1.0, -24) * abs_sum * factor, ulp_rel<T>()};
    std::vector<T> first;
    for (const auto& cfg : configs) {
      CAPTURE(cfg.name);
      test::ScopedConfig scoped(cfg);
      cuda::sum(da.get(), n, factor, out.get(), ws.get(), nullptr);
      const std::vector<T> got = out.download();
      SEG_CHECK_CLOSE(std::vector<T>{got[0]}, std::vector<T>{want}, tol);
      // Deterministic: the same bits under every schedule.
      if (first.empty()) first = got;
      else CHECK(test::bits_mismatch(got, first) < 0);
    }
  }
}

}  // namespace

TEST_CASE("cuda add/mul/scale/relu/relu6/add_inplace: bit-exact against the CPU, f32 f16 bf16") {
  check_all_maps<float>();
  check_all_maps<f16>();
  check_all_maps<bf16>();
}

TEST_CASE("cuda sum/mean: deterministic f32 two-pass reduction within the stated bound of the CPU's f64 sum") {
  test::for_each_type(test::FloatTypes{}, [](auto tag) {
    using T = typename decltype(tag)::type;
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{31}, int64_t{33}, int64_t{1007}, int64_t{20011}})
      check_sum<T>(n, test::cuda_configs());
    check_sum<T>(100003, test::cuda_config_rr());  // 25 partials
  });
  // Past the 512-block cap (2^21 elements): threads add more than one grid-stride step.
  check_sum<float>(2100007, test::cuda_config_rr(), false);
}

TEST_CASE("cuda sum: NaN and inf propagate as on the CPU; a misaligned start") {
  test::for_each_type(test::FloatTypes{}, [](auto tag) {
    using T = typename decltype(tag)::type;
    for (float special : {NAN, INFINITY, -INFINITY}) {
      std::vector<T> a = test::to_storage<T>(test::random_floats(5001, 3));
      a[4321] = test::from_float<T>(special);
      const T want = test::from_float<T>(static_cast<float>(cpu::sum(a.data() + 1, 5000)));
      DeviceBuffer<T> da(a), out(1);
      DeviceBuffer<unsigned char> ws(cuda::sum_workspace_bytes(5000));
      cuda::sum(da.get() + 1, 5000, 1.0, out.get(), ws.get(), nullptr);
      SEG_CHECK_CLOSE(out.download(), std::vector<T>{want}, test::Tolerance{0, 0});
    }
  });
}

TEST_CASE("cuda fill_from_device_scalar: the backward of sum/mean, exactly Tensor::full(shape, g * factor)") {
  test::for_each_type(test::FloatTypes{}, [](auto tag) {
    using T = typename decltype(tag)::type;
    for (float g : {1.0f, -0.37f, 3.0e4f})
      for (double factor : {1.0, 1.0 / 3.0, -2.5e-3})
        for (int64_t n : kSizes)
          for (int64_t off : {0, 3}) {
            CAPTURE(test::type_name<T>());
            CAPTURE(n);
            CAPTURE(off);
            const T gs = test::from_float<T>(g);
            const T value = test::from_float<T>(static_cast<float>(static_cast<double>(static_cast<float>(gs)) * factor));
            const std::vector<T> out0 = test::to_storage<T>(test::random_floats(static_cast<size_t>(n + off + 1), 4));
            std::vector<T> want = out0;
            for (int64_t i = 0; i < n; ++i) want[static_cast<size_t>(off + i)] = value;
            DeviceBuffer<T> dg(std::vector<T>{gs}), dout(out0.size());
            for (const auto& cfg : test::cuda_configs()) {
              CAPTURE(cfg.name);
              test::ScopedConfig scoped(cfg);
              dout.upload(out0);
              cuda::fill_from_device_scalar(dg.get(), factor, dout.get() + off, n, nullptr);
              CHECK(test::bits_mismatch(dout.download(), want) < 0);
            }
          }
  });
}
