// kernels/cuda/batchnorm.h against kernels/cpu/batchnorm.h, stage by stage: every CUDA launcher gets
// the CPU chain's inputs for its stage (so errors do not compound) and every output element is
// compared with the CPU twin's, for every dtype, activation (none, ReLU, ReLU6), train and eval,
// under every schedule.
//
// Tolerances (u = 2^-24, f32's unit roundoff; D = the largest range max - min of a channel):
//   moments: the CPU sums x - pivot in f32 over chunks of 512 pixels, the GPU runs Welford in f32
//     over at most 256; each mean is within about 513*u*D of the exact one, so atol 2*513*u*D; M2
//     is a sum of squares, within about 2*513*u of it relatively on either side: rtol 4*513*u.
//   finalize, backward coefficients, param grads: the same double formulas (batchnorm_math.h),
//     where nvcc may fuse a multiply-add in double: one float ulp after rounding, rtol 2^-22.
//   apply: one fused-or-not multiply-add per element, f32_sum_tolerance (typed_host.h) of 1 term.
//   backward sums: f32 sums over at most 512 pixels, then double: atol 2*513*u*max_c sum_p |term|.
//   dx: three products summed, f32_sum_tolerance of 3 terms.
// Inputs have channel offsets up to 100 with spread 1, so a sum-of-squares variance would fail
// (it loses about 100^2*P*u), and gradients with some exact zeros of the ReLU masks.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/batchnorm.h"
#include "kernels/cuda/batchnorm.h"
#include "tests/kernels/cuda/cuda_test_util.h"
#include "tests/kernels/cuda/typed_host.h"

