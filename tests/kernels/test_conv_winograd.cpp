// The Winograd convolution (kernels/cpu/conv2d_winograd.h) against the naive float64 reference:
// every tile size, forward, backward data and backward weight, dense and dilated, ragged H and W,
// padding 0 to 4, every element compared; the blocking paths run once more under tiny scratch
// limits; the dispatcher's override; bit-identical results for any thread count.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cpu/conv2d.h"
#include "kernels/cpu/conv2d_winograd.h"
#include "kernels/cpu/conv2d_winograd_matrices.h"
#include "kernels/cpu/thread_pool.h"
#include "tests/common/compare.h"
#include "tests/common/requirement.h"

using namespace seg::cpu;
using seg::num_threads;
using seg::set_num_threads;

namespace {

struct Case {
  int64_t N, H, W, C, O, pad_h, pad_w, dil_h, dil_w;
};
// Channel counts below, at and above the 8 and 16 lanes (scalar tails); H, W that leave partial
// tiles for every m (and for every residue class when dilated); padding 0..4 (pad 3 > 2*dil makes
// the backward data's equivalent padding negative); asymmetric padding and dilation.
const Case kCases[] = {
    {1, 7, 9, 5, 6, 1, 1, 1, 1},      {2, 11, 10, 19, 21, 1, 1, 1, 1}, {1, 13, 15, 16, 24, 2, 2, 2, 2},
    {2, 9, 14, 33, 17, 2, 2, 1, 1},   {1, 17, 12, 24, 40, 4, 4, 4, 4}, {1, 10, 11, 12, 10, 1, 1, 2, 2},
    {1, 6, 5, 8, 8, 0, 0, 1, 1},      {1, 8, 7, 9, 7, 3, 3, 1, 1},     {2, 9, 13, 10, 12, 1, 2, 1, 2},
    {1, 3, 4, 3, 2, 1, 1, 1, 1},
};

ConvShape shape_of(const Case& c) {
  ConvShape s;
  s.N = c.N, s.H = c.H, s.W = c.W, s.C = c.C, s.O = c.O, s.KH = s.KW = 3;
  s.pad_h = c.pad_h, s.pad_w = c.pad_w, s.dil_h = c.dil_h, s.dil_w = c.dil_w;
  return s;
}

std::vector<float> fill(int64_t n, float a, float b) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = std::sin(a * static_cast<float>(i) + b);
  return v;
}
std::vector<double> widen(const std::vector<float>& v) { return {v.begin(), v.end()}; }

// The bound of every comparison below is a small multiple of the error the f32 implicit GEMM (the
// production path Winograd replaces) itself has against the float64 reference, measured here:
//   unit     = the largest max-abs error of the f32 implicit GEMM per sqrt(terms summed) over all
//              kCases and the three passes (about 2.5e-6 on these values: an eighth of
//              test_conv_paths.cpp's 2e-5 per sqrt(term) bound, which unit is checked against);
//   ratio(m) = how much more F(m x m) rounds than the implicit GEMM on the real 3x3 layers of
//              ResNet50dilated, the PPM decoder and the C1 head, measured by
//              `build/bin/lab_winograd error` (docs/performance.md, "Winograd"): the largest ratio
//              of the two max errors over those layers and passes was 0.7 (F(2x2)), 8.2 (F(4x4)),
//              12.8 (F(6x6)); rounded up to 1, 10, 16;
//   bound    = 2 * ratio(m) * unit * sqrt(terms): the 2 covers the spread of a max over small tensors.
// On these cases the largest Winograd error is 1/4 to 1/3 of its bound (F(2x2) 1.7e-6, F(4x4)
// 1.2e-5, F(6x6) 2.5e-5 per sqrt(term)): with the factor 2 replaced by 0.5, F(2x2) and F(6x6) fail.
double error_ratio(int m) { return m == 2 ? 1 : m == 4 ? 10 : 16; }
double gemm_error_unit();  // below

struct Reference {
  std::vector<double> y, dx, dw, db;
};
Reference reference(const ConvShape& s, const std::vector<float>& x, const std::vector<float>& w,
                    const std::vector<float>& b, const std::vector<float>& dy) {
  Reference r{std::vector<double>(s.y_numel()), std::vector<double>(s.x_numel()), std::vector<double>(s.w_numel()),
              std::vector<double>(s.O)};
  const auto xd = widen(x), wd = widen(w), bd = widen(b), dyd = widen(dy);
  conv2d_forward_ref<double>(s, xd.data(), wd.data(), bd.data(), r.y.data());
  conv2d_backward_ref<double>(s, xd.data(), wd.data(), dyd.data(), r.dx.data(), r.dw.data(), r.db.data());
  return r;
}

