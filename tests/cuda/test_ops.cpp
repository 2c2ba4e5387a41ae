// Every op of layers/ on cuda:0 against the CPU backend: forward and backward, f32/f16/bf16, every
// output element and every input gradient compared, shapes that are multiples of no block or tile
// size, under the round-robin and two random schedules of the simulator (tests/cuda/op_check.h).
//
// Tolerances (per case below) come from what the kernels' headers state about their arithmetic:
//   exact()          the CUDA kernel computes exactly the CPU's operations (elementwise maps, max
//                    pooling, copies, dropout, adaptive pooling forward): bit for bit;
//   one_rounding(r)  the same f32 sum in another order or with a fused multiply-add, rounded once
//                    to the storage type: r relative in f32 (r from the number of terms, below), one
//                    ulp of f16 (2^-10) or bf16 (2^-7) when the f32 values straddle a rounding point.
#include <doctest/doctest.h>

#include "core/rng.h"
#include "layers/ops.h"
#include "tests/common/compare_tensor.h"
#include "tests/cuda/cuda_backend_util.h"
#include "tests/cuda/op_check.h"
#include "tests/kernels/cuda/typed_host.h"

using namespace seg;
using namespace seg::test;

namespace {
const DType kDtypes[] = {DType::f32, DType::f16, DType::bf16};

Tensor labels_for(const Shape& shape, int64_t C, uint64_t seed) {
  PhiloxStream rng(seed, RngPurpose::test);
  Tensor l = Tensor::empty(shape, DType::i32, Device::cpu());
  for (int64_t i = 0; i < l.numel(); ++i) l.data<int32_t>()[i] = static_cast<int32_t>(rng.below(static_cast<uint32_t>(C + 1))) - 1;
  return l;
}

void check_all(const OpCase& c) {
  for (DType dt : kDtypes) check_op(c, dt);
}
}  // namespace

TEST_CASE("cuda ops: add, mul, scale, relu, relu6 (bit for bit)") {
  const Shape s{2, 5, 7, 13};
  check_all({"add", {{s}, {s}}, [](const auto& t) { return ops::add(t[0], t[1]); }, exact(), exact()});
  check_all({"mul", {{s}, {s}}, [](const auto& t) { return ops::mul(t[0], t[1]); }, exact(), exact()});
  check_all({"scale", {{s}}, [](const auto& t) { return ops::scale(t[0], -0.37); }, exact(), exact()});
  check_all({"relu", {{s}}, [](const auto& t) { return ops::relu(t[0]); }, exact(), exact()});
  check_all({"relu6", {{s, 4.0}}, [](const auto& t) { return ops::relu6(t[0]); }, exact(), exact()});
}

TEST_CASE("cuda ops: sum and mean to one element on the device; their backward without a read-back") {
  // CPU: an f64 sum; CUDA: f32 partials in a fixed tree. The header's bound is
  // (ceil(n/(256 G)) + 18) 2^-24 sum|a|: for n = 1155 and |a| ~ 1, below 2e-6 * 1155 = 2.3e-3 absolute
  // on the sum and 2e-6 on the mean; then one rounding to the storage type.
  const Shape s{3, 5, 7, 11};
  const DtypeTolerance sum_tol{Tolerance{3e-3, 2e-6}, Tolerance{3e-3, 1.0 / 1024}, Tolerance{3e-3, 1.0 / 128}};
  check_all({"sum", {{s}}, [](const auto& t) { return ops::sum(t[0]); }, sum_tol, exact()});
  check_all({"mean", {{s}}, [](const auto& t) { return ops::mean(t[0]); }, one_rounding(2e-6), exact()});
}

