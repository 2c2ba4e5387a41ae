// kernels/cuda/conv2d.h against the CPU reference convolution (kernels/cpu/conv2d.h, *_ref in
// double) on the same T-rounded inputs: forward, backward data, backward weight and bias, every path
// (automatic = depthwise, tensor cores or the SIMT implicit GEMM by shape, dtype and the TF32 switch;
// the SIMT implicit GEMM forced where automatic takes another path; the direct fallback), every
// dtype, every output element, under every schedule. The tensor-core kernels' own suite is
// test_conv_tc.cpp; here they run as the dispatcher calls them (its workspace, dense pointers).
//
// Tolerance (f32_sum_tolerance, typed_host.h): each path accumulates in f32 a sum of n products whose
// exact value the double reference gives, so it is within (n+1)*2^-24 * sum|products| of it, then
// rounds to T (one ulp of T). n = KH*KW*Cg (forward), KH*KW*Og (backward data), N*Ho*Wo plus up to
// 128 slice partials (backward weight and bias); sum|products| per element is the reference applied
// to |x|, |w|, |dy| (its largest element is used). The helper's factor 2 is the margin. f32 on the
// tensor cores (TF32) adds the rounding of both factors to 10 mantissa bits (tf32_sum_tolerance);
// f16/bf16 factors are exact in the tensor cores' products, so the f32 bound holds for them there too.
// The f32 cases run with TF32 off (strict f32: the SIMT kernels) unless a case says otherwise.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/cpu/conv2d.h"
#include "kernels/cuda/conv2d.h"
#include "tests/kernels/cuda/cuda_test_util.h"
#include "tests/kernels/cuda/typed_host.h"

