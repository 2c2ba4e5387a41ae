// seg::cuda fused log-softmax + NLL (forward, both backwards) and pixel_accuracy against the CPU:
// kernels/cpu/softmax_nll.h on the f32 logits (what the op computes for every storage type) and the
// counting of models/segmentation_module.cpp over cpu::argmax_channels.
//
// Exact: valid, bad_pixel, bad_label, correct, labelled; the device-scale backward equals the
// host-scale one bit for bit. Bounded (u = 2^-24; see kernels/cuda/softmax.h for where the channel
// sums differ):
//   lse[p]:    (2C + 16) u (1 + |lse_p|)
//   loss_sum:  sum_p (2C + 16) u (1 + |lse_p| + |x_p,label|)  +  (k + 18) u sum_p |term_p|
//              (the per-pixel terms, then the f32 tree: k pixels per thread, 8 + 10 tree levels)
//   loss:      loss_sum's bound / V + u |loss|
//   dlogits:   4 u k (2 + max |x - lse|) absolute + 2u relative (exp of the same argument, two
//              roundings), plus one unit in the last place of f16/bf16 outputs
// Labels: random with ~10% ignored, all ignored (loss 0, V 0), bad labels (C and -2: the first one
// is reported), NaN logits (NaN loss on both sides).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/cpu/softmax.h"
#include "kernels/cpu/softmax_nll.h"
#include "kernels/cuda/softmax_nll.h"
#include "tests/kernels/cuda/cuda_test_util.h"
#include "tests/kernels/cuda/typed_test_data.h"