void check_case(const Case& c, int m) {
  const ConvShape s = shape_of(c);
  const auto x = fill(s.x_numel(), 0.31f, 0.2f), w = fill(s.w_numel(), 0.17f, 0.5f), b = fill(s.O, 0.7f, 0.1f);
  const auto dy = fill(s.y_numel(), 0.13f, 0.9f);
  const Reference ref = reference(s, x, w, b, dy);
  // Values in [-1, 1]; forward and backward data sum 9*C resp. 9*O products, backward weight N*Ho*Wo.
  const double bound = 2 * error_ratio(m) * gemm_error_unit();
  const seg::test::Tolerance tol_y{bound * std::sqrt(9.0 * s.C), 0}, tol_dx{bound * std::sqrt(9.0 * s.O), 0};
  const seg::test::Tolerance tol_dw{bound * std::sqrt(double(s.N * s.Ho() * s.Wo())), 0};
  std::vector<float> y(s.y_numel(), NAN), dx(s.x_numel(), NAN), dw(s.w_numel(), NAN), db(s.O, NAN);
  conv2d_forward_winograd(m, s, x.data(), w.data(), b.data(), y.data());
  conv2d_backward_data_winograd(m, s, w.data(), dy.data(), dx.data());
  conv2d_backward_weight_winograd(m, s, x.data(), dy.data(), dw.data(), db.data());
  CAPTURE(m);
  INFO("N=" << c.N << " H=" << c.H << " W=" << c.W << " C=" << c.C << " O=" << c.O << " pad=" << c.pad_h << ","
             << c.pad_w << " dil=" << c.dil_h << "," << c.dil_w);
  SEG_CHECK_CLOSE(y, ref.y, tol_y);
  SEG_CHECK_CLOSE(dx, ref.dx, tol_dx);
  SEG_CHECK_CLOSE(dw, ref.dw, tol_dw);
  SEG_CHECK_CLOSE(db, ref.db, tol_dw);
  // Without bias the forward is the same sums minus b.
  std::vector<float> y0(s.y_numel(), NAN);
  conv2d_forward_winograd(m, s, x.data(), w.data(), nullptr, y0.data());
  std::vector<float> y0b(y0);
  for (int64_t i = 0; i < s.y_numel(); ++i) y0b[i] += b[i % s.O];
  SEG_CHECK_CLOSE(y0b, ref.y, tol_y);
}

// The f32 implicit GEMM's own error (the unit above), measured once on kCases.
double max_abs_error(const std::vector<float>& got, const std::vector<double>& want) {
  const auto c = seg::test::compare(got.data(), want.data(), static_cast<int64_t>(got.size()), {0, 0});
  return c.max_abs;
}
double gemm_error_unit() {
  static const double unit = [] {
    double u = 0;
    for (const Case& c : kCases) {
      const ConvShape s = shape_of(c);
      const auto x = fill(s.x_numel(), 0.31f, 0.2f), w = fill(s.w_numel(), 0.17f, 0.5f), b = fill(s.O, 0.7f, 0.1f);
      const auto dy = fill(s.y_numel(), 0.13f, 0.9f);
      const Reference ref = reference(s, x, w, b, dy);
      std::vector<float> y(s.y_numel()), dx(s.x_numel()), dw(s.w_numel()), db(s.O);
      conv2d_forward_gemm<float>(s, x.data(), w.data(), b.data(), y.data());
      conv2d_backward_data_gemm<float>(s, w.data(), dy.data(), dx.data());
      conv2d_backward_weight_gemm<float>(s, x.data(), dy.data(), dw.data(), db.data());
      u = std::max({u, max_abs_error(y, ref.y) / std::sqrt(9.0 * s.C), max_abs_error(dx, ref.dx) / std::sqrt(9.0 * s.O),
                    max_abs_error(dw, ref.dw) / std::sqrt(double(s.N * s.Ho() * s.Wo()))});
    }
    return u;
  }();
  return unit;
}