namespace {

using seg::ConvShape;
using seg::cuda::ConvAlgo;
using namespace seg::test;

struct Case {
  int64_t N, H, W, C, O, K, stride, pad, dil, groups;
  bool bias;
};

ConvShape shape_of(const Case& c) {
  ConvShape s;
  s.N = c.N, s.H = c.H, s.W = c.W, s.C = c.C, s.O = c.O, s.KH = s.KW = c.K;
  s.stride_h = s.stride_w = c.stride, s.pad_h = s.pad_w = c.pad, s.dil_h = s.dil_w = c.dil, s.groups = c.groups;
  return s;
}

const char* algo_name(ConvAlgo a) {
  switch (a) {
    case ConvAlgo::implicit_gemm: return "implicit_gemm";
    case ConvAlgo::depthwise: return "depthwise";
    case ConvAlgo::direct: return "direct";
    case ConvAlgo::tensor_cores: return "tensor_cores";
    default: return "automatic";
  }
}

std::vector<double> absolute(const std::vector<double>& v) {
  std::vector<double> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = std::fabs(v[i]);
  return out;
}
double largest(const std::vector<double>& v) {
  double m = 0;
  for (double a : v) m = std::max(m, a);
  return m;
}

// Restores the automatic choice when a test leaves (also on failure).
struct ScopedAlgo {
  explicit ScopedAlgo(ConvAlgo a) { seg::cuda::set_conv_algo(a); }
  ~ScopedAlgo() { seg::cuda::set_conv_algo(ConvAlgo::automatic); }
};

template <class T>
void check_conv(const Case& c, const std::vector<ConvAlgo>& algos, const std::vector<CudaConfig>& configs,
                size_t offset = 0) {
  const ConvShape s = shape_of(c);
  CAPTURE(dtype_label<T>());
  CAPTURE(offset);
  const size_t nx = static_cast<size_t>(s.x_numel()), nw = static_cast<size_t>(s.w_numel()),
               ny = static_cast<size_t>(s.y_numel()), no = static_cast<size_t>(s.O);
  const std::vector<T> x = to_storage<T>(random_floats(nx, 1 + s.C, -1.0f, 1.0f));
  const std::vector<T> w = to_storage<T>(random_floats(nw, 2 + s.O, -1.0f, 1.0f));
  const std::vector<T> b = to_storage<T>(random_floats(no, 3, -1.0f, 1.0f));
  const std::vector<T> dy = to_storage<T>(random_floats(ny, 4 + s.H, -1.0f, 1.0f));
  const std::vector<double> xd = widen(x), wd = widen(w), bd = widen(b), dyd = widen(dy);

  std::vector<double> y_ref(ny), dx_ref(nx), dw_ref(nw), db_ref(no);
  seg::cpu::conv2d_forward_ref<double>(s, xd.data(), wd.data(), c.bias ? bd.data() : nullptr, y_ref.data());
  seg::cpu::conv2d_backward_ref<double>(s, xd.data(), wd.data(), dyd.data(), dx_ref.data(), dw_ref.data(),
                                        db_ref.data());
  // sum |products| per element: the reference on absolute values.
  const std::vector<double> xa = absolute(xd), wa = absolute(wd), ba = absolute(bd), dya = absolute(dyd);
  std::vector<double> y_abs(ny), dx_abs(nx), dw_abs(nw), db_abs(no);
  seg::cpu::conv2d_forward_ref<double>(s, xa.data(), wa.data(), c.bias ? ba.data() : nullptr, y_abs.data());
  seg::cpu::conv2d_backward_ref<double>(s, xa.data(), wa.data(), dya.data(), dx_abs.data(), dw_abs.data(),
                                        db_abs.data());
  const int64_t pixels = s.N * s.Ho() * s.Wo();

  DeviceArray<T> d_x(x, offset), d_w(w, offset), d_b(b, offset), d_dy(dy, offset);
  DeviceArray<T> d_y(ny, offset), d_dx(nx, offset), d_dw(nw, offset), d_db(no, offset);
  DeviceArray<unsigned char> d_ws(seg::cuda::conv2d_backward_weight_workspace_bytes(s));
  for (ConvAlgo algo : algos) {
    CAPTURE(algo_name(algo));
    ScopedAlgo scoped_algo(algo);
    const bool tf32 = std::is_same_v<T, float> && seg::cuda::conv2d_algo<T>(s) == ConvAlgo::tensor_cores;
    CAPTURE(tf32);
    const auto bound = tf32 ? &tf32_sum_tolerance<T> : &f32_sum_tolerance<T>;
    const Tolerance tol_y = bound(s.KH * s.KW * s.Cg() + 1, largest(y_abs));
    const Tolerance tol_dx = bound(s.KH * s.KW * s.Og(), largest(dx_abs));
    const Tolerance tol_dw = bound(pixels + 128, largest(dw_abs));
    // The bias gradient sums dy in plain f32 on every path (no tensor cores).
    const Tolerance tol_db = f32_sum_tolerance<T>(pixels + 128, largest(db_abs));
    for (const auto& cfg : configs) {
      CAPTURE(cfg.name);
      ScopedConfig scoped(cfg);
      d_y.poison();
      d_dx.poison();
      d_dw.poison();
      d_db.poison();
      seg::cuda::conv2d_forward<T>(s, d_x.get(), d_w.get(), c.bias ? d_b.get() : nullptr, d_y.get(), nullptr);
      SEG_CHECK_CLOSE(d_y.download(), y_ref, tol_y);
      seg::cuda::conv2d_backward_data<T>(s, d_w.get(), d_dy.get(), d_dx.get(), nullptr);
      SEG_CHECK_CLOSE(d_dx.download(), dx_ref, tol_dx);
      seg::cuda::conv2d_backward_weight<T>(s, d_x.get(), d_dy.get(), d_dw.get(), c.bias ? d_db.get() : nullptr,
                                           d_ws.get(), nullptr);
      SEG_CHECK_CLOSE(d_dw.download(), dw_ref, tol_dw);
      if (c.bias) SEG_CHECK_CLOSE(d_db.download(), db_ref, tol_db);
    }
  }
}

// N, H, W, C, O, K, stride, pad, dilation, groups, bias. No size is a multiple of the 64 x 64 tile.
const Case kCases[] = {
    {1, 7, 9, 3, 16, 3, 2, 1, 1, 1, true},      // a stem: C = 3, stride 2
    {3, 5, 6, 8, 150, 1, 1, 0, 1, 1, true},     // 1x1 to 150 classes, N = 3, 3 column tiles
    {2, 9, 7, 16, 12, 3, 1, 2, 2, 1, false},    // dilated 3x3 (2), pad 2
    {1, 11, 10, 8, 8, 3, 1, 4, 4, 1, true},     // dilated 3x3 (4), pad 4
    {2, 6, 7, 12, 18, 3, 1, 1, 1, 3, true},     // grouped: Cg = 4, Og = 6
    {1, 8, 8, 20, 70, 1, 2, 0, 1, 1, false},    // 1x1 stride 2 (a ResNet downsample), O = 70
    {2, 6, 5, 6, 9, 5, 1, 2, 1, 1, true},       // 5x5, C = 6 (not a multiple of 4 or 8)
    {1, 5, 7, 3, 4, 3, 1, 0, 1, 1, false},      // no padding
    {1, 7, 7, 40, 33, 3, 2, 1, 1, 1, true},     // 16-byte loads for every dtype, ragged O
    {1, 9, 9, 24, 24, 3, 1, 1, 1, 24, true},    // depthwise, stride 1
    {2, 9, 8, 16, 16, 3, 2, 1, 1, 16, false},   // depthwise, stride 2
    {1, 10, 11, 8, 8, 3, 1, 2, 2, 8, true},     // depthwise, dilation 2
    {1, 12, 9, 5, 5, 3, 1, 4, 4, 5, true},      // depthwise, dilation 4, C = 5 (no packs)
    {2, 17, 17, 8, 12, 3, 1, 1, 1, 1, true},    // 578 output pixels: backward weight in 3 slices
    {1, 33, 33, 8, 8, 3, 1, 1, 1, 8, true},     // depthwise, 1089 output pixels: 2 slices
};

// The SIMT implicit GEMM in f16/bf16 where automatic runs those on tensor cores (round-robin: the
// same kernel template runs under every schedule in f32).
template <class T> void check_half_igemm(const Case& c, size_t offset = 0) {
  if (seg::cuda::conv2d_algo<T>(shape_of(c)) == ConvAlgo::tensor_cores)
    check_conv<T>(c, {ConvAlgo::implicit_gemm}, cuda_config_rr(), offset);
}

}  // namespace

