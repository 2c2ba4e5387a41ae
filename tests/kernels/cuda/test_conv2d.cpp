// kernels/cuda/conv2d.h against the CPU reference convolution (kernels/cpu/conv2d.h, *_ref in
// double) on the same T-rounded inputs: forward, backward data, backward weight and bias, every path
// (automatic = depthwise or implicit GEMM by shape, implicit GEMM forced on every shape, the direct
// fallback), every dtype, every output element, under every schedule.
//
// Tolerance (f32_sum_tolerance, typed_host.h): each path accumulates in f32 a sum of n products whose
// exact value the double reference gives, so it is within (n+1)*2^-24 * sum|products| of it, then
// rounds to T (one ulp of T). n = KH*KW*Cg (forward), KH*KW*Og (backward data), N*Ho*Wo plus up to
// 128 slice partials (backward weight and bias); sum|products| per element is the reference applied
// to |x|, |w|, |dy| (its largest element is used). The helper's factor 2 is the margin.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
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
  const Tolerance tol_y = f32_sum_tolerance<T>(s.KH * s.KW * s.Cg() + 1, largest(y_abs));
  const Tolerance tol_dx = f32_sum_tolerance<T>(s.KH * s.KW * s.Og(), largest(dx_abs));
  const Tolerance tol_dw = f32_sum_tolerance<T>(pixels + 128, largest(dw_abs));
  const Tolerance tol_db = f32_sum_tolerance<T>(pixels + 128, largest(db_abs));

  DeviceArray<T> d_x(x, offset), d_w(w, offset), d_b(b, offset), d_dy(dy, offset);
  DeviceArray<T> d_y(ny, offset), d_dx(nx, offset), d_dw(nw, offset), d_db(no, offset);
  DeviceArray<unsigned char> d_ws(seg::cuda::conv2d_backward_weight_workspace_bytes(s));
  for (ConvAlgo algo : algos) {
    CAPTURE(algo_name(algo));
    ScopedAlgo scoped_algo(algo);
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

}  // namespace

TEST_CASE("cuda conv2d forward and backward equal the double reference, every path and dtype") {
  // Automatic is the implicit GEMM for dense shapes and the depthwise kernels for depthwise ones,
  // where the implicit GEMM is forced too (groups = C, Cg = Og = 1). These run under every schedule;
  // the direct fallback (no shared memory, no barriers: nothing a schedule can change) round-robin
  // only, to keep the sanitizer runs short.
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
    check_conv<float>(c, {ConvAlgo::direct}, cuda_config_rr());
    check_conv<seg::f16>(c, {ConvAlgo::direct}, cuda_config_rr());
    check_conv<seg::bf16>(c, {ConvAlgo::direct}, cuda_config_rr());
  }
}

TEST_CASE("cuda conv2d takes the element-wise loads for unaligned pointers and still matches") {
  // Channel counts that would use 16-byte loads on every operand; the offset makes every pointer
  // 4 (f32) or 2 (halves) bytes off.
  const Case dense{1, 7, 6, 16, 24, 3, 1, 1, 1, 1, true}, dw{1, 7, 6, 16, 16, 3, 2, 1, 1, 16, true};
  for (const Case& c : {dense, dw}) {
    check_conv<float>(c, {ConvAlgo::automatic}, cuda_configs(), 1);
    check_conv<seg::f16>(c, {ConvAlgo::automatic}, cuda_configs(), 1);
    check_conv<seg::bf16>(c, {ConvAlgo::automatic}, cuda_configs(), 1);
  }
}

TEST_CASE("cuda conv2d at larger sizes: several tiles and reduction slices per path (round-robin)") {
  // Implicit GEMM: 800 output pixels (13 row tiles), K = 576 (36 or 18 K steps), 96 outputs, and a
  // backward weight split into 4 slices; depthwise: 2 x 46 x 46 x 32 (4232 output pixels, 5 slices).
  const Case dense{2, 20, 20, 64, 96, 3, 1, 1, 1, 1, true}, dw{2, 46, 46, 32, 32, 3, 1, 1, 1, 32, true};
  check_conv<float>(dense, {ConvAlgo::automatic}, cuda_config_rr());
  check_conv<seg::f16>(dense, {ConvAlgo::automatic}, cuda_config_rr());
  check_conv<float>(dw, {ConvAlgo::automatic}, cuda_config_rr());
  check_conv<seg::bf16>(dw, {ConvAlgo::automatic}, cuda_config_rr());
}

TEST_CASE("cuda conv2d: forcing depthwise on a dense shape falls back to the automatic choice") {
  const Case dense{1, 5, 5, 4, 6, 3, 1, 1, 1, 1, true};
  check_conv<float>(dense, {ConvAlgo::depthwise}, cuda_config_rr());
}