class ScopedLimits {
 public:
  explicit ScopedLimits(const WinogradLimits& l) : saved_(winograd_limits()) { set_winograd_limits(l); }
  ~ScopedLimits() { set_winograd_limits(saved_); }

 private:
  WinogradLimits saved_;
};

}  // namespace

TEST_CASE("winograd matrices: AT ((G g) .* (BT d)) is the 1-D correlation, exactly in double") {
  auto check = [](const winograd::Matrices& M) {
    CAPTURE(M.m);
    for (int trial = 0; trial < 5; ++trial) {
      double d[winograd::kMaxAlpha], g[3];
      for (int i = 0; i < M.alpha; ++i) d[i] = std::sin(1.3 * i + trial);
      for (int k = 0; k < 3; ++k) g[k] = std::cos(0.7 * k + 2.0 * trial);
      std::vector<double> got(M.m), want(M.m);
      double prod[winograd::kMaxAlpha];
      for (int xi = 0; xi < M.alpha; ++xi) {
        double gg = 0, dd = 0;
        for (int k = 0; k < 3; ++k) gg += M.G[xi][k] * g[k];
        for (int i = 0; i < M.alpha; ++i) dd += M.BT[xi][i] * d[i];
        prod[xi] = gg * dd;
      }
      for (int i = 0; i < M.m; ++i) {
        for (int xi = 0; xi < M.alpha; ++xi) got[i] += M.AT[i][xi] * prod[xi];
        for (int k = 0; k < 3; ++k) want[i] += d[i + k] * g[k];
      }
      SEG_CHECK_CLOSE(got, want, seg::test::Tolerance{1e-12, 0});
    }
  };
  check(winograd::kMatrices<2>);
  check(winograd::kMatrices<4>);
  check(winograd::kMatrices<6>);
  // F(4,3) from the construction is the textbook one (Lavin & Gray 2016), entry for entry.
  CHECK(winograd::kMatrices<4>.BT[0][0] == 4.0);
  CHECK(winograd::kMatrices<4>.BT[0][2] == -5.0);
  CHECK(winograd::kMatrices<4>.G[1][0] == -1.0 / 6.0);
  CHECK(winograd::kMatrices<4>.G[3][0] == 1.0 / 24.0);
  CHECK(winograd::kMatrices<4>.AT[3][3] == 8.0);
}

TEST_CASE("winograd tolerance unit: the f32 implicit GEMM's measured error, within test_conv_paths.cpp's bound") {
  const double u = gemm_error_unit();
  MESSAGE("f32 implicit GEMM: max abs error per sqrt(term) on kCases = " << u);
  CHECK(u > 0);        // a zero unit would make every bound zero: the f64 reference would be the f32 path
  CHECK(u <= 2e-5);    // test_conv_paths.cpp's bound for the same path
}

TEST_CASE("winograd F(2x2), F(4x4), F(6x6) equal the float64 reference: forward, backward data, backward weight") {
  for (int m : {2, 4, 6})
    for (const Case& c : kCases) check_case(c, m);
}

TEST_CASE("winograd blocking paths (K, N, channel blocks; tile super-blocks, blocks and chunks) equal the reference") {
  // Limits small enough that these shapes take every blocking path: U holds one 8-channel block,
  // M a few tiles, V one tile per block, the backward-weight GEMM depth a few tiles.
  WinogradLimits tiny;
  tiny.weight_floats = 36 * 8 * 24;
  tiny.product_floats = 36 * 8 * 5;
  tiny.input_floats = 36 * 16;
  tiny.channel_block = 8;
  const ScopedLimits scoped(tiny);
  const Case cases[] = {{2, 11, 10, 19, 21, 1, 1, 1, 1}, {1, 13, 15, 40, 24, 2, 2, 2, 2}, {1, 9, 8, 12, 44, 1, 1, 1, 1}};
  for (int m : {2, 4, 6})
    for (const Case& c : cases) check_case(c, m);
}