TEST_CASE("cuda conv2d forward and backward equal the double reference, every path and dtype") {
  // Automatic (TF32 off): f32 on the SIMT implicit GEMM, f16/bf16 on tensor cores for dense and
  // grouped shapes with >= 4 channels per group, the depthwise kernels for depthwise shapes, where
  // the implicit GEMM is forced too (groups = C, Cg = Og = 1). These run under every schedule; the
  // direct fallback (no shared memory, no barriers: nothing a schedule can change) and the half
  // SIMT implicit GEMM round-robin only, to keep the sanitizer runs short.
  ScopedTf32 strict(false);
  for (const Case& c : kCases) {
    CAPTURE(c.N);
    CAPTURE(c.H);
    CAPTURE(c.W);
    CAPTURE(c.C);
    CAPTURE(c.O);
    CAPTURE(c.K);
    CAPTURE(c.stride);
    CAPTURE(c.pad);
    CAPTURE(c.dil);
    CAPTURE(c.groups);
    std::vector<ConvAlgo> algos = {ConvAlgo::automatic};
    if (seg::cuda::conv2d_is_depthwise(shape_of(c))) algos.push_back(ConvAlgo::implicit_gemm);
    check_conv<float>(c, algos, cuda_configs());
    check_conv<seg::f16>(c, algos, cuda_configs());
    check_conv<seg::bf16>(c, algos, cuda_configs());
    check_half_igemm<seg::f16>(c);
    check_half_igemm<seg::bf16>(c);
    check_conv<float>(c, {ConvAlgo::direct}, cuda_config_rr());
    check_conv<seg::f16>(c, {ConvAlgo::direct}, cuda_config_rr());
    check_conv<seg::bf16>(c, {ConvAlgo::direct}, cuda_config_rr());
  }
}

TEST_CASE("cuda conv2d takes the element-wise loads for unaligned pointers and still matches") {
  // Channel counts that would use 16-byte loads on every operand; the offset makes every pointer
  // 4 (f32) or 2 (halves) bytes off.
  ScopedTf32 strict(false);
  const Case dense{1, 7, 6, 16, 24, 3, 1, 1, 1, 1, true}, dw{1, 7, 6, 16, 16, 3, 2, 1, 1, 16, true};
  for (const Case& c : {dense, dw}) {
    check_conv<float>(c, {ConvAlgo::automatic}, cuda_configs(), 1);
    check_conv<seg::f16>(c, {ConvAlgo::automatic}, cuda_configs(), 1);
    check_conv<seg::bf16>(c, {ConvAlgo::automatic}, cuda_configs(), 1);
    check_half_igemm<seg::f16>(c, 1);
  }
}

TEST_CASE("cuda conv2d at larger sizes: several tiles and reduction slices per path (round-robin)") {
  // Implicit GEMM: 800 output pixels (13 row tiles), K = 576 (36 or 18 K steps), 96 outputs, and a
  // backward weight split into 4 slices; depthwise: 2 x 46 x 46 x 32 (4232 output pixels, 5 slices).
  const Case dense{2, 20, 20, 64, 96, 3, 1, 1, 1, 1, true}, dw{2, 46, 46, 32, 32, 3, 1, 1, 1, 32, true};
  ScopedTf32 strict(false);
  check_conv<float>(dense, {ConvAlgo::automatic}, cuda_config_rr());
  check_conv<seg::f16>(dense, {ConvAlgo::automatic}, cuda_config_rr());
  check_conv<float>(dw, {ConvAlgo::automatic}, cuda_config_rr());
  check_conv<seg::bf16>(dw, {ConvAlgo::automatic}, cuda_config_rr());
}

TEST_CASE("cuda conv2d: forcing depthwise on a dense shape falls back to the automatic choice") {
  const Case dense{1, 5, 5, 4, 6, 3, 1, 1, 1, 1, true};
  ScopedTf32 strict(false);
  check_conv<float>(dense, {ConvAlgo::depthwise}, cuda_config_rr());
}

