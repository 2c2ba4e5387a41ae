// seg::cuda::copy_strided / fill_strided / convert_* against kernels/cpu/copy.h and convert.h.
//
// Copies and conversions are exact: every element of the whole destination buffer (also the
// elements outside the view, which must be left alone) is compared bit for bit with the CPU
// result, two NaNs counting as equal (the CPU's SIMD paths keep NaN payloads, the GPU's cvt does
// not). Layouts: flat runs of ragged sizes with equal and unequal misalignment of source and
// destination (the vector path with a scalar head, and the scalar fallback), channel slices as a
// concat writes and reads them, a transpose, a reversed view, broadcasts, 0-d and 6-d index spaces,
// and one run longer than the grid cap (grid-stride loops). Values include NaN, +-inf, -0, f16
// overflow and subnormals where the destination is floating point; integer destinations get
// values in range (out-of-range float -> int is undefined on the CPU).
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cpu/convert.h"
#include "kernels/cpu/copy.h"
#include "kernels/cuda/convert.h"
#include "kernels/cuda/copy.h"
#include "tests/kernels/cuda/cuda_test_util.h"
#include "tests/kernels/cuda/typed_test_data.h"

namespace {

using namespace seg;
using seg::test::DeviceBuffer;

struct CopyCase {
  std::string name;
  CopyLayout layout;
  int64_t src_elems = 0, dst_elems = 0;  // sizes of the two buffers
  int64_t src_off = 0, dst_off = 0;      // element offset of each view in its buffer
};

CopyLayout make_layout(const std::vector<int64_t>& shape, const std::vector<int64_t>& ss, const std::vector<int64_t>& ds) {
  CopyLayout L;
  L.ndim = static_cast<int>(shape.size());
  for (int d = 0; d < L.ndim; ++d) {
    L.shape[d] = shape[d];
    L.src_stride[d] = ss[d];
    L.dst_stride[d] = ds[d];
  }
  return L;
}

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size());
  int64_t e = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    s[d] = e;
    e *= shape[d];
  }
  return s;
}

std::vector<CopyCase> copy_cases() {
  std::vector<CopyCase> cases;
  // Flat runs: (0,0) and (5,5) reach alignment together (vector path, scalar head); (1,3), (3,0) not.
  for (int64_t n : {1, 31, 33, 1007})
    for (auto [so, dof] : {std::pair<int64_t, int64_t>{0, 0}, {1, 3}, {5, 5}, {3, 0}})
      cases.push_back({"flat n=" + std::to_string(n) + " offsets " + std::to_string(so) + "," + std::to_string(dof),
                       make_layout({n}, {1}, {1}), n + so, n + dof, so, dof});
  cases.push_back({"3-d contiguous (coalesces to one run)", make_layout({3, 7, 11}, {77, 11, 1}, {77, 11, 1}), 231, 231, 0, 0});
  // Concat: src [2,3,5,c] contiguous into channels [c0, c0+c) of dst [2,3,5,ct]; and the reverse.
  for (auto [c, ct, c0] : {std::tuple<int64_t, int64_t, int64_t>{8, 24, 8}, {8, 24, 4}, {7, 19, 5}, {16, 48, 32}, {1, 3, 2}}) {
    const std::vector<int64_t> shape{2, 3, 5, c};
    const int64_t pix = 2 * 3 * 5;
    const std::string tag = " c=" + std::to_string(c) + " of " + std::to_string(ct) + " at " + std::to_string(c0);
    cases.push_back({"concat write" + tag, make_layout(shape, contiguous_strides(shape), {15 * ct, 5 * ct, ct, 1}),
                     pix * c, pix * ct, 0, c0});
    cases.push_back({"slice read" + tag, make_layout(shape, {15 * ct, 5 * ct, ct, 1}, contiguous_strides(shape)),
                     pix * ct, pix * c, c0, 0});
  }
  cases.push_back({"transpose 13x17", make_layout({13, 17}, {1, 13}, {17, 1}), 221, 221, 0, 0});
  cases.push_back({"permute 3x5x7 (2,0,1)", make_layout({3, 5, 7}, {1, 21, 3}, {35, 7, 1}), 105, 105, 0, 0});
  cases.push_back({"reversed view", make_layout({29}, {-1}, {1}), 29, 29, 28, 0});
  cases.push_back({"broadcast scalar", make_layout({5, 33}, {0, 0}, {33, 1}), 1, 165, 0, 0});
  cases.push_back({"broadcast row (rows path, outer source stride 0)", make_layout({6, 17}, {0, 1}, {17, 1}), 17, 102, 0, 0});
  cases.push_back({"broadcast row of 8 (vector rows)", make_layout({6, 8}, {0, 1}, {8, 1}), 8, 48, 0, 0});
  cases.push_back({"0-d", make_layout({}, {}, {}), 1, 1, 0, 0});
  {
    const std::vector<int64_t> shape{2, 3, 2, 3, 2, 5};
    std::vector<int64_t> dst = contiguous_strides(shape), src(6);
    // Source: the same index space laid out with the dimensions in reverse order.
    int64_t e = 1;
    for (int d = 0; d < 6; ++d) {
      src[d] = e;
      e *= shape[d];
    }
    cases.push_back({"6-d reversed dimension order", make_layout(shape, src, dst), 360, 360, 0, 0});
  }
  return cases;
}