namespace {

using seg::BnActivation;
using namespace seg::test;

constexpr double kU = 1.0 / (1 << 24);
const Tolerance kFloatUlp{0, 1.0 / (1 << 22)};

std::vector<float> bn_input(int64_t P, int64_t C, uint64_t seed) {
  std::vector<float> v = random_floats(static_cast<size_t>(P * C), seed, -1.0f, 1.0f);
  const float offsets[] = {0.0f, 100.0f, -3.0f, 7.5f};
  for (int64_t p = 0; p < P; ++p)
    for (int64_t c = 0; c < C; ++c) v[p * C + c] += offsets[c % 4];
  return v;
}

template <class T> double channel_range(const std::vector<T>& x, int64_t P, int64_t C) {
  double worst = 0;
  for (int64_t c = 0; c < C; ++c) {
    double lo = INFINITY, hi = -INFINITY;
    for (int64_t p = 0; p < P; ++p) {
      const double v = static_cast<float>(x[p * C + c]);
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    worst = std::max(worst, hi - lo);
  }
  return worst;
}

const char* act_name(BnActivation a) {
  return a == BnActivation::none ? "none" : a == BnActivation::relu ? "relu" : "relu6";
}

template <class T>
void check_bn(int64_t P, int64_t C, bool training, size_t offset, const std::vector<CudaConfig>& configs,
              bool fused = true) {
  CAPTURE(dtype_label<T>());
  CAPTURE(P);
  CAPTURE(C);
  CAPTURE(training);
  CAPTURE(offset);
  const size_t n = static_cast<size_t>(P * C), nc = static_cast<size_t>(C);
  const double M = static_cast<double>(P);
  const std::vector<T> x = to_storage<T>(bn_input(P, C, 7 + C));
  const std::vector<T> dy = to_storage<T>(random_floats(n, 13 + P, -1.0f, 1.0f));
  const std::vector<float> gamma = random_floats(nc, 3, 0.5f, 1.5f), beta = random_floats(nc, 4, -1.0f, 1.0f);
  const std::vector<float> rm0 = random_floats(nc, 5, -1.0f, 1.0f), rv0 = random_floats(nc, 6, 0.5f, 2.0f);
  const double momentum = 0.1, eps = 1e-5;

  // The CPU chain.
  std::vector<double> mu(nc), m2(nc);
  seg::cpu::bn_channel_moments<T>(x.data(), P, C, mu.data(), m2.data());
  std::vector<float> rm = rm0, rv = rv0, mean(nc), invstd(nc), scale(nc);
  seg::cpu::bn_finalize<float>(mu.data(), m2.data(), C, M, training, momentum, eps, gamma.data(), rm.data(),
                               rv.data(), mean.data(), invstd.data(), scale.data());

  DeviceArray<T> d_x(x, offset), d_dy(dy, offset), d_y(n, offset), d_dx(n, offset);
  DeviceArray<double> d_mu(nc), d_m2(nc), d_mu_in(mu, 0), d_m2_in(m2, 0), d_s1(nc), d_s2(nc);
  DeviceArray<float> d_gamma(gamma, 0), d_beta(beta, 0), d_rm(nc), d_rv(nc), d_mean(nc), d_invstd(nc), d_scale(nc);
  DeviceArray<float> d_mean_in(mean, 0), d_invstd_in(invstd, 0), d_scale_in(scale, 0);
  DeviceArray<float> d_k1(nc), d_k2(nc), d_k3(nc), d_dgamma(nc), d_dbeta(nc);
  DeviceArray<unsigned char> d_ws(seg::cuda::bn_reduce_workspace_bytes(P, C));

  const Tolerance tol_mean{2 * 513 * kU * channel_range(x, P, C), 0}, tol_m2{0, 4 * 513 * kU};
  double max_apply_term = 0;
  for (int64_t p = 0; p < P; ++p)
    for (int64_t c = 0; c < C; ++c)
      max_apply_term =
          std::max(max_apply_term, std::fabs((static_cast<double>(static_cast<float>(x[p * C + c])) - mean[c]) * scale[c]) +
                                       std::fabs(static_cast<double>(beta[c])));

  for (const auto& cfg : configs) {
    CAPTURE(cfg.name);
    ScopedConfig scoped(cfg);
    if (training) {
      d_mu.poison();
      d_m2.poison();
      seg::cuda::bn_channel_moments<T>(d_x.get(), P, C, d_mu.get(), d_m2.get(), d_ws.get(), nullptr);
      SEG_CHECK_CLOSE(d_mu.download(), mu, tol_mean);
      SEG_CHECK_CLOSE(d_m2.download(), m2, tol_m2);
    }
    d_rm.upload(rm0);
    d_rv.upload(rv0);
    d_mean.poison();
    d_invstd.poison();
    d_scale.poison();
    seg::cuda::bn_finalize<float>(training ? d_mu_in.get() : nullptr, training ? d_m2_in.get() : nullptr, C, M,
                                  training, momentum, eps, d_gamma.get(), d_rm.get(), d_rv.get(), d_mean.get(),
                                  d_invstd.get(), d_scale.get(), nullptr);
    SEG_CHECK_CLOSE(d_mean.download(), mean, kFloatUlp);
    SEG_CHECK_CLOSE(d_invstd.download(), invstd, kFloatUlp);
    SEG_CHECK_CLOSE(d_scale.download(), scale, kFloatUlp);
    SEG_CHECK_CLOSE(d_rm.download(), rm, kFloatUlp);
    SEG_CHECK_CLOSE(d_rv.download(), rv, kFloatUlp);

    for (BnActivation act : {BnActivation::none, BnActivation::relu, BnActivation::relu6}) {
      if (act != BnActivation::none && !fused) continue;
      CAPTURE(act_name(act));
      std::vector<T> y(n), dx(n);
      seg::cpu::bn_apply_act<T, float>(x.data(), P, C, mean.data(), scale.data(), beta.data(), act, y.data());
      std::vector<double> s1(nc), s2(nc);
      seg::cpu::bn_backward_sums_act<T, float>(x.data(), dy.data(), P, C, mean.data(), invstd.data(), scale.data(),
                                               beta.data(), act, s1.data(), s2.data());
      std::vector<float> k1(nc), k2(nc), k3(nc), dgamma(nc), dbeta(nc);
      seg::cpu::bn_backward_coefficients<float>(s1.data(), s2.data(), C, M, training, gamma.data(), invstd.data(),
                                                k1.data(), k2.data(), k3.data());
      seg::cpu::bn_param_grads<float>(s1.data(), s2.data(), C, dgamma.data(), dbeta.data());
      seg::cpu::bn_backward_dx_act<T, float>(x.data(), dy.data(), P, C, mean.data(), scale.data(), beta.data(),
                                             k1.data(), k2.data(), k3.data(), act, dx.data());
      // Tolerances of the sums and of dx from the magnitudes of their terms.
      std::vector<double> abs1(nc, 0), abs2(nc, 0);
      double max_dx_term = 0;
      for (int64_t p = 0; p < P; ++p)
        for (int64_t c = 0; c < C; ++c) {
          const double xv = static_cast<float>(x[p * C + c]);
          const double g = seg::bn_activation_passes(static_cast<float>(y[p * C + c]), act)
                               ? static_cast<double>(static_cast<float>(dy[p * C + c]))
                               : 0.0;
          abs1[c] += std::fabs(g);
          abs2[c] += std::fabs(g * (xv - mean[c]) * invstd[c]);
          max_dx_term = std::max(max_dx_term, std::fabs(k1[c] * g) + std::fabs(k2[c] * (xv - mean[c])) + std::fabs(k3[c]));
        }
      const Tolerance tol_s1{2 * 513 * kU * *std::max_element(abs1.begin(), abs1.end()), 0};
      const Tolerance tol_s2{2 * 513 * kU * *std::max_element(abs2.begin(), abs2.end()), 0};

      d_y.poison();
      if (act == BnActivation::none)
        seg::cuda::bn_apply<T, float>(d_x.get(), P, C, d_mean_in.get(), d_scale_in.get(), d_beta.get(), d_y.get(),
                                      nullptr);
      else
        seg::cuda::bn_apply_act<T, float>(d_x.get(), P, C, d_mean_in.get(), d_scale_in.get(), d_beta.get(), act,
                                          d_y.get(), nullptr);
      SEG_CHECK_CLOSE(d_y.download(), y, f32_sum_tolerance<T>(1, max_apply_term));

      d_s1.poison();
      d_s2.poison();
      if (act == BnActivation::none)
        seg::cuda::bn_backward_sums<T, float>(d_x.get(), d_dy.get(), P, C, d_mean_in.get(), d_invstd_in.get(),
                                              d_s1.get(), d_s2.get(), d_ws.get(), nullptr);
      else
        seg::cuda::bn_backward_sums_act<T, float>(d_x.get(), d_dy.get(), P, C, d_mean_in.get(), d_invstd_in.get(),
                                                  d_scale_in.get(), d_beta.get(), act, d_s1.get(), d_s2.get(),
                                                  d_ws.get(), nullptr);
      SEG_CHECK_CLOSE(d_s1.download(), s1, tol_s1);
      SEG_CHECK_CLOSE(d_s2.download(), s2, tol_s2);

      DeviceArray<double> d_s1_in(s1, 0), d_s2_in(s2, 0);
      d_k1.poison();
      d_k2.poison();
      d_k3.poison();
      d_dgamma.poison();
      d_dbeta.poison();
      seg::cuda::bn_backward_coefficients<float>(d_s1_in.get(), d_s2_in.get(), C, M, training, d_gamma.get(),
                                                 d_invstd_in.get(), d_k1.get(), d_k2.get(), d_k3.get(), nullptr);
      seg::cuda::bn_param_grads<float>(d_s1_in.get(), d_s2_in.get(), C, d_dgamma.get(), d_dbeta.get(), nullptr);
      SEG_CHECK_CLOSE(d_k1.download(), k1, kFloatUlp);
      SEG_CHECK_CLOSE(d_k2.download(), k2, kFloatUlp);
      SEG_CHECK_CLOSE(d_k3.download(), k3, kFloatUlp);
      SEG_CHECK_CLOSE(d_dgamma.download(), dgamma, Tolerance{0, 0});
      SEG_CHECK_CLOSE(d_dbeta.download(), dbeta, Tolerance{0, 0});

      DeviceArray<float> d_k1_in(k1, 0), d_k2_in(k2, 0), d_k3_in(k3, 0);
      d_dx.poison();
      if (act == BnActivation::none)
        seg::cuda::bn_backward_dx<T, float>(d_x.get(), d_dy.get(), P, C, d_mean_in.get(), d_k1_in.get(), d_k2_in.get(),
                                            d_k3_in.get(), d_dx.get(), nullptr);
      else
        seg::cuda::bn_backward_dx_act<T, float>(d_x.get(), d_dy.get(), P, C, d_mean_in.get(), d_scale_in.get(),
                                                d_beta.get(), d_k1_in.get(), d_k2_in.get(), d_k3_in.get(), act,
                                                d_dx.get(), nullptr);
      SEG_CHECK_CLOSE(d_dx.download(), dx, f32_sum_tolerance<T>(3, max_dx_term));
    }
  }
}

}  // namespace

TEST_CASE("cuda batchnorm stages equal the CPU twins (moments, finalize, apply, backward; fused ReLU/ReLU6)") {
  // P: below one chunk, several chunks with a ragged last one (2100 = 9 chunks of 234); C: 3 (no
  // packs), 8, 16, 24 (packs of 4 and 8, many pixel rows per block), 150 (no packs: 150 % 4 != 0;
  // 150 channels per block, one pixel row), 300 (packs of 4 for f32; for halves 300 % 8 != 0, so 300
  // scalar channels: two channel tiles of 256 and 44).
  const int64_t shapes[][2] = {{7, 3}, {300, 8}, {1000, 24}, {2100, 16}, {613, 150}, {37, 300}};
  for (const auto& sh : shapes) {
    // Eval mode changes only the per-channel finalize and coefficients (one thread per channel, no
    // shared memory): round-robin is enough there, without the fused activations (which train mode
    // covers on every shape).
    for (bool training : {true, false}) {
      const std::vector<CudaConfig> configs = training ? cuda_configs() : cuda_config_rr();
      check_bn<float>(sh[0], sh[1], training, 0, configs, training);
      check_bn<seg::f16>(sh[0], sh[1], training, 0, configs, training);
      check_bn<seg::bf16>(sh[0], sh[1], training, 0, configs, training);
    }
  }
}

TEST_CASE("cuda batchnorm takes the scalar path for unaligned activations and still matches") {
  check_bn<float>(333, 16, true, 1, cuda_configs());
  check_bn<seg::f16>(333, 16, true, 1, cuda_configs());
  check_bn<seg::bf16>(129, 8, true, 3, cuda_configs());
}

TEST_CASE("cuda batchnorm moments: one pixel, and more pixels than 1024 chunks of 256") {
  // P = 1: M2 = 0 exactly. P = 300001: the chunk count is capped at 1024 (L = 293), round-robin only.
  for (int64_t P : {int64_t{1}, int64_t{300001}}) {
    CAPTURE(P);
    const int64_t C = 4;
    const std::vector<float> x = bn_input(P, C, 99);
    std::vector<double> mu(C), m2(C);
    seg::cpu::bn_channel_moments<float>(x.data(), P, C, mu.data(), m2.data());
    DeviceArray<float> d_x(x, 0);
    DeviceArray<double> d_mu(C), d_m2(C);
    DeviceArray<unsigned char> d_ws(seg::cuda::bn_reduce_workspace_bytes(P, C));
    for (const auto& cfg : cuda_config_rr()) {
      ScopedConfig scoped(cfg);
      seg::cuda::bn_channel_moments<float>(d_x.get(), P, C, d_mu.get(), d_m2.get(), d_ws.get(), nullptr);
      SEG_CHECK_CLOSE(d_mu.download(), mu, Tolerance{2 * 513 * kU * channel_range(x, P, C), 0});
      SEG_CHECK_CLOSE(d_m2.download(), m2, Tolerance{0, 4 * 513 * kU});
    }
  }
}

TEST_CASE("cuda batchnorm reductions are deterministic: the same bits on every schedule") {
  const int64_t P = 2100, C = 16;
  const std::vector<float> x = bn_input(P, C, 5), dy = random_floats(static_cast<size_t>(P * C), 6);
  const std::vector<float> mean(C, 0.5f), invstd(C, 2.0f);
  DeviceArray<float> d_x(x, 0), d_dy(dy, 0), d_mean(mean, 0), d_invstd(invstd, 0);
  DeviceArray<double> d_a(C), d_b(C), d_s1(C), d_s2(C);
  DeviceArray<unsigned char> d_ws(seg::cuda::bn_reduce_workspace_bytes(P, C));
  std::vector<double> first_a, first_b, first_s1, first_s2;
  for (const auto& cfg : cuda_configs()) {
    CAPTURE(cfg.name);
    ScopedConfig scoped(cfg);
    seg::cuda::bn_channel_moments<float>(d_x.get(), P, C, d_a.get(), d_b.get(), d_ws.get(), nullptr);
    seg::cuda::bn_backward_sums<float, float>(d_x.get(), d_dy.get(), P, C, d_mean.get(), d_invstd.get(), d_s1.get(),
                                              d_s2.get(), d_ws.get(), nullptr);
    if (first_a.empty()) {
      first_a = d_a.download(), first_b = d_b.download(), first_s1 = d_s1.download(), first_s2 = d_s2.download();
      continue;
    }
    SEG_CHECK_CLOSE(d_a.download(), first_a, Tolerance{0, 0});
    SEG_CHECK_CLOSE(d_b.download(), first_b, Tolerance{0, 0});
    SEG_CHECK_CLOSE(d_s1.download(), first_s1, Tolerance{0, 0});
    SEG_CHECK_CLOSE(d_s2.download(), first_s2, Tolerance{0, 0});
  }
}

TEST_CASE("cuda batchnorm SyncBN steps equal the CPU twins, and two ranks give the moments of the whole batch") {
  // Rank 0 holds pixels [0, 700), rank 1 [700, 1500) of one batch; the all-reduces are host sums here.
  const int64_t C = 24, P0 = 700, P1 = 800, P = P0 + P1;
  const std::vector<float> x = bn_input(P, C, 31);
  const std::vector<float> x0(x.begin(), x.begin() + P0 * C), x1(x.begin() + P0 * C, x.end());
  std::vector<double> mean_all(C), m2_all(C);
  seg::cpu::bn_channel_moments<float>(x.data(), P, C, mean_all.data(), m2_all.data());
  for (const auto& cfg : cuda_configs()) {
    CAPTURE(cfg.name);
    ScopedConfig scoped(cfg);
    std::vector<double> sums(C, 0.0), m2_sum(C, 0.0), global_mean;
    std::vector<std::vector<double>> means(2), m2s(2);
    for (int r = 0; r < 2; ++r) {  // local moments and the first step, CPU and GPU
      const std::vector<float>& xr = r ? x1 : x0;
      const int64_t Pr = r ? P1 : P0;
      means[r].resize(C), m2s[r].resize(C);
      seg::cpu::bn_channel_moments<float>(xr.data(), Pr, C, means[r].data(), m2s[r].data());
      std::vector<double> first(C);
      seg::cpu::bn_sync_first(means[r].data(), Pr, C, first.data());
      DeviceArray<double> d_mean(means[r], 0), d_first(C);
      seg::cuda::bn_sync_first(d_mean.get(), Pr, C, d_first.get(), nullptr);
      SEG_CHECK_CLOSE(d_first.download(), first, Tolerance{0, 0});
      for (int64_t c = 0; c < C; ++c) sums[c] += first[c];
    }
    for (int r = 0; r < 2; ++r) {  // the second step on the all-reduced sums
      const int64_t Pr = r ? P1 : P0;
      std::vector<double> mean = means[r], m2 = m2s[r];
      seg::cpu::bn_sync_second(sums.data(), static_cast<double>(P), Pr, C, mean.data(), m2.data());
      DeviceArray<double> d_sums(sums, 0), d_mean(means[r], 0), d_m2(m2s[r], 0);
      seg::cuda::bn_sync_second(d_sums.get(), static_cast<double>(P), Pr, C, d_mean.get(), d_m2.get(), nullptr);
      // Double arithmetic on both sides; nvcc may fuse the multiply-add: a few double ulps.
      SEG_CHECK_CLOSE(d_mean.download(), mean, Tolerance{0, 1e-15});
      SEG_CHECK_CLOSE(d_m2.download(), m2, Tolerance{0, 1e-14});
      for (int64_t c = 0; c < C; ++c) m2_sum[c] += m2[c];
      global_mean = mean;
    }
    // The same statistics as one rank with the whole batch (the moments' own tolerances).
    SEG_CHECK_CLOSE(global_mean, mean_all, Tolerance{2 * 513 * kU * channel_range(x, P, C), 0});
    SEG_CHECK_CLOSE(m2_sum, m2_all, Tolerance{0, 4 * 513 * kU});
  }
}