TEST_CASE("cuda ops: conv2d dense, strided, dilated, grouped, depthwise and 1x1, with and without bias") {
  // Sums of K = KH*KW*C/groups products in a different order (implicit GEMM tiles vs the CPU's GEMM
  // or direct loops): |diff| <= K 2^-24 sum|x w|; with |x|, |w| ~ N(0,1) and K <= 108 the sums of
  // |x w| stay below ~100, so 1e-4 absolute and relative covers f32; half types as one_rounding.
  const DtypeTolerance conv{Tolerance{1e-4, 1e-4}, Tolerance{4e-3, 2.0 / 1024}, Tolerance{3e-2, 2.0 / 128}};
  // The f32 bound is strict f32's: CUDA convolutions run f32 as TF32 by default (as PyTorch does),
  // whose own bound and tests are in tests/kernels/cuda (test_conv2d, tf32_sum_tolerance).
  const test::ScopedTf32 strict_f32(false);
  struct Conf {
    const char* name;
    Shape x, w;
    ops::Conv2dOptions o;
    bool bias;
  };
  const Conf confs[] = {
      {"3x3 pad 1", {2, 9, 7, 5}, {6, 3, 3, 5}, ops::Conv2dOptions::square(1, 1), true},
      {"3x3 stride 2", {1, 11, 10, 3}, {7, 3, 3, 3}, ops::Conv2dOptions::square(2, 1), false},
      {"3x3 dilation 2", {2, 10, 9, 4}, {5, 3, 3, 4}, ops::Conv2dOptions::square(1, 2, 2), true},
      {"grouped 2", {1, 7, 6, 6}, {4, 3, 3, 3}, ops::Conv2dOptions::square(1, 1, 1, 2), true},
      {"depthwise stride 2", {2, 9, 11, 12}, {12, 3, 3, 1}, ops::Conv2dOptions::square(2, 1, 1, 12), false},
      {"1x1", {2, 5, 6, 17}, {9, 1, 1, 17}, ops::Conv2dOptions::square(1, 0), true},
  };
  for (const Conf& cf : confs) {
    std::vector<OpInput> in{{cf.x}, {cf.w, 0.5}};
    if (cf.bias) in.push_back({{cf.w[0]}});
    const ops::Conv2dOptions o = cf.o;
    const bool bias = cf.bias;
    check_all({std::string("conv2d ") + cf.name, in,
               [o, bias](const auto& t) { return ops::conv2d(t[0], t[1], bias ? t[2] : Tensor(), o); }, conv, conv});
  }
}

TEST_CASE("cuda ops: batch_norm train (statistics updated on the device) and eval") {
  // Moments in double on both devices, merged in different orders; normalising in f32.
  const DtypeTolerance bn{Tolerance{2e-5, 2e-5}, Tolerance{2.0 / 1024, 2.0 / 1024}, Tolerance{2.0 / 128, 2.0 / 128}};
  for (bool training : {true, false}) {
    CAPTURE(training);
    const int64_t C = 13;
    const Tensor rm0 = random_tensor({C}, DType::f32, 7, 0.1), rv0 = random_tensor({C}, DType::f32, 8, 0.1, 1.0);
    // The outputs do not depend on how often the running statistics moved (train: batch statistics;
    // eval: not updated). The update itself is compared below, from equal states.
    // Plain, and with the fused ReLU / ReLU6 (beta shifted by 3 so that ReLU6 also clamps at 6).
    for (BnActivation act : {BnActivation::none, BnActivation::relu, BnActivation::relu6})
    for (DType dt : kDtypes) {
      CAPTURE(static_cast<int>(act));
      Tensor rm_cpu = rm0.clone(), rv_cpu = rv0.clone();
      Tensor rm_gpu = rm0.to(cuda0()), rv_gpu = rv0.to(cuda0());
      const double beta_shift = act == BnActivation::relu6 ? 3.0 : 0.0;
      OpCase c{"batch_norm", {{{2, 5, 7, C}, 2.0, 3.0}, {{C}, 0.2, 1.0, true, DType::f32}, {{C}, 0.2, beta_shift, true}},
               [&](const auto& t) {
                 ops::BatchNormOptions o;
                 o.training = training;
                 o.momentum = 0.1;
                 o.act = act;
                 Tensor& rm = t[0].device().is_cpu() ? rm_cpu : rm_gpu;
                 Tensor& rv = t[0].device().is_cpu() ? rv_cpu : rv_gpu;
                 return ops::batch_norm(t[0], ops::cast(t[1], DType::f32), ops::cast(t[2], DType::f32), rm, rv, o);
               },
               bn, bn};
      check_op(c, dt);
    }
    Tensor x = random_tensor({3, 4, 5, C}, DType::f32, 11, 2.0, 3.0);
    Tensor g = Tensor::full({C}, 1.0, DType::f32, Device::cpu()), b = Tensor::zeros({C}, DType::f32, Device::cpu());
    Tensor rm_c = rm0.clone(), rv_c = rv0.clone(), rm_g = rm0.to(cuda0()), rv_g = rv0.to(cuda0());
    ops::BatchNormOptions o;
    o.training = training;
    o.momentum = 0.25;
    ops::batch_norm(x, g, b, rm_c, rv_c, o);
    ops::batch_norm(x.to(cuda0()), g.to(cuda0()), b.to(cuda0()), rm_g, rv_g, o);
    SEG_CHECK_CLOSE(rm_g, rm_c, Tolerance{1e-6, 1e-6});
    SEG_CHECK_CLOSE(rv_g, rv_c, Tolerance{1e-6, 1e-6});
  }
}