// Source values for a copy from S to D: specials where D is floating point, values in range otherwise.
template <class S, class D> std::vector<S> source_values(int64_t n, uint64_t seed) {
  constexpr bool d_float = test::is_float_like_v<D>;
  if constexpr (!test::is_float_like_v<S>) {
    const float lo = std::is_same_v<S, uint8_t> ? 0.0f : -70000.0f, hi = std::is_same_v<S, uint8_t> ? 255.99f : 70000.0f;
    std::vector<float> r = test::random_floats(static_cast<size_t>(n), seed, lo, hi);
    std::vector<S> v(r.size());
    for (size_t i = 0; i < r.size(); ++i) v[i] = static_cast<S>(r[i]);
    return v;
  } else {
    const float lo = d_float ? -4.0f : (std::is_same_v<D, uint8_t> ? 0.0f : -1000.0f);
    const float hi = d_float ? 4.0f : (std::is_same_v<D, uint8_t> ? 255.0f : 1000.0f);
    std::vector<float> r = test::random_floats(static_cast<size_t>(n), seed, lo, hi);
    if (d_float) {
      const float specials[] = {NAN, INFINITY, -INFINITY, -0.0f, 1e5f, -7e4f, 3e-6f, 1e-9f, 65519.0f, 65520.0f};
      for (size_t i = 0; i < r.size(); i += 7) r[i] = specials[(i / 7) % (sizeof specials / sizeof specials[0])];
    }
    return test::to_storage<S>(r);
  }
}

template <class S, class D> void run_copy_case(const CopyCase& c, uint64_t seed, const std::vector<test::CudaConfig>& configs) {
  const std::vector<S> src = source_values<S, D>(c.src_elems, seed);
  const std::vector<D> dst0 = test::to_storage<D>(test::random_floats(static_cast<size_t>(c.dst_elems), seed + 1, 0.0f, 100.0f));
  std::vector<D> want = dst0;
  cpu::copy_strided<S, D>(src.data() + c.src_off, want.data() + c.dst_off, c.layout);
  DeviceBuffer<S> dsrc(src);
  DeviceBuffer<D> ddst(dst0.size());
  for (const auto& cfg : configs) {
    CAPTURE(cfg.name);
    test::ScopedConfig scoped(cfg);
    ddst.upload(dst0);
    cuda::copy_strided<S, D>(dsrc.get() + c.src_off, ddst.get() + c.dst_off, c.layout, nullptr);
    const std::vector<D> got = ddst.download();
    const int64_t bad = test::bits_mismatch(got, want);
    CHECK_MESSAGE(bad < 0, c.name, " ", test::type_name<S>(), "->", test::type_name<D>(), ": first bit mismatch at [",
                  bad, "] got ", test::as_double_or_zero(got, bad), " want ", test::as_double_or_zero(want, bad));
  }
}

}  // namespace

TEST_CASE("cuda copy_strided: every dtype pair, every layout path, bit-exact against the CPU") {
  const std::vector<CopyCase> cases = copy_cases();
  uint64_t seed = 100;
  test::for_each_type(test::StorageTypes{}, [&](auto s_tag) {
    using S = typename decltype(s_tag)::type;
    test::for_each_type(test::StorageTypes{}, [&](auto d_tag) {
      using D = typename decltype(d_tag)::type;
      // The float-family pairs under every schedule; pairs with an integer side under round-robin
      // (the same kernels, only the element conversion differs).
      const bool sweep = test::is_float_like_v<S> && test::is_float_like_v<D>;
      const auto configs = sweep ? test::cuda_configs() : test::cuda_config_rr();
      for (const CopyCase& c : cases) {
        CAPTURE(c.name);
        run_copy_case<S, D>(c, seed++, configs);
      }
    });
  });
}

TEST_CASE("cuda copy_strided: a run longer than the grid cap (grid-stride loops), f32 -> f16 and f16 -> f16") {
  const int64_t n = 4 * 1024 * 256 + 37;  // more packs than 1024 blocks x 256 threads
  const CopyLayout L = make_layout({n}, {1}, {1});
  const std::vector<float> x = test::random_floats(static_cast<size_t>(n), 7, -3.0f, 3.0f);
  std::vector<f16> want(static_cast<size_t>(n));
  cpu::copy_strided<float, f16>(x.data(), want.data(), L);
  DeviceBuffer<float> dx(x);
  DeviceBuffer<f16> dy(static_cast<size_t>(n)), dz(static_cast<size_t>(n));
  for (const auto& cfg : test::cuda_config_rr()) {
    test::ScopedConfig scoped(cfg);
    cuda::copy_strided<float, f16>(dx.get(), dy.get(), L, nullptr);
    CHECK(test::bits_mismatch(dy.download(), want) < 0);
    cuda::copy_strided<f16, f16>(dy.get(), dz.get(), L, nullptr);
    CHECK(test::bits_mismatch(dz.download(), want) < 0);
  }
}