TEST_CASE("winograd is bit-identical for 1, 2 and 3 threads") {
  const Case c{2, 21, 19, 24, 20, 2, 2, 2, 2};
  const ConvShape s = shape_of(c);
  const auto x = fill(s.x_numel(), 0.31f, 0.2f), w = fill(s.w_numel(), 0.17f, 0.5f), b = fill(s.O, 0.7f, 0.1f);
  const auto dy = fill(s.y_numel(), 0.13f, 0.9f);
  const int saved = num_threads();
  for (int m : {2, 4}) {
    std::vector<float> first;
    for (int threads : {1, 2, 3}) {
      set_num_threads(threads);
      std::vector<float> y(s.y_numel()), dx(s.x_numel()), dw(s.w_numel()), db(s.O);
      conv2d_forward_winograd(m, s, x.data(), w.data(), b.data(), y.data());
      conv2d_backward_data_winograd(m, s, w.data(), dy.data(), dx.data());
      conv2d_backward_weight_winograd(m, s, x.data(), dy.data(), dw.data(), db.data());
      std::vector<float> all(y);
      all.insert(all.end(), dx.begin(), dx.end());
      all.insert(all.end(), dw.begin(), dw.end());
      all.insert(all.end(), db.begin(), db.end());
      if (first.empty()) first = all;
      CAPTURE(m);
      CAPTURE(threads);
      CHECK(std::memcmp(all.data(), first.data(), all.size() * sizeof(float)) == 0);
    }
  }
  set_num_threads(saved);
}

TEST_CASE("conv dispatcher: every algorithm name round-trips; Winograd only where it applies, never for float64") {
  const ConvAlgo saved = conv_algo();
  ConvShape s = shape_of({1, 16, 16, 64, 64, 1, 1, 1, 1});
  for (ConvAlgo a : {ConvAlgo::winograd2, ConvAlgo::winograd4, ConvAlgo::winograd6}) {
    set_conv_algo(a);
    for (ConvPass p : {ConvPass::forward, ConvPass::backward_data, ConvPass::backward_weight}) {
      CHECK(conv_algo_chosen(s, p, true) == a);
      CHECK(conv_algo_chosen(s, p, false) != a);  // float64: the exact paths
      CHECK(conv_algo_chosen(s, p, false) == ConvAlgo::gemm);
    }
  }
  set_conv_algo(ConvAlgo::winograd4);
  ConvShape strided = s;
  strided.stride_h = strided.stride_w = 2;
  CHECK(conv_algo_chosen(strided, ConvPass::forward, true) == ConvAlgo::gemm);
  ConvShape grouped = s;
  grouped.groups = 2;
  CHECK(conv_algo_chosen(grouped, ConvPass::forward, true) == ConvAlgo::gemm);
  ConvShape depthwise = s;
  depthwise.groups = 64;
  CHECK(conv_algo_chosen(depthwise, ConvPass::forward, true) == ConvAlgo::depthwise);
  ConvShape one = s;
  one.KH = one.KW = 1;
  one.pad_h = one.pad_w = 0;
  CHECK(conv_algo_chosen(one, ConvPass::forward, true) == ConvAlgo::gemm);
  set_conv_algo(ConvAlgo::winograd);  // the automatic tile where it picks one, else F(2x2)
  const ConvAlgo w = conv_algo_chosen(s, ConvPass::forward, true);
  CHECK(w == ConvAlgo::winograd2);
  // The automatic rule (conv2d_dispatch.cpp): F(2x2) for 3x3 stride-1 dense float32 layers with at
  // least 32 channels on the GEMM's depth and output side, every pass; the implicit GEMM otherwise.
  set_conv_algo(ConvAlgo::automatic);
  for (ConvPass p : {ConvPass::forward, ConvPass::backward_data, ConvPass::backward_weight}) {
    CHECK(conv_algo_chosen(s, p, true) == ConvAlgo::winograd2);
    CHECK(conv_algo_chosen(s, p, false) == ConvAlgo::gemm);
    CHECK(conv_algo_chosen(strided, p, true) == ConvAlgo::gemm);
  }
  ConvShape narrow = s;
  narrow.O = 16;
  CHECK(conv_algo_chosen(narrow, ConvPass::forward, true) == ConvAlgo::gemm);
  // no-winograd: the automatic choice without Winograd (the comparison arm of docs/performance.md's
  // two-seed training check): the 3x3 layer goes to the implicit GEMM, depthwise keeps its kernel.
  set_conv_algo(ConvAlgo::no_winograd);
  for (ConvPass p : {ConvPass::forward, ConvPass::backward_data, ConvPass::backward_weight}) {
    CHECK(conv_algo_chosen(s, p, true) == ConvAlgo::gemm);
    CHECK(conv_algo_chosen(depthwise, p, true) == ConvAlgo::depthwise);
    CHECK(conv_algo_chosen(s, p, false) == ConvAlgo::gemm);
  }
  CHECK(std::string(conv_algo_name(ConvAlgo::no_winograd)) == "no-winograd");
  set_conv_algo(saved);
}