TEST_CASE("cuda ops: max_pool2d, adaptive_avg_pool2d, resize_bilinear") {
  check_all({"max_pool2d 3x3 s2 p1", {{{2, 9, 11, 6}}}, [](const auto& t) { return ops::max_pool2d(t[0], 3, 2, 1); },
             exact(), exact()});
  // Adaptive pooling backward and resize sum a few taps (<= 4 per output, the windows of PPM's
  // scales on sizes that do not divide): a contraction into an fma changes the last f32 bit.
  for (int64_t out : {1, 2, 3, 6})
    check_all({"adaptive_avg_pool2d " + std::to_string(out), {{{2, 7, 10, 5}}},
               [out](const auto& t) { return ops::adaptive_avg_pool2d(t[0], out, out); }, one_rounding(1e-6),
               one_rounding(2e-6)});
  check_all({"resize_bilinear up", {{{2, 5, 7, 3}}}, [](const auto& t) { return ops::resize_bilinear(t[0], 13, 17); },
             one_rounding(1e-6), one_rounding(4e-6)});
  check_all({"resize_bilinear down", {{{1, 17, 13, 4}}}, [](const auto& t) { return ops::resize_bilinear(t[0], 6, 5); },
             one_rounding(1e-6), one_rounding(4e-6)});
}

TEST_CASE("cuda ops: softmax, log_softmax, argmax over channels") {
  // The header's bound: (2C + 16) 2^-24 relative (expf/logf within 2 ulp, a tree sum): C = 19 -> 3.2e-6.
  for (int64_t C : {3, 19, 150}) {
    const double r = (2.0 * static_cast<double>(C) + 16.0) / 16777216.0;
    check_all({"softmax C=" + std::to_string(C), {{{2, 3, 5, C}}}, [](const auto& t) { return ops::softmax(t[0]); },
               one_rounding(r), one_rounding(4 * r)});
    check_all({"log_softmax C=" + std::to_string(C), {{{2, 3, 5, C}}},
               [](const auto& t) { return ops::log_softmax(t[0]); }, one_rounding(r), one_rounding(4 * r)});
  }
  for (DType dt : kDtypes) {
    const Tensor x = random_tensor({2, 7, 9, 21}, dt, 5);
    for (const Schedule& s : schedules()) {
      ScopedSchedule scoped(s);
      SEG_CHECK_CLOSE(ops::argmax_channels(x.to(cuda0())), ops::argmax_channels(x), Tolerance{0, 0});
    }
  }
}

TEST_CASE("cuda ops: softmax_nll_loss with ignored pixels, and the pixel accuracy counts, on the device") {
  // f32 loss: lse per pixel within (2C+16) 2^-24, the mean over V pixels by an f32 tree: 1e-5 relative.
  for (int64_t C : {5, 150}) {
    const Shape s{2, 6, 7, C};
    const Tensor labels = labels_for({2, 6, 7}, C, 3);
    check_all({"softmax_nll_loss C=" + std::to_string(C), {{s}, {{}, 1, 0, false, DType::i32, labels}},
               [](const auto& t) { return ops::softmax_nll_loss(t[0], t[1]); }, one_rounding(1e-5),
               one_rounding(1e-5)});
    for (DType dt : kDtypes) {
      const Tensor logits = random_tensor(s, dt, 9);
      Tensor st_cpu, st_gpu;
      ops::softmax_nll_loss(logits, labels, &st_cpu);
      ops::pixel_accuracy_counts(logits, labels, st_cpu);
      ops::softmax_nll_loss(logits.to(cuda0()), labels.to(cuda0()), &st_gpu);
      ops::pixel_accuracy_counts(logits.to(cuda0()), labels.to(cuda0()), st_gpu);
      const ops::LossStats a = ops::decode_loss_stats(st_cpu), b = ops::decode_loss_stats(st_gpu.to(Device::cpu()));
      CHECK(a.valid == b.valid);
      CHECK(a.correct == b.correct);
      CHECK(a.labelled == b.labelled);
      CHECK(b.bad_pixel == -1);
      CHECK(std::abs(a.loss - b.loss) <= 1e-5 * std::abs(a.loss));
    }
  }
  // A bad label is found on the device and raised when the stats are read back and checked.
  Tensor bad = labels_for({1, 3, 4}, 5, 4);
  bad.data<int32_t>()[7] = 9;
  Tensor st;
  ops::softmax_nll_loss(random_tensor({1, 3, 4, 5}, DType::f32, 1).to(cuda0()), bad.to(cuda0()), &st);
  const ops::LossStats s = ops::decode_loss_stats(st.to(Device::cpu()));
  CHECK(s.bad_pixel == 7);
  CHECK(s.bad_label == 9);
  CHECK_THROWS_WITH_AS(ops::check_loss_stats(s, 5), doctest::Contains("label 9 at pixel 7 is outside [-1, 4]"), Error);
}

