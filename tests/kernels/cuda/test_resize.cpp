// kernels/cuda/resize.h against kernels/cpu/resize.h: bilinear resize (align_corners=False) forward
// and backward, every dtype, every output element, under every schedule.
//
// Tolerances: the CUDA kernels compute the CPU's taps, and add the same terms in the same order as
// the CPU (the gather backward in the order of the CPU's scatter); they differ only where a compiler
// fused a multiply-add (f32_sum_tolerance, typed_host.h): forward, 3 products of weights <= 1 by
// |x| <= max|x| (sum of |products| <= max|x|); backward, up to R products per dx element, R the
// readers of an input (2*Ho/H + 2 rows times 2*Wo/W + 2 columns at most), the sum of |products|
// taken from the CPU backward of |dy|.
#include <doctest/doctest.h>

#include <vector>

#include "kernels/cpu/resize.h"
#include "kernels/cuda/resize.h"
#include "tests/kernels/cuda/cuda_test_util.h"
#include "tests/kernels/cuda/typed_host.h"

namespace {

using seg::ResizeShape;
using namespace seg::test;

// Outputs reading one input, at most: per axis the i with h0(i) in {h-1, h}, < 2*out/in + 2.
int64_t readers(const ResizeShape& s) {
  return (2 * s.Ho / s.H + 2) * (2 * s.Wo / s.W + 2);
}
// max over dx elements of sum |weight * dy|: the CPU backward of |dy| (weights are >= 0).
template <class T> double backward_abs_sum(const ResizeShape& s, const std::vector<T>& dy) {
  const std::vector<T> a = abs_values(dy);
  std::vector<T> out(static_cast<size_t>(s.N * s.H * s.W * s.C));
  seg::cpu::resize_bilinear_backward<T>(s, a.data(), out.data());
  return max_abs(out);
}

template <class T> void check_resize(const ResizeShape& s, size_t offset) {
  CAPTURE(dtype_label<T>());
  CAPTURE(offset);
  const size_t nx = static_cast<size_t>(s.N * s.H * s.W * s.C), ny = static_cast<size_t>(s.N * s.Ho * s.Wo * s.C);
  const std::vector<T> x = to_storage<T>(random_floats(nx, 21 + s.C, -2.0f, 2.0f));
  const std::vector<T> dy = to_storage<T>(random_floats(ny, 17 + s.Ho, -1.0f, 1.0f));
  std::vector<T> y_want(ny), dx_want(nx);
  seg::cpu::resize_bilinear_forward<T>(s, x.data(), y_want.data());
  seg::cpu::resize_bilinear_backward<T>(s, dy.data(), dx_want.data());
  const Tolerance tol_y = f32_sum_tolerance<T>(3, max_abs(x));
  const Tolerance tol_dx = f32_sum_tolerance<T>(readers(s), backward_abs_sum(s, dy));

  DeviceArray<T> dxin(x, offset), ddy(dy, offset), dyout(ny, offset), ddx(nx, offset);
  for (const auto& cfg : cuda_configs()) {
    CAPTURE(cfg.name);
    ScopedConfig scoped(cfg);
    dyout.poison();
    ddx.poison();
    seg::cuda::resize_bilinear_forward<T>(s, dxin.get(), dyout.get(), nullptr);
    SEG_CHECK_CLOSE(dyout.download(), y_want, tol_y);
    seg::cuda::resize_bilinear_backward<T>(s, ddy.get(), ddx.get(), nullptr);
    SEG_CHECK_CLOSE(ddx.download(), dx_want, tol_dx);
  }
}

ResizeShape resize_shape(int64_t N, int64_t H, int64_t W, int64_t C, int64_t Ho, int64_t Wo) {
  ResizeShape s;
  s.N = N, s.H = H, s.W = W, s.C = C, s.Ho = Ho, s.Wo = Wo;
  return s;
}

}  // namespace

TEST_CASE("cuda resize_bilinear forward and backward equal the CPU kernels") {
  // Upsampling by non-integer and integer factors (the decoders' x2/x4/x8 and PPM's 1/2/3/6 -> map),
  // downsampling (outputs reading no input at all for some rows), one axis up and one down, a
  // single input row/column, the identity, C = 3 (scalar) and 8/16/24 (16-byte packs).
  const ResizeShape shapes[] = {resize_shape(1, 4, 5, 3, 9, 11),  resize_shape(2, 3, 3, 8, 12, 12),
                                resize_shape(1, 2, 3, 16, 16, 24), resize_shape(3, 1, 1, 8, 5, 7),
                                resize_shape(1, 6, 6, 8, 7, 13),   resize_shape(1, 9, 11, 3, 4, 5),
                                resize_shape(2, 16, 7, 8, 5, 9),   resize_shape(1, 1, 6, 24, 3, 2),
                                resize_shape(1, 5, 5, 16, 5, 5),   resize_shape(1, 7, 3, 8, 7, 20)};
  for (const ResizeShape& s : shapes) {
    CAPTURE(s.N);
    CAPTURE(s.H);
    CAPTURE(s.W);
    CAPTURE(s.C);
    CAPTURE(s.Ho);
    CAPTURE(s.Wo);
    check_resize<float>(s, 0);
    check_resize<seg::f16>(s, 0);
    check_resize<seg::bf16>(s, 0);
  }
}

TEST_CASE("cuda resize_bilinear takes the scalar path for unaligned pointers and still matches") {
  const ResizeShape s = resize_shape(2, 5, 4, 16, 9, 7);
  check_resize<float>(s, 1);
  check_resize<seg::f16>(s, 1);
  check_resize<seg::bf16>(s, 3);
}

TEST_CASE("cuda resize_bilinear at a decoder's size: x8 upsampling of 150 classes") {
  // One larger case, round-robin only: 150 channels (no 16-byte packs for halves: 150 % 8 != 0;
  // packs do not fit floats either: 150 % 4 != 0), 6x7 -> 48x56.
  const ResizeShape s = resize_shape(1, 6, 7, 150, 48, 56);
  const size_t nx = static_cast<size_t>(s.N * s.H * s.W * s.C), ny = static_cast<size_t>(s.N * s.Ho * s.Wo * s.C);
  const std::vector<float> x = random_floats(nx, 5, -2.0f, 2.0f), dy = random_floats(ny, 6, -1.0f, 1.0f);
  std::vector<float> y_want(ny), dx_want(nx);
  seg::cpu::resize_bilinear_forward<float>(s, x.data(), y_want.data());
  seg::cpu::resize_bilinear_backward<float>(s, dy.data(), dx_want.data());
  DeviceArray<float> dxin(x, 0), ddy(dy, 0), dyout(ny, 0), ddx(nx, 0);
  for (const auto& cfg : cuda_config_rr()) {
    ScopedConfig scoped(cfg);
    seg::cuda::resize_bilinear_forward<float>(s, dxin.get(), dyout.get(), nullptr);
    seg::cuda::resize_bilinear_backward<float>(s, ddy.get(), ddx.get(), nullptr);
    SEG_CHECK_CLOSE(dyout.download(), y_want, f32_sum_tolerance<float>(3, max_abs(x)));
    SEG_CHECK_CLOSE(ddx.download(), dx_want, f32_sum_tolerance<float>(readers(s), backward_abs_sum(s, dy)));
  }
}