namespace {

using namespace seg;
using seg::test::DeviceBuffer;

constexpr double kU = 1.0 / 16777216.0;

struct Case {
  const char* name;
  int64_t P, C;
  int kind;  // 0 random labels, 1 all ignored, 2 bad labels, 3 NaN logits
  // Run under every schedule; the multi-block cases run under round-robin only (their blocks are
  // independent, and the schedule sweep of the block code is done by the small cases).
  bool sweep = true;
};
constexpr Case kCases[] = {{"1x1", 1, 1, 0},          {"31x3", 31, 3, 0},          {"33x33", 33, 33, 0},
                           {"1007x2", 1007, 2, 0},    {"64x150", 64, 150, 0},      {"5x1007", 5, 1007, 0},
                           {"2000x19 (250 blocks)", 2000, 19, 0, false}, {"ignore only", 77, 5, 1}, {"bad labels", 40, 6, 2},
                           {"NaN logits", 40, 6, 3}};

template <class T> double storage_ulp() {
  if constexpr (std::is_same_v<T, float>) return 0.0;
  else if constexpr (std::is_same_v<T, f16>) return std::ldexp(1.0, -10);
  else return std::ldexp(1.0, -7);
}

std::vector<int32_t> labels_for(const Case& c, uint64_t seed) {
  const std::vector<float> r = test::random_floats(static_cast<size_t>(c.P), seed, -0.1f * static_cast<float>(c.C),
                                                   static_cast<float>(c.C));
  std::vector<int32_t> y(r.size());
  for (size_t i = 0; i < r.size(); ++i) y[i] = r[i] < 0 ? -1 : std::min<int32_t>(static_cast<int32_t>(r[i]), static_cast<int32_t>(c.C - 1));
  if (c.kind == 1) std::fill(y.begin(), y.end(), -1);
  if (c.kind == 2) {
    y[17] = static_cast<int32_t>(c.C);
    y[5] = -2;
    y[30] = 1000;
  }
  return y;
}

struct Inputs {
  std::vector<float> logits_f32;  // what the CPU kernel sees (the storage values, widened)
  std::vector<int32_t> labels;
};

template <class T> Inputs inputs_for(const Case& c, uint64_t seed, std::vector<T>& logits) {
  std::vector<float> x = test::random_floats(static_cast<size_t>(c.P * c.C), seed, -6.0f, 6.0f);
  if (c.kind == 3) x[static_cast<size_t>(3 * c.C + 1)] = NAN;
  logits = test::to_storage<T>(x);
  return Inputs{test::to_floats(logits), labels_for(c, seed + 1)};
}

template <class T> void check_forward(const Case& c, uint64_t seed, const std::vector<test::CudaConfig>& configs) {
  CAPTURE(test::type_name<T>());
  CAPTURE(c.name);
  std::vector<T> logits;
  const Inputs in = inputs_for<T>(c, seed, logits);
  std::vector<float> lse_cpu(static_cast<size_t>(c.P));
  const cpu::NllResult r = cpu::softmax_nll_forward<float, float>(in.logits_f32.data(), in.labels.data(), c.P, c.C, lse_cpu.data());
  // Bounds.
  const double cc = static_cast<double>(c.C);
  double term_bound = 0, abs_terms = 0;
  for (int64_t p = 0; p < c.P; ++p) {
    const int32_t y = in.labels[static_cast<size_t>(p)];
    if (y < 0 || y >= c.C) continue;
    const double l = lse_cpu[static_cast<size_t>(p)], xy = in.logits_f32[static_cast<size_t>(p * c.C + y)];
    term_bound += (2 * cc + 16) * kU * (1 + std::abs(l) + std::abs(xy));
    abs_terms += std::abs(l - xy);
  }
  const int64_t rows_per_block = 256 / std::min<int64_t>(32, [&] { int64_t g = 1; while (g < c.C && g < 32) g *= 2; return g; }());
  const double k = std::ceil(static_cast<double>(c.P) / static_cast<double>(1024 * rows_per_block));
  const double sum_tol = term_bound + (k + 18) * kU * abs_terms;
  const double want_loss = r.valid > 0 ? r.loss_sum / static_cast<double>(r.valid) : 0.0;

  DeviceBuffer<T> dx(logits);
  DeviceBuffer<int32_t> dlabels(in.labels);
  DeviceBuffer<float> dlse(static_cast<size_t>(c.P)), dloss(1);
  DeviceBuffer<cuda::NllDeviceResult> dres(1);
  DeviceBuffer<unsigned char> ws(cuda::softmax_nll_workspace_bytes(c.P, c.C));
  for (const auto& cfg : configs) {
    CAPTURE(cfg.name);
    test::ScopedConfig scoped(cfg);
    cuda::softmax_nll_forward<T>(dx.get(), dlabels.get(), c.P, c.C, dlse.get(), dres.get(), dloss.get(), ws.get(), nullptr);
    const cuda::NllDeviceResult got = dres.download()[0];
    CHECK(got.valid == r.valid);
    CHECK(got.bad_pixel == r.bad_pixel);
    CHECK(got.bad_label == r.bad_label);
    SEG_CHECK_CLOSE(dlse.download(), lse_cpu, test::Tolerance{(2 * cc + 16) * kU, (2 * cc + 16) * kU});
    SEG_CHECK_CLOSE(std::vector<double>{got.loss_sum}, std::vector<double>{r.loss_sum}, test::Tolerance{sum_tol, 0});
    const double loss_tol = r.valid > 0 ? sum_tol / static_cast<double>(r.valid) : 0.0;
    SEG_CHECK_CLOSE(std::vector<double>{got.loss}, std::vector<double>{want_loss}, test::Tolerance{loss_tol, kU});
    SEG_CHECK_CLOSE(dloss.download(), std::vector<float>{got.loss}, test::Tolerance{0, 0});
    if (c.kind == 1) {
      CHECK(got.loss == 0.0f);
      CHECK(got.loss_sum == 0.0f);
    }
  }
}

template <class T> void check_backward(const Case& c, uint64_t seed) {
  CAPTURE(test::type_name<T>());
  CAPTURE(c.name);
  if (c.kind == 2) return;  // a bad label stops the op before backward
  std::vector<T> logits;
  const Inputs in = inputs_for<T>(c, seed, logits);
  std::vector<float> lse(static_cast<size_t>(c.P));
  const cpu::NllResult r = cpu::softmax_nll_forward<float, float>(in.logits_f32.data(), in.labels.data(), c.P, c.C, lse.data());
  const float g = 0.75f;  // dL/dloss, as the deep-supervision weight would give
  const double k = r.valid > 0 ? static_cast<double>(g) / static_cast<double>(r.valid) : 0.0;
  std::vector<float> d32(in.logits_f32.size());
  cpu::softmax_nll_backward<float, float>(in.logits_f32.data(), in.labels.data(), lse.data(), c.P, c.C, k, d32.data());
  const std::vector<T> want = test::to_storage<T>(d32);  // the op converts f32 dlogits to the input dtype
  double max_arg = 0;
  for (int64_t p = 0; p < c.P; ++p)
    for (int64_t ch = 0; ch < c.C; ++ch) {
      const double a = std::abs(in.logits_f32[static_cast<size_t>(p * c.C + ch)] - lse[static_cast<size_t>(p)]);
      if (std::isfinite(a)) max_arg = std::max(max_arg, a);
    }
  const test::Tolerance tol{4 * kU * k * (2 + max_arg) + (std::is_same_v<T, f16> ? std::ldexp(1.0, -24) : 0.0),
                            2 * kU + storage_ulp<T>()};
  cuda::NllDeviceResult res_host;
  res_host.valid = r.valid;
  DeviceBuffer<T> dx(logits), dd(logits.size()), dd2(logits.size());
  DeviceBuffer<int32_t> dlabels(in.labels);
  DeviceBuffer<float> dlse(lse), dg(std::vector<float>{g});
  DeviceBuffer<cuda::NllDeviceResult> dres(std::vector<cuda::NllDeviceResult>{res_host});
  for (const auto& cfg : c.sweep ? test::cuda_configs() : test::cuda_config_rr()) {
    CAPTURE(cfg.name);
    test::ScopedConfig scoped(cfg);
    cuda::softmax_nll_backward<T>(dx.get(), dlabels.get(), dlse.get(), c.P, c.C, k, dd.get(), nullptr);
    const std::vector<T> got = dd.download();
    SEG_CHECK_CLOSE(got, want, tol);
    cuda::softmax_nll_backward_device_scale<T>(dx.get(), dlabels.get(), dlse.get(), c.P, c.C, dg.get(), dres.get(),
                                               dd2.get(), nullptr);
    CHECK(test::bits_mismatch(dd2.download(), got) < 0);
  }
}

template <class T> void check_accuracy(const Case& c, uint64_t seed) {
  CAPTURE(test::type_name<T>());
  CAPTURE(c.name);
  std::vector<T> logits;
  const Inputs in = inputs_for<T>(c, seed, logits);
  std::vector<int32_t> pred(static_cast<size_t>(c.P));
  cpu::argmax_channels<T>(logits.data(), c.P, c.C, pred.data());
  int64_t correct = 0, labelled = 0;  // models/segmentation_module.cpp's loop
  for (int64_t p = 0; p < c.P; ++p) {
    const int32_t y = in.labels[static_cast<size_t>(p)];
    if (y < 0) continue;
    ++labelled;
    correct += pred[static_cast<size_t>(p)] == y;
  }
  cuda::NllDeviceResult sentinel;
  sentinel.loss_sum = 123.0f;  // left alone by pixel_accuracy
  sentinel.valid = 77;
  DeviceBuffer<T> dx(logits);
  DeviceBuffer<int32_t> dlabels(in.labels);
  DeviceBuffer<cuda::NllDeviceResult> dres(1);
  DeviceBuffer<unsigned char> ws(cuda::pixel_accuracy_workspace_bytes(c.P, c.C));
  for (const auto& cfg : c.sweep ? test::cuda_configs() : test::cuda_config_rr()) {
    CAPTURE(cfg.name);
    test::ScopedConfig scoped(cfg);
    dres.upload(std::vector<cuda::NllDeviceResult>{sentinel});
    cuda::pixel_accuracy<T>(dx.get(), dlabels.get(), c.P, c.C, dres.get(), ws.get(), nullptr);
    const cuda::NllDeviceResult got = dres.download()[0];
    CHECK(got.correct == correct);
    CHECK(got.labelled == labelled);
    CHECK(got.loss_sum == 123.0f);
    CHECK(got.valid == 77);
  }
}

}  // namespace

