// kernels/cuda/pool.h against kernels/cpu/pool.h: max pooling (values, argmax, backward) and adaptive
// average pooling (forward, backward), every dtype, every output element, under every schedule.
//
// Tolerance: none, except for the adaptive backward. The CUDA kernels do the CPU's f32 operations in
// the CPU's order (a max; sums of dy in window order; sums then one multiply), so those results are
// bit-identical; NaN equals NaN (compare.h). The adaptive backward sums dy*inv over the windows
// holding a pixel, where either compiler may fuse the multiply-add: f32_sum_tolerance (typed_host.h)
// with (ceil(Ho/H)+1)*(ceil(Wo/W)+1) windows at most and the sum of |dy*inv| from the CPU backward
// of |dy|.
// Inputs take 5 distinct values so that windows hold ties (the first maximum must win), and some
// are NaN (a NaN must win, and a later NaN must move argmax, as in the CPU kernel).
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "kernels/cpu/pool.h"
#include "kernels/cuda/pool.h"
#include "tests/kernels/cuda/cuda_test_util.h"
#include "tests/kernels/cuda/typed_host.h"

namespace {

using seg::PoolShape;
using namespace seg::test;

std::vector<float> tied_values(size_t n, uint64_t seed, bool with_nans) {
  std::vector<float> v = random_floats(n, seed, 0.0f, 5.0f);
  for (size_t i = 0; i < n; ++i) {
    v[i] = std::floor(v[i]) * 0.5f - 1.0f;  // -1, -0.5, 0, 0.5, 1
    if (with_nans && (i * 7919 + seed) % 41 == 0) v[i] = NAN;
  }
  return v;
}

template <class T> void check_maxpool(const PoolShape& s, size_t offset, bool with_nans) {
  CAPTURE(dtype_label<T>());
  CAPTURE(offset);
  const size_t nx = static_cast<size_t>(s.N * s.H * s.W * s.C), ny = static_cast<size_t>(s.N * s.Ho() * s.Wo() * s.C);
  const std::vector<T> x = to_storage<T>(tied_values(nx, 11 + s.C, with_nans));
  const std::vector<T> dy = to_storage<T>(random_floats(ny, 5 + s.H, -1.0f, 1.0f));
  std::vector<T> y_want(ny), dx_want(nx);
  std::vector<int32_t> am_want(ny);
  seg::cpu::maxpool2d_forward<T>(s, x.data(), y_want.data(), am_want.data());
  seg::cpu::maxpool2d_backward<T>(s, dy.data(), am_want.data(), dx_want.data());

  DeviceArray<T> dx_in(x, offset), ddy(dy, offset), dy_out(ny, offset), ddx(nx, offset);
  DeviceArray<int32_t> dam(ny, offset), dam_in(am_want, offset);
  for (const auto& cfg : cuda_configs()) {
    CAPTURE(cfg.name);
    ScopedConfig scoped(cfg);
    dy_out.poison();
    dam.poison();
    ddx.poison();
    seg::cuda::maxpool2d_forward<T>(s, dx_in.get(), dy_out.get(), dam.get(), nullptr);
    SEG_CHECK_CLOSE(dy_out.download(), y_want, Tolerance{0, 0});
    SEG_CHECK_CLOSE(dam.download(), am_want, Tolerance{0, 0});
    seg::cuda::maxpool2d_backward<T>(s, ddy.get(), dam_in.get(), ddx.get(), nullptr);
    SEG_CHECK_CLOSE(ddx.download(), dx_want, Tolerance{0, 0});
  }
}

struct AdaptiveCase {
  int64_t N, H, W, C, Ho, Wo;
};

template <class T> void check_adaptive(const AdaptiveCase& c, size_t offset) {
  CAPTURE(dtype_label<T>());
  CAPTURE(offset);
  const size_t nx = static_cast<size_t>(c.N * c.H * c.W * c.C), ny = static_cast<size_t>(c.N * c.Ho * c.Wo * c.C);
  const std::vector<T> x = to_storage<T>(random_floats(nx, 3 + c.C, -2.0f, 2.0f));
  const std::vector<T> dy = to_storage<T>(random_floats(ny, 9 + c.H, -1.0f, 1.0f));
  std::vector<T> y_want(ny), dx_want(nx);
  seg::cpu::adaptive_avgpool2d_forward<T>(x.data(), c.N, c.H, c.W, c.C, c.Ho, c.Wo, y_want.data());
  seg::cpu::adaptive_avgpool2d_backward<T>(dy.data(), c.N, c.H, c.W, c.C, c.Ho, c.Wo, dx_want.data());
  const std::vector<T> dy_abs = abs_values(dy);
  std::vector<T> abs_sum(nx);
  seg::cpu::adaptive_avgpool2d_backward<T>(dy_abs.data(), c.N, c.H, c.W, c.C, c.Ho, c.Wo, abs_sum.data());
  const int64_t windows = ((c.Ho + c.H - 1) / c.H + 1) * ((c.Wo + c.W - 1) / c.W + 1);
  const Tolerance tol_dx = f32_sum_tolerance<T>(windows, max_abs(abs_sum));

  DeviceArray<T> dxin(x, offset), ddy(dy, offset), dyout(ny, offset), ddx(nx, offset);
  for (const auto& cfg : cuda_configs()) {
    CAPTURE(cfg.name);
    ScopedConfig scoped(cfg);
    dyout.poison();
    ddx.poison();
    seg::cuda::adaptive_avgpool2d_forward<T>(dxin.get(), c.N, c.H, c.W, c.C, c.Ho, c.Wo, dyout.get(), nullptr);
    SEG_CHECK_CLOSE(dyout.download(), y_want, Tolerance{0, 0});
    seg::cuda::adaptive_avgpool2d_backward<T>(ddy.get(), c.N, c.H, c.W, c.C, c.Ho, c.Wo, ddx.get(), nullptr);
    SEG_CHECK_CLOSE(ddx.download(), dx_want, tol_dx);
  }
}

PoolShape pool_shape(int64_t N, int64_t H, int64_t W, int64_t C, int64_t k, int64_t s, int64_t p) {
  PoolShape ps;
  ps.N = N, ps.H = H, ps.W = W, ps.C = C, ps.kernel = k, ps.stride = s, ps.pad = p;
  return ps;
}

}  // namespace