TEST_CASE("cuda conv2d dispatch: which path each shape, dtype and TF32 setting takes") {
  using seg::cuda::conv2d_algo;
  const ConvShape dense = shape_of(kCases[2]), stem = shape_of(kCases[0]), grouped = shape_of(kCases[4]),
                  depthwise = shape_of(kCases[9]), narrow_groups = shape_of({1, 6, 6, 6, 6, 3, 1, 1, 1, 2, true});
  {
    ScopedTf32 tf32(true);  // the default
    for (const ConvShape& s : {dense, stem, grouped}) {
      CHECK(conv2d_algo<float>(s) == ConvAlgo::tensor_cores);
      CHECK(conv2d_algo<seg::f16>(s) == ConvAlgo::tensor_cores);
      CHECK(conv2d_algo<seg::bf16>(s) == ConvAlgo::tensor_cores);
    }
    CHECK(conv2d_algo<float>(depthwise) == ConvAlgo::depthwise);
    CHECK(conv2d_algo<seg::f16>(depthwise) == ConvAlgo::depthwise);
    CHECK(conv2d_algo<seg::f16>(narrow_groups) == ConvAlgo::implicit_gemm);  // 3 channels per group
  }
  {
    ScopedTf32 strict(false);  // --no-tf32
    CHECK(conv2d_algo<float>(dense) == ConvAlgo::implicit_gemm);
    CHECK(conv2d_algo<float>(grouped) == ConvAlgo::implicit_gemm);
    CHECK(conv2d_algo<seg::f16>(dense) == ConvAlgo::tensor_cores);
    CHECK(conv2d_algo<seg::bf16>(grouped) == ConvAlgo::tensor_cores);
    CHECK(conv2d_algo<float>(depthwise) == ConvAlgo::depthwise);
  }
  // Forcing (set_conv_algo, as SEG_CUDA_CONV_ALGO does): igemm, direct and tc on any shape; depthwise
  // only where the shape is depthwise.
  {
    ScopedAlgo forced(ConvAlgo::tensor_cores);
    CHECK(conv2d_algo<seg::bf16>(depthwise) == ConvAlgo::tensor_cores);
  }
  {
    ScopedAlgo forced(ConvAlgo::implicit_gemm);
    CHECK(conv2d_algo<seg::f16>(dense) == ConvAlgo::implicit_gemm);
  }
  {
    ScopedTf32 tf32(true);
    ScopedAlgo forced(ConvAlgo::depthwise);
    CHECK(conv2d_algo<float>(dense) == ConvAlgo::tensor_cores);
    CHECK(conv2d_algo<float>(depthwise) == ConvAlgo::depthwise);
  }
}

TEST_CASE("cuda conv2d: f32 with TF32 on (the default) runs on tensor cores within the TF32 bound") {
  ScopedTf32 tf32(true);
  for (const Case& c : {kCases[0], kCases[1], kCases[2], kCases[4], kCases[8], kCases[13]})
    check_conv<float>(c, {ConvAlgo::automatic}, cuda_config_rr());
  check_conv<float>(kCases[6], {ConvAlgo::automatic}, cuda_configs());
}

TEST_CASE("cuda conv2d: automatic runs the path conv2d_algo names (bit for bit), and TF32 changes it") {
  // The same inputs through automatic and through the forced path: deterministic kernels give the
  // same bits. TF32 and strict f32 round differently, so their outputs differ: the switch is live.
  const ConvShape s = shape_of(kCases[8]);
  const std::vector<float> x = random_floats(static_cast<size_t>(s.x_numel()), 11, -1.0f, 1.0f);
  const std::vector<float> w = random_floats(static_cast<size_t>(s.w_numel()), 12, -1.0f, 1.0f);
  DeviceArray<float> d_x(x, 0), d_w(w, 0), d_y(static_cast<size_t>(s.y_numel()), 0);
  auto forward = [&](ConvAlgo algo) {
    ScopedAlgo scoped(algo);
    d_y.poison();
    seg::cuda::conv2d_forward<float>(s, d_x.get(), d_w.get(), nullptr, d_y.get(), nullptr);
    return d_y.download();
  };
  const seg::test::Tolerance exact{0, 0};
  std::vector<float> on, off;
  {
    ScopedTf32 tf32(true);
    on = forward(ConvAlgo::automatic);
    SEG_CHECK_CLOSE(on, forward(ConvAlgo::tensor_cores), exact);
  }
  {
    ScopedTf32 strict(false);
    off = forward(ConvAlgo::automatic);
    SEG_CHECK_CLOSE(off, forward(ConvAlgo::implicit_gemm), exact);
  }
  CHECK_FALSE(seg::test::compare(on, off, exact).ok());
}