TEST_CASE("cuda softmax_nll_forward: lse, loss sum and mean within the stated bounds; counts and bad label exact") {
  test::for_each_type(test::FloatTypes{}, [](auto tag) {
    using T = typename decltype(tag)::type;
    uint64_t seed = 1000;
    for (const Case& c : kCases) check_forward<T>(c, seed += 10, c.sweep ? test::cuda_configs() : test::cuda_config_rr());
  });
  // Past the 1024-block cap (8 pixels per block at C >= 17): threads own several pixels.
  check_forward<float>(Case{"9001x20 (grid cap)", 9001, 20, 0, false}, 77, test::cuda_config_rr());
}

TEST_CASE("cuda softmax_nll_backward: host scale within the stated bound; device scale bit-identical to it") {
  test::for_each_type(test::FloatTypes{}, [](auto tag) {
    using T = typename decltype(tag)::type;
    uint64_t seed = 2000;
    for (const Case& c : kCases) check_backward<T>(c, seed += 10);
  });
}

TEST_CASE("cuda pixel_accuracy: correct and labelled counts exact, other result fields untouched") {
  test::for_each_type(test::FloatTypes{}, [](auto tag) {
    using T = typename decltype(tag)::type;
    uint64_t seed = 3000;
    for (const Case& c : kCases) check_accuracy<T>(c, seed += 10);
  });
}