TEST_CASE("cuda ops: dropout2d draws the CPU's mask on the device; concat_channels; cast") {
  check_all({"dropout2d", {{{2, 5, 6, 9}}}, [](const auto& t) { return ops::dropout2d(t[0], 0.3, true); }, exact(),
             exact(), true, 1, [] { reset_global_rng(42); }});
  check_all({"concat_channels", {{{2, 3, 5, 4}}, {{2, 3, 5, 7}}, {{2, 3, 5, 1}}},
             [](const auto& t) { return ops::concat_channels({t[0], t[1], t[2]}); }, exact(), exact()});
  check_all({"cast to f32", {{{2, 3, 5, 7}}}, [](const auto& t) { return ops::cast(t[0], DType::f32); }, exact(), exact()});
  check_all({"cast to bf16", {{{2, 3, 5, 7}}}, [](const auto& t) { return ops::cast(t[0], DType::bf16); }, exact(), exact()});
  // f32/f16/bf16 -> f16 (autocast's cast of O1/O2 activations and weights); backward casts back.
  check_all({"cast to f16", {{{2, 3, 5, 7}}}, [](const auto& t) { return ops::cast(t[0], DType::f16); }, exact(), exact()});
}

TEST_CASE("cuda ops: the memory-bound kernels on shapes of several blocks (C not a multiple of 8, > 1024 pixels)") {
  // 2 x 23 x 29 = 1334 pixels: more than one block of 256 threads even at 4 pixels a thread, so block
  // boundaries, the vector packs' scalar heads and tails (C = 13 or 37 breaks every 16-byte row),
  // several partials in the reductions and several BatchNorm chunks (ceil(1334 / 256) = 6) all run.
  const Shape s13{2, 23, 29, 13}, s37{2, 23, 29, 37};
  check_all({"add (several blocks)", {{s13}, {s13}}, [](const auto& t) { return ops::add(t[0], t[1]); }, exact(), exact()});
  check_all({"relu6 (several blocks)", {{s13, 4.0}}, [](const auto& t) { return ops::relu6(t[0]); }, exact(), exact()});
  // sum: the header's bound (ceil(n / (256 G)) + 18) 2^-24 sum|a| with n = 17342, G = 5 partials:
  // 32 2^-24 sum|a|, and sum|a| < n for N(0,1) inputs (0.8 n expected); mean: the same over n.
  {
    const double n = 2.0 * 23 * 29 * 13, sum_abs = 32.0 / 16777216.0 * n;
    const DtypeTolerance sum_tol{Tolerance{sum_abs, 2e-6}, Tolerance{sum_abs, 1.0 / 1024}, Tolerance{sum_abs, 1.0 / 128}};
    check_all({"sum (5 partials)", {{s13}}, [](const auto& t) { return ops::sum(t[0]); }, sum_tol, exact()});
    check_all({"mean (5 partials)", {{s13}}, [](const auto& t) { return ops::mean(t[0]); },
               DtypeTolerance{Tolerance{sum_abs / n, 2e-6}, Tolerance{sum_abs / n, 1.0 / 1024}, Tolerance{sum_abs / n, 1.0 / 128}},
               exact()});
  }
  check_all({"max_pool2d (several blocks)", {{{2, 45, 57, 13}}}, [](const auto& t) { return ops::max_pool2d(t[0], 3, 2, 1); },
             exact(), exact()});
  check_all({"adaptive_avg_pool2d 6 (several blocks)", {{s13}},
             [](const auto& t) { return ops::adaptive_avg_pool2d(t[0], 6, 6); }, one_rounding(1e-6), one_rounding(2e-6)});
  check_all({"resize_bilinear up (several blocks)", {{{2, 11, 13, 13}}},
             [](const auto& t) { return ops::resize_bilinear(t[0], 23, 29); }, one_rounding(1e-6), one_rounding(4e-6)});
  {
    const double r = (2.0 * 37 + 16.0) / 16777216.0;  // the softmax header's bound for C = 37
    check_all({"log_softmax C=37 (several blocks)", {{s37}}, [](const auto& t) { return ops::log_softmax(t[0]); },
               one_rounding(r), one_rounding(4 * r)});
    const Tensor labels = labels_for({2, 23, 29}, 37, 5);
    check_all({"softmax_nll_loss C=37 (several blocks)", {{s37}, {{}, 1, 0, false, DType::i32, labels}},
               [](const auto& t) { return ops::softmax_nll_loss(t[0], t[1]); }, one_rounding(1e-5), one_rounding(1e-5)});
  }
  // BatchNorm (training: moments over 6 chunks, merged; apply and backward grid-stride loops): C = 37
  // runs the scalar path in every dtype; C = 20 the 16-byte one in f32 (20 % 4 == 0) and the scalar
  // one in f16/bf16 (20 % 8 != 0). Tolerance as in the batch_norm case above.
  const DtypeTolerance bn{Tolerance{2e-5, 2e-5}, Tolerance{2.0 / 1024, 2.0 / 1024}, Tolerance{2.0 / 128, 2.0 / 128}};
  for (int64_t C : {37, 20})
    for (BnActivation act : {BnActivation::none, BnActivation::relu6}) {
      CAPTURE(C);
      CAPTURE(static_cast<int>(act));
      Tensor rm_cpu = Tensor::zeros({C}, DType::f32, Device::cpu()), rv_cpu = Tensor::full({C}, 1.0, DType::f32, Device::cpu());
      Tensor rm_gpu = rm_cpu.to(cuda0()), rv_gpu = rv_cpu.to(cuda0());
      const double beta_shift = act == BnActivation::relu6 ? 3.0 : 0.0;
      check_all({"batch_norm (several blocks)",
                 {{{2, 23, 29, C}, 2.0, 3.0}, {{C}, 0.2, 1.0, true, DType::f32}, {{C}, 0.2, beta_shift, true}},
                 [&](const auto& t) {
                   ops::BatchNormOptions o;
                   o.training = true;
                   o.momentum = 0.1;
                   o.act = act;
                   Tensor& rm = t[0].device().is_cpu() ? rm_cpu : rm_gpu;
                   Tensor& rv = t[0].device().is_cpu() ? rv_cpu : rv_gpu;
                   return ops::batch_norm(t[0], ops::cast(t[1], DType::f32), ops::cast(t[2], DType::f32), rm, rv, o);
                 },
                 bn, bn});
    }
  check_all({"concat_channels (several blocks)", {{s13}, {{2, 23, 29, 3}}},
             [](const auto& t) { return ops::concat_channels({t[0], t[1]}); }, exact(), exact()});
  check_all({"cast to f16 (several blocks)", {{s13}}, [](const auto& t) { return ops::cast(t[0], DType::f16); }, exact(),
             exact()});
  check_all({"dropout2d (several blocks)", {{s13}}, [](const auto& t) { return ops::dropout2d(t[0], 0.3, true); }, exact(),
             exact(), true, 1, [] { reset_global_rng(42); }});
}

TEST_CASE("cuda ops: f64 stays on the CPU, and mixed devices name both") {
  const Tensor x64 = random_tensor({2, 3}, DType::f64, 1).to(cuda0());
  CHECK_THROWS_WITH_AS(ops::relu(x64), doctest::Contains("op 'relu' is not implemented for dtype f64 on cuda:0"), Error);
  const Tensor a = random_tensor({2, 3}, DType::f32, 1);
  CHECK_THROWS_WITH_AS(ops::add(a, a.to(cuda0())), doctest::Contains("add: tensors on different devices, cpu and cuda:0"),
                       Error);
}