// Run by CTest once per SEG_CONV_ALGO value (tests/CMakeLists.txt: test_kernels_conv_algo_env with
// winograd4, test_kernels_conv_algo_<name> with the others). Outside those tests the variable is
// unset and the case reports itself skipped (exit 77, requirement conv_algo_env), never passed:
// the variable must reach the dispatcher, and conv2d_forward etc. must then run exactly that path
// (bit for bit the same numbers as calling it directly).
SEG_TEST_REQUIREMENT(conv_algo_env, [] { return std::getenv("SEG_CONV_ALGO") ? "" : "SEG_CONV_ALGO is not set"; });
TEST_CASE("SEG_CONV_ALGO forces the dispatcher's path" * SEG_REQUIRES(conv_algo_env)) {
  const char* env = std::getenv("SEG_CONV_ALGO");
  REQUIRE(env);
  CHECK(std::string(conv_algo_name(conv_algo())) == env);
  const ConvShape s = shape_of({2, 13, 11, 20, 24, 2, 2, 2, 2});
  const auto x = fill(s.x_numel(), 0.31f, 0.2f), w = fill(s.w_numel(), 0.17f, 0.5f), b = fill(s.O, 0.7f, 0.1f);
  const auto dy = fill(s.y_numel(), 0.13f, 0.9f);
  std::vector<float> y(s.y_numel()), dx(s.x_numel()), dw(s.w_numel()), db(s.O);
  conv2d_forward(s, x.data(), w.data(), b.data(), y.data());
  conv2d_backward_data(s, w.data(), dy.data(), dx.data());
  conv2d_backward_weight(s, x.data(), dy.data(), dw.data(), db.data());
  std::vector<float> y2(s.y_numel()), dx2(s.x_numel()), dw2(s.w_numel()), db2(s.O);
  const ConvAlgo a = conv_algo_chosen(s, ConvPass::forward, true);
  const std::string name = conv_algo_name(a);
  if (name == "gemm") {
    conv2d_forward_gemm<float>(s, x.data(), w.data(), b.data(), y2.data());
    conv2d_backward_data_gemm<float>(s, w.data(), dy.data(), dx2.data());
    conv2d_backward_weight_gemm<float>(s, x.data(), dy.data(), dw2.data(), db2.data());
  } else if (name == "direct") {
    conv2d_forward_direct<float>(s, x.data(), w.data(), b.data(), y2.data());
    conv2d_backward_data_direct<float>(s, w.data(), dy.data(), dx2.data());
    conv2d_backward_weight_direct<float>(s, x.data(), dy.data(), dw2.data(), db2.data());
  } else {
    REQUIRE(name.rfind("winograd", 0) == 0);
    const int m = name.back() - '0';
    conv2d_forward_winograd(m, s, x.data(), w.data(), b.data(), y2.data());
    conv2d_backward_data_winograd(m, s, w.data(), dy.data(), dx2.data());
    conv2d_backward_weight_winograd(m, s, x.data(), dy.data(), dw2.data(), db2.data());
  }
  CHECK(std::memcmp(y.data(), y2.data(), y.size() * sizeof(float)) == 0);
  CHECK(std::memcmp(dx.data(), dx2.data(), dx.size() * sizeof(float)) == 0);
  CHECK(std::memcmp(dw.data(), dw2.data(), dw.size() * sizeof(float)) == 0);
  CHECK(std::memcmp(db.data(), db2.data(), db.size() * sizeof(float)) == 0);
  // and the paths do differ in their rounding, so the comparison above can tell them apart
  std::vector<float> y3(s.y_numel());
  if (name == "gemm" || name == "direct") conv2d_forward_winograd(4, s, x.data(), w.data(), b.data(), y3.data());
  else conv2d_forward_gemm<float>(s, x.data(), w.data(), b.data(), y3.data());
  CHECK(std::memcmp(y.data(), y3.data(), y.size() * sizeof(float)) != 0);
}