TEST_CASE("cuda fill_strided: every dtype, flat and strided, bit-exact against the CPU") {
  std::vector<CopyCase> cases;
  for (int64_t n : {1, 31, 33, 1007})
    for (int64_t off : {0, 3})
      cases.push_back({"flat n=" + std::to_string(n) + " offset " + std::to_string(off), make_layout({n}, {1}, {1}), 1,
                       n + off, 0, off});
  cases.push_back({"channel slice c=5 of 12 at 3", make_layout({2, 3, 4, 5}, {0, 0, 0, 0}, {144, 48, 12, 1}), 1, 288, 0, 3});
  cases.push_back({"every other element", make_layout({40}, {0}, {2}), 1, 80, 0, 1});
  cases.push_back({"0-d", make_layout({}, {}, {}), 1, 1, 0, 0});
  test::for_each_type(test::StorageTypes{}, [&](auto tag) {
    using D = typename decltype(tag)::type;
    const D values[] = {test::from_float<D>(0.0f), test::from_float<D>(2.5f), test::from_float<D>(-7.0f)};
    for (const CopyCase& c : cases)
      for (const D value : values) {
        const std::vector<D> dst0 = test::to_storage<D>(test::random_floats(static_cast<size_t>(c.dst_elems), 3, 10.0f, 90.0f));
        std::vector<D> want = dst0;
        cpu::fill_strided<D>(want.data() + c.dst_off, c.layout, value);
        DeviceBuffer<D> d(dst0.size());
        for (const auto& cfg : test::cuda_configs()) {
          CAPTURE(cfg.name);
          test::ScopedConfig scoped(cfg);
          d.upload(dst0);
          cuda::fill_strided<D>(d.get() + c.dst_off, c.layout, value, nullptr);
          CHECK_MESSAGE(test::bits_mismatch(d.download(), want) < 0, c.name, " ", test::type_name<D>());
        }
      }
  });
}

TEST_CASE("cuda convert_*: the four bulk conversions, bit-exact against kernels/cpu/convert.h") {
  for (int64_t n : {1, 31, 33, 1007})
    for (int64_t off : {0, 1, 4}) {
      CAPTURE(n);
      CAPTURE(off);
      std::vector<float> x = test::random_floats(static_cast<size_t>(n + off), 11, -70000.0f, 70000.0f);
      for (size_t i = 0; i < x.size(); i += 5) x[i] *= 1e-9f;  // subnormal and underflowing halves
      if (x.size() > 2) x[2] = NAN;
      std::vector<f16> h(x.size());
      std::vector<bf16> b(x.size());
      cpu::convert_f32_to_f16(x.data(), h.data(), static_cast<int64_t>(x.size()));
      cpu::convert_f32_to_bf16(x.data(), b.data(), static_cast<int64_t>(x.size()));
      std::vector<float> hf(x.size()), bf(x.size());
      cpu::convert_f16_to_f32(h.data(), hf.data(), static_cast<int64_t>(x.size()));
      cpu::convert_bf16_to_f32(b.data(), bf.data(), static_cast<int64_t>(x.size()));
      DeviceBuffer<float> dx(x), dhf(x.size()), dbf(x.size());
      DeviceBuffer<f16> dh(h.size());
      DeviceBuffer<bf16> db(b.size());
      for (const auto& cfg : test::cuda_configs()) {
        CAPTURE(cfg.name);
        test::ScopedConfig scoped(cfg);
        // Offsets applied to both sides: the kernel sees a view starting `off` elements in.
        cuda::convert_f32_to_f16(dx.get() + off, dh.get() + off, n, nullptr);
        cuda::convert_f32_to_bf16(dx.get() + off, db.get() + off, n, nullptr);
        std::vector<f16> gh = dh.download();
        std::vector<bf16> gb = db.download();
        for (int64_t i = 0; i < off; ++i) gh[static_cast<size_t>(i)] = h[static_cast<size_t>(i)], gb[static_cast<size_t>(i)] = b[static_cast<size_t>(i)];
        CHECK(test::bits_mismatch(gh, h) < 0);
        CHECK(test::bits_mismatch(gb, b) < 0);
        dh.upload(h);
        db.upload(b);
        cuda::convert_f16_to_f32(dh.get() + off, dhf.get() + off, n, nullptr);
        cuda::convert_bf16_to_f32(db.get() + off, dbf.get() + off, n, nullptr);
        std::vector<float> ghf = dhf.download(), gbf = dbf.download();
        for (int64_t i = 0; i < off; ++i) ghf[static_cast<size_t>(i)] = hf[static_cast<size_t>(i)], gbf[static_cast<size_t>(i)] = bf[static_cast<size_t>(i)];
        CHECK(test::bits_mismatch(ghf, hf) < 0);
        CHECK(test::bits_mismatch(gbf, bf) < 0);
      }
    }
}