TEST_CASE("cuda maxpool2d forward (values, argmax) and backward equal the CPU kernels") {
  // C = 3 and 12 take the scalar path for halves, 8/16/24 the 16-byte path for every dtype; H, W odd
  // and even; the ResNet stem's 3/2/1, overlapping 3/1/1, disjoint 2/2/0 and 3/3/0, 5/2/2, 1/1/0.
  const PoolShape shapes[] = {pool_shape(1, 7, 9, 3, 3, 2, 1),  pool_shape(3, 8, 5, 8, 3, 2, 1),
                              pool_shape(2, 5, 5, 16, 2, 2, 0), pool_shape(1, 9, 7, 12, 3, 1, 1),
                              pool_shape(1, 6, 7, 4, 3, 3, 0),  pool_shape(2, 4, 3, 8, 1, 1, 0),
                              pool_shape(1, 11, 10, 24, 5, 2, 2)};
  for (const PoolShape& s : shapes) {
    CAPTURE(s.H);
    CAPTURE(s.W);
    CAPTURE(s.C);
    CAPTURE(s.kernel);
    CAPTURE(s.stride);
    CAPTURE(s.pad);
    for (bool nans : {false, true}) {
      CAPTURE(nans);
      check_maxpool<float>(s, 0, nans);
      check_maxpool<seg::f16>(s, 0, nans);
      check_maxpool<seg::bf16>(s, 0, nans);
    }
  }
}

TEST_CASE("cuda maxpool2d takes the scalar path for unaligned pointers and still matches") {
  // C = 8 would use 16-byte packs; an offset of one element forces the V = 1 kernel.
  const PoolShape s = pool_shape(2, 7, 6, 8, 3, 2, 1);
  check_maxpool<float>(s, 1, true);
  check_maxpool<seg::f16>(s, 1, true);
  check_maxpool<seg::bf16>(s, 1, false);
}

TEST_CASE("cuda adaptive_avgpool2d forward and backward equal the CPU kernels") {
  // PPM's scales (1, 2, 3, 6) on odd maps, overlapping windows (7 -> 3, 5 -> 6 upsampling windows),
  // identity (4 -> 4), C = 3 (scalar) and 8/16 (packs).
  const AdaptiveCase cases[] = {{1, 7, 9, 3, 1, 1},  {2, 7, 5, 8, 2, 2},  {1, 9, 9, 16, 3, 3}, {3, 7, 8, 8, 6, 6},
                                {1, 5, 4, 3, 6, 3},  {1, 4, 4, 16, 4, 4}, {2, 10, 7, 24, 3, 6}};
  for (const AdaptiveCase& c : cases) {
    CAPTURE(c.H);
    CAPTURE(c.W);
    CAPTURE(c.C);
    CAPTURE(c.Ho);
    CAPTURE(c.Wo);
    check_adaptive<float>(c, 0);
    check_adaptive<seg::f16>(c, 0);
    check_adaptive<seg::bf16>(c, 0);
  }
  check_adaptive<float>({2, 7, 5, 8, 3, 2}, 1);
  check_adaptive<seg::f16>({2, 7, 5, 16, 3, 2}, 1);
}
