// Training steps of whole models on cuda:0 against the same step on the CPU, and the runtime
// properties of a step: one read-back, no cudaMalloc once warm, the loss falling over ten steps.
//
// The comparison: the same initial weights (built with the same seed), the same images and labels,
// one forward + backward + SGD step (momentum 0.9, weight decay 1e-4) on each device. What may
// differ is the order of floating-point sums (convolutions, BatchNorm moments, the loss), and,
// through it, which side of a ReLU/ReLU6 kink a pre-activation falls on. So the whole steps are
// compared op by op (check_step_replay, tests/cuda/step_replay.h: every upstream config, O0-O3),
// or, for the parameter updates as a whole, against a float64 step (check_step_against_f64); the
// element-wise whole-step comparison (check_step_equal) is kept, reported as skipped, for the
// measurements in docs/cuda-backend.md.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>

#include "core/allocator.h"
#include "core/amp_step.h"
#include "core/op_observer.h"
#include "core/readback.h"
#include "core/rng.h"
#include "core/stream.h"
#include "layers/amp_model.h"
#include "layers/autocast.h"
#include "models/registry.h"
#include "models/segmentation_module.h"
#include "tests/common/compare_tensor.h"
#include "tests/cuda/cuda_backend_util.h"
#include "tests/common/requirement.h"
#include "tests/cuda/op_check.h"
#include "tests/cuda/step_replay.h"
#include "tests/kernels/cuda/typed_host.h"

using namespace seg;
using namespace seg::test;

namespace {

struct Trainee {
  std::shared_ptr<SegmentationModule> model;
  std::unique_ptr<SGD> enc, dec;
  std::unique_ptr<LossScaler> scaler;
  DType input = DType::f32;  // what the images are cast to before the forward pass
};

// `f64`: the reference of the comparison against float64 below: the same initial weights (same
// seed) in float64 on the CPU, fed float64 images (`amp` must then be O0).
Trainee make_trainee(const ModelConfig& mc, const AmpConfig& amp, Device device, bool f64 = false) {
  Trainee t;
  reset_global_rng(mc.seed);
  t.model = build_segmentation_module(mc);
  if (f64) {
    for (const NamedTensor& p : t.model->named_parameters()) {
      *p.tensor = p.tensor->detach().to(DType::f64);
      p.tensor->set_requires_grad(true);
    }
    for (const NamedTensor& b : t.model->named_buffers())
      if (is_floating(b.tensor->dtype())) *b.tensor = b.tensor->to(DType::f64);
    t.input = DType::f64;
  } else {
    cast_model_for_amp(*t.model, amp);
    t.input = amp_input_dtype(amp);
  }
  t.model->to(device);
  t.enc = std::make_unique<SGD>(SegmentationModule::param_groups(*t.model->encoder, 1e-4), 0.02, 0.9, amp.master_weights());
  t.dec = std::make_unique<SGD>(SegmentationModule::param_groups(*t.model->decoder, 1e-4), 0.02, 0.9, amp.master_weights());
  t.scaler = std::make_unique<LossScaler>(amp.scaler);
  return t;
}

struct StepResult {
  double loss = 0;
  PixelAccuracy acc;
  bool stepped = false;
  uint64_t readbacks = 0;  // device-to-host copies during the step
};

// `observer`, when given, sees the forward and backward ops (not the optimizer step).
StepResult step(Trainee& t, const AmpConfig& amp, const Tensor& images, const Tensor& labels, int64_t num_class,
                OpObserver* observer = nullptr) {
  const Device device = t.model->device();
  const uint64_t before = device_to_host_copies();
  t.model->train(true);
  t.enc->zero_grad();
  t.dec->zero_grad();
  reset_global_rng(99);  // the same dropout masks on both devices
  TrainOutput out;
  {
    std::optional<ScopedOpObserver> watch;
    if (observer) watch.emplace(*observer);
    {
      Autocast ac(amp);
      out = t.model->forward_train(images.to(device).to(t.input), labels.to(device));
    }
    scaled_backward(out.loss, *t.scaler);
  }
  ReadBack rb(device);
  const size_t loss_slot = rb.add(out.loss), stats_slot = rb.add(out.stats);
  const StepOutcome o = unscale_and_step(*t.scaler, {t.enc.get(), t.dec.get()}, &rb);
  read_train_stats(out, rb.host(stats_slot), num_class);
  StepResult r;
  r.loss = rb.item(loss_slot);
  r.acc = out.acc;
  r.stepped = o.stepped;
  r.readbacks = device_to_host_copies() - before;
  return r;
}

Tensor random_labels(const Shape& shape, int64_t num_class, uint64_t seed) {
  PhiloxStream rng(seed, RngPurpose::test);
  Tensor l = Tensor::empty(shape, DType::i32, Device::cpu());
  for (int64_t i = 0; i < l.numel(); ++i)
    l.data<int32_t>()[i] = static_cast<int32_t>(rng.below(static_cast<uint32_t>(num_class + 1))) - 1;
  return l;
}

ModelConfig model_config(const std::string& enc, const std::string& dec, int64_t fc_dim, int64_t num_class) {
  ModelConfig mc;
  mc.arch_encoder = enc;
  mc.arch_decoder = dec;
  mc.fc_dim = fc_dim;
  mc.num_class = num_class;
  mc.seed = 5;
  return mc;
}

// One step on each device from the same state; compares loss and every parameter after the step.
void check_step_equal(const ModelConfig& mc, const char* level, int64_t size, int64_t batch, int64_t label_size,
                      Tolerance loss_tol, Tolerance param_tol) {
  CAPTURE(mc.arch_encoder);
  CAPTURE(mc.arch_decoder);
  const std::string level_name = level;  // CAPTURE keeps a reference: a string, not the pointer
  CAPTURE(level_name);
  const AmpConfig amp = make_amp_config(level);
  Trainee cpu = make_trainee(mc, amp, Device::cpu());
  Trainee gpu = make_trainee(mc, amp, cuda0());
  const Tensor images = random_tensor({batch, size, size, 3}, DType::f32, 3);
  const Tensor labels = random_labels({batch, label_size, label_size}, mc.num_class, 4);
  const StepResult a = step(cpu, amp, images, labels, mc.num_class);
  const StepResult b = step(gpu, amp, images, labels, mc.num_class);
  CHECK(a.stepped == b.stepped);
  CHECK(b.readbacks == 1);  // loss, accuracy and found-inf: one copy
  CHECK(a.acc.valid == b.acc.valid);
  SEG_CHECK_CLOSE(std::vector<double>{b.loss}, std::vector<double>{a.loss}, loss_tol);
  const auto pa = cpu.model->named_parameters(), pb = gpu.model->named_parameters();
  REQUIRE(pa.size() == pb.size());
  int64_t bad = 0;
  for (size_t i = 0; i < pa.size(); ++i) {
    CAPTURE(pa[i].name);
    REQUIRE(pb[i].tensor->device() == cuda0());
    const Comparison c = compare(*pb[i].tensor, *pa[i].tensor, param_tol);
    if (!c.ok()) {
      ++bad;
      CHECK_MESSAGE(c.ok(), c.str());
    }
  }
  CHECK(bad == 0);
  // The BatchNorm running statistics were updated on the device the same way.
  const auto ba = cpu.model->named_buffers(), bb = gpu.model->named_buffers();
  for (size_t i = 0; i < ba.size(); ++i) {
    if (!is_floating(ba[i].tensor->dtype())) continue;
    CAPTURE(ba[i].name);
    SEG_CHECK_CLOSE(*bb[i].tensor, *ba[i].tensor, param_tol);
  }
}

// One training step on cuda:0 against the CPU's, op by op (tests/cuda/step_replay.h: each op on
// cuda:0 is fed the CPU's inputs, so a ReLU/ReLU6 kink flip cannot make the two steps part ways).
// Checked: the same op sequence forward and backward; every op input the CPU's, bit for bit; every
// op output and every gradient a backward node returns within the replay's bound: in O0 against
// the same step replayed in float64, 8x the CPU's own largest error on that output plus 8 f32
// roundings of the element's terms and one of the element; in the AMP levels one rounding to the
// storage dtype plus 64 f32 roundings of the terms (step_replay.h). Then, after the SGD step
// (whose gradients were the CPU's bits), the parameters and the BatchNorm running statistics:
// what the optimizer, the loss scaler and the statistics' update did on the device.
void check_step_replay(const ModelConfig& mc, const std::string& level, const std::string& amp_dtype, int64_t label_size) {
  CAPTURE(mc.arch_encoder);
  CAPTURE(mc.arch_decoder);
  CAPTURE(level);
  CAPTURE(amp_dtype);
  const test::ScopedTf32 strict_f32(false);  // f32 convolutions in f32, as on the CPU
  AmpConfig amp = make_amp_config(level, amp_dtype);
  // Dynamic scaling starts at 2^16, where this step's f16 gradients overflow (inf and NaN on both
  // devices, the step skipped): start at 2^10 so that the replay compares finite gradients and the
  // optimizer steps.
  if (amp.scaler.enabled && amp.scaler.dynamic) amp.scaler.init_scale = 1024;
  const bool f64_reference = level == "O0";
  const Tensor images = random_tensor({2, 32, 32, 3}, DType::f32, 3);
  const Tensor labels = random_labels({2, label_size, label_size}, mc.num_class, 4);
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  Trainee cpu = make_trainee(mc, amp, Device::cpu());
  StepRecorder recorder;
  const StepResult a = step(cpu, amp, images, labels, mc.num_class, &recorder);
  const StepRecord& want = recorder.record;
  std::optional<StepReplayer> reference;
  if (f64_reference) {
    Trainee ref = make_trainee(mc, amp, Device::cpu(), true);
    reference.emplace(want, StepReplayer::Role::reference);
    step(ref, amp, images, labels, mc.num_class, &*reference);
    for (const std::string& e : reference->sequence_errors()) CHECK_MESSAGE(false, "f64 reference: ", e);
    REQUIRE(reference->forward_seen() == want.forward.size());
    REQUIRE(reference->backward_seen() == want.backward.size());
    CHECK_MESSAGE(reference->input_differences().empty(), reference->input_differences().size(),
                  " op inputs of the f64 replay were not the CPU's values, first: ",
                  reference->input_differences().empty() ? "" : reference->input_differences().front());
  }
  allocator_for(Device::cpu()).release_cached();  // the f64 model's memory (ResNet101: about 1 GB)
  const auto t1 = Clock::now();
  Trainee gpu = make_trainee(mc, amp, cuda0());
  StepReplayer replayer(want, StepReplayer::Role::check, reference ? &reference->computed() : nullptr);
  const StepResult b = step(gpu, amp, images, labels, mc.num_class, &replayer);
  const auto t2 = Clock::now();
  MESSAGE(mc.arch_encoder, "-", mc.arch_decoder, " ", level, f64_reference ? std::string() : " " + amp_dtype, ": ",
          want.forward.size(), " forward ops, ",
          want.backward.size(), " backward nodes, ", replayer.outputs_compared(), " outputs compared (",
          replayer.kink_channels_skipped(), " BatchNorm channels left out: a kink flip was possible)",
          std::string(f64_reference ? " against f64" : ""), "; loss ", a.loss, " (cpu), ", b.loss, " (cuda:0); cpu steps ",
          std::chrono::duration<double>(t1 - t0).count(), " s, cuda:0 step ", std::chrono::duration<double>(t2 - t1).count(),
          " s; worst errors per op:\n", replayer.stats_table());
  for (const std::string& e : replayer.sequence_errors()) CHECK_MESSAGE(false, e);
  CHECK(replayer.forward_seen() == want.forward.size());
  CHECK(replayer.backward_seen() == want.backward.size());
  CHECK(want.forward.size() > 50);  // the observer really saw the model
  CHECK_MESSAGE(replayer.input_differences().empty(), replayer.input_differences().size(),
                " op inputs on cuda:0 were not the CPU's bits, first: ",
                replayer.input_differences().empty() ? "" : replayer.input_differences().front());
  const auto& bad = replayer.mismatches();
  for (size_t i = 0; i < std::min<size_t>(bad.size(), 10); ++i) CHECK_MESSAGE(false, bad[i]);
  CHECK_MESSAGE(bad.empty(), bad.size(), " op outputs outside the bound");
  CHECK(a.stepped);  // finite gradients: the optimizer ran (the loss scale above)
  CHECK(b.stepped);
  CHECK(a.acc.valid == b.acc.valid);
  CHECK(a.acc.correct == b.acc.correct);
  // The step itself, from the same gradients: the parameters (and O2's master weights behind them)
  // bit for bit, as measured in every level; the BatchNorm running statistics within a few f32
  // roundings of 1 (the running variance's size), since each device updates them from its own
  // moments, which differ by f32 rounding (measured: at most 2^-23 apart).
  const Tolerance exact{}, running_stats{0x1p-21, 0x1p-22};
  const auto pa = cpu.model->named_parameters(), pb = gpu.model->named_parameters();
  REQUIRE(pa.size() == pb.size());
  double pmax_abs = 0, pmax_rel = 0, bmax_abs = 0, bmax_rel = 0;
  for (size_t i = 0; i < pa.size(); ++i) {
    CAPTURE(pa[i].name);
    REQUIRE(pb[i].tensor->device() == cuda0());
    SEG_CHECK_CLOSE(*pb[i].tensor, *pa[i].tensor, exact);
    const Comparison c = compare(*pb[i].tensor, *pa[i].tensor);
    pmax_abs = std::max(pmax_abs, c.max_abs), pmax_rel = std::max(pmax_rel, c.max_rel);
  }
  const auto ba = cpu.model->named_buffers(), bb = gpu.model->named_buffers();
  REQUIRE(ba.size() == bb.size());
  for (size_t i = 0; i < ba.size(); ++i) {
    if (!is_floating(ba[i].tensor->dtype())) continue;
    CAPTURE(ba[i].name);
    SEG_CHECK_CLOSE(*bb[i].tensor, *ba[i].tensor, running_stats);
    const Comparison c = compare(*bb[i].tensor, *ba[i].tensor);
    bmax_abs = std::max(bmax_abs, c.max_abs), bmax_rel = std::max(bmax_rel, c.max_rel);
  }
  MESSAGE("after the step: parameters max abs ", pmax_abs, " rel ", pmax_rel, "; buffers max abs ", bmax_abs, " rel ", bmax_rel);
}

}  // namespace

// The whole-step comparisons below (check_step_equal) are not yet a valid test: they fail on the
// simulated GPU for a reason that is not a kernel bug. f32 rounding (a different summation order,
// forward outputs equal to ~3e-6 relative L2) moves a few pre-activations across ReLU6's kink at 0;
// one flipped element of 30720 in MobileNetV2dilated's features.16 changes every gradient upstream
// of it by 1.2-1.8% (relative L2), far beyond the per-element bounds below. The CPU's own f32 step
// has the same kind of error against a CPU f64 step (0.2% there, from a flip in features.15).
// These cases form the CTest test test_cuda_step_compare, reported as Skipped; SEG_RUN_STEP_COMPARE=1
// runs them. The comparison against an f64 reference at the end of this file is what replaces them.
// docs/cuda-backend.md has the measurements.
SEG_TEST_REQUIREMENT(step_compare, [] {
  return std::getenv("SEG_RUN_STEP_COMPARE") ? std::string()
                                             : std::string("the whole-step CPU-vs-cuda:0 comparison is not valid yet "
                                                           "(ReLU6 kink flips; tests/cuda/test_model_steps.cpp); "
                                                           "SEG_RUN_STEP_COMPARE=1 runs it");
});

// Tolerances. O0: every parameter moves by lr * (g + wd p) (momentum buffers start at g), lr = 0.02.
// The gradients of the two devices differ by the f32 summation order of the convolutions and the
// BatchNorm moments: relative differences around 1e-4 of a gradient's scale in these nets, i.e.
// 0.02 * 1e-4 * |g| after the step; parameters are O(0.1..1), so 2e-5 absolute and 1e-5 relative
// bound it with a margin of ~10. The loss (an f32 mean over 16..64 pixels of f32 log-sum-exps) within
// 1e-4 relative. O2: the forward runs in f16, where one rounding of an activation is 2^-11
// relative and the differences compound through the layers; the loss within 2e-2 relative, and
// the half parameters (rewritten from the f32 master weights) within one f16 ulp of the value plus the
// update difference: 2^-10 relative and 2e-4 absolute.
TEST_CASE("a training step of MobileNetV2dilated-C1_deepsup at 32x32 on cuda:0 equals the CPU step (O0, O2)" *
          SEG_REQUIRES(step_compare)) {
  const ModelConfig mc = model_config("mobilenetv2dilated", "c1_deepsup", 320, 7);
  check_step_equal(mc, "O0", 32, 2, 4, Tolerance{1e-6, 1e-4}, Tolerance{2e-5, 1e-5});
  check_step_equal(mc, "O2", 32, 2, 4, Tolerance{1e-4, 2e-2}, Tolerance{2e-4, 1.0 / 1024});
}

TEST_CASE("a training step of ResNet18dilated-PPM_deepsup at 32x32 on cuda:0 equals the CPU step (O0, O2)" *
          SEG_REQUIRES(step_compare)) {
  const ModelConfig mc = model_config("resnet18dilated", "ppm_deepsup", 512, 7);
  check_step_equal(mc, "O0", 32, 2, 4, Tolerance{1e-6, 1e-4}, Tolerance{2e-5, 1e-5});
  check_step_equal(mc, "O2", 32, 2, 4, Tolerance{1e-4, 2e-2}, Tolerance{2e-4, 1.0 / 1024});
}

TEST_CASE("a warmed-up training step on cuda:0 makes no cudaMalloc and one read-back (O0 and O2)" *
          doctest::test_suite("slow")) {
  for (const char* level : {"O0", "O2"}) {
    CAPTURE(level);
    const ModelConfig mc = model_config("mobilenetv2dilated", "c1_deepsup", 320, 5);
    const AmpConfig amp = make_amp_config(level);
    Trainee t = make_trainee(mc, amp, cuda0());
    const Tensor images = random_tensor({2, 40, 40, 3}, DType::f32, 3);
    const Tensor labels = random_labels({2, 5, 5}, mc.num_class, 4);
    Allocator& alloc = allocator_for(cuda0());
    uint64_t before = 0;
    for (int s = 0; s < 4; ++s) {
      if (s == 2) before = alloc.stats().system_allocs;  // step 1 creates the optimizer state
      const StepResult r = step(t, amp, images, labels, mc.num_class);
      CHECK(r.readbacks == 1);
    }
    CHECK(alloc.stats().system_allocs == before);
  }
}

TEST_CASE("ten steps of the synth demo model on cuda:0 learn: the loss falls" * doctest::test_suite("slow")) {
  // The demo's model on a fixed batch whose labels are a function of the image (left half class 1,
  // right half class 2 where the image is bright): ten SGD steps must lower the loss clearly.
  const ModelConfig mc = model_config("mobilenetv2dilated", "c1_deepsup", 320, 3);
  const AmpConfig amp = make_amp_config("O0");
  Trainee t = make_trainee(mc, amp, cuda0());
  Tensor images = random_tensor({2, 32, 32, 3}, DType::f32, 21, 0.2);
  Tensor labels = Tensor::empty({2, 4, 4}, DType::i32, Device::cpu());
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t h = 0; h < 4; ++h)
      for (int64_t w = 0; w < 4; ++w) {
        const int32_t k = w < 2 ? 1 : 2;
        labels.data<int32_t>()[(n * 4 + h) * 4 + w] = k;
        for (int64_t y = h * 8; y < h * 8 + 8; ++y)
          for (int64_t x = w * 8; x < w * 8 + 8; ++x) images.data<float>()[((n * 32 + y) * 32 + x) * 3] += k == 1 ? 1.0f : -1.0f;
      }
  std::vector<double> losses;
  for (int s = 0; s < 10; ++s) losses.push_back(step(t, amp, images, labels, mc.num_class).loss);
  MESSAGE("losses: ", losses.front(), " -> ", losses.back());
  CHECK(std::isfinite(losses.back()));
  CHECK(losses.back() < 0.5 * losses.front());
}

// The whole step against float64 (issue 14): one O0 step of the same model from the same weights on
// the CPU in f32, on cuda:0 in strict f32 (TF32 off) and on the CPU in f64. For every parameter, the
// error of its update (after - before) against the f64 update, as an L2 norm, on each f32 device. The
// CPU's own f32 error is what rounding does to this step, so the device may be off by a small
// multiple of it. A ReLU6 kink flip (a pre-activation that rounding moves across 0 or 6) is not
// rounding: it changes every gradient upstream of it by about 1%, and happens on one device and not
// the other (measured with SEG_STEP_SEED: seeds 11 and 27 flip both devices alike, seed 3 only
// cuda:0, seed 19 neither). So the inputs below are ones on which the CPU's f32 step has no flip,
// checked as a precondition; the bound is then 4 x the CPU's error (measured ratios: at most 1.1).
namespace {
struct UpdateErrors {
  double cpu = 0, gpu = 0, reference = 0;  // ||u_cpu - u_ref||, ||u_gpu - u_ref||, ||u_ref||
};
UpdateErrors update_errors(const Tensor& on_cpu, const Tensor& on_gpu, const Tensor& ref, const std::vector<double>& before) {
  const std::vector<double> a = on_cpu.to(DType::f64).to_vector<double>(),
                            g = on_gpu.to(Device::cpu()).to(DType::f64).to_vector<double>(),
                            r = ref.to(DType::f64).to_vector<double>();
  UpdateErrors e;
  for (size_t i = 0; i < r.size(); ++i) {
    e.cpu += (a[i] - r[i]) * (a[i] - r[i]);
    e.gpu += (g[i] - r[i]) * (g[i] - r[i]);
    e.reference += (r[i] - before[i]) * (r[i] - before[i]);
  }
  e.cpu = std::sqrt(e.cpu), e.gpu = std::sqrt(e.gpu), e.reference = std::sqrt(e.reference);
  return e;
}

void check_step_against_f64(const ModelConfig& mc, int64_t label_size, uint64_t seed) {
  CAPTURE(mc.arch_encoder);
  CAPTURE(mc.arch_decoder);
  const test::ScopedTf32 strict_f32(false);
  if (const char* s = std::getenv("SEG_STEP_SEED")) seed = std::strtoull(s, nullptr, 10);
  CAPTURE(seed);
  const AmpConfig amp = make_amp_config("O0");
  Trainee cpu = make_trainee(mc, amp, Device::cpu()), gpu = make_trainee(mc, amp, cuda0()), ref = make_trainee(mc, amp, Device::cpu(), true);
  std::vector<std::vector<double>> before;
  for (const NamedTensor& p : ref.model->named_parameters()) before.push_back(p.tensor->to_vector<double>());
  const Tensor images = random_tensor({2, 32, 32, 3}, DType::f32, seed);
  const Tensor labels = random_labels({2, label_size, label_size}, mc.num_class, seed + 1);
  const StepResult a = step(cpu, amp, images, labels, mc.num_class);
  const StepResult b = step(gpu, amp, images, labels, mc.num_class);
  const StepResult r = step(ref, amp, images, labels, mc.num_class);
  const double loss_cpu = std::abs(a.loss - r.loss), loss_gpu = std::abs(b.loss - r.loss);
  MESSAGE("loss ", r.loss, ": error of cpu f32 ", loss_cpu, ", of cuda:0 f32 ", loss_gpu);
  CHECK(loss_gpu <= 4 * loss_cpu + 4 * std::numeric_limits<float>::epsilon() * r.loss);
  const auto pa = cpu.model->named_parameters(), pb = gpu.model->named_parameters(), pr = ref.model->named_parameters();
  REQUIRE(pa.size() == pr.size());
  REQUIRE(pb.size() == pr.size());
  double cpu_total = 0, gpu_total = 0, ref_total = 0, worst = 0;
  std::string worst_name;
  for (size_t i = 0; i < pr.size(); ++i) {
    CAPTURE(pr[i].name);
    const UpdateErrors e = update_errors(*pa[i].tensor, *pb[i].tensor, *pr[i].tensor, before[i]);
    cpu_total += e.cpu * e.cpu, gpu_total += e.gpu * e.gpu, ref_total += e.reference * e.reference;
    // The floor: one f32 rounding of each element of the update (parameters whose exact update is
    // zero, such as a bias followed by BatchNorm, have errors of that size on both devices).
    const double floor = std::numeric_limits<float>::epsilon() * e.reference + 1e-12;
    CHECK_MESSAGE(e.gpu <= 4 * e.cpu + floor, "update error of cuda:0 ", e.gpu, ", of the cpu ", e.cpu, ", update ", e.reference);
    if (e.gpu / (e.cpu + floor) > worst) worst = e.gpu / (e.cpu + floor), worst_name = pr[i].name;
  }
  const double cpu_rel = std::sqrt(cpu_total / ref_total), gpu_rel = std::sqrt(gpu_total / ref_total);
  MESSAGE("all updates, relative L2 error against f64: cpu f32 ", cpu_rel, ", cuda:0 f32 ", gpu_rel,
          "; largest ratio ", worst, " at ", worst_name);
  // The precondition: no kink flip on the CPU (one would show as an error near 1e-2, not 1e-5).
  CHECK_MESSAGE(cpu_rel < 1e-3, "the CPU's f32 step has a kink flip on this input: choose another seed");
}
}  // namespace

TEST_CASE("one O0 step on cuda:0 is as close to the float64 step as the CPU's f32 step" * doctest::test_suite("slow")) {
  SUBCASE("MobileNetV2dilated-C1_deepsup") { check_step_against_f64(model_config("mobilenetv2dilated", "c1_deepsup", 320, 7), 4, 19); }
  SUBCASE("ResNet18dilated-PPM_deepsup") { check_step_against_f64(model_config("resnet18dilated", "ppm_deepsup", 512, 7), 4, 19); }
}

// Issue 14's done-when: one training step of each of upstream's seven configs at its smallest input
// on the simulated device, replayed op by op against the CPU step (check_step_replay). The input is
// 32x32 for all seven: one padding unit of the stride-32 configs (UPerNet, HRNetV2), and the size
// issue 14 names for MobileNetV2dilated-C1_deepsup and ResNet18dilated-PPM_deepsup; labels at the
// decoder's output stride (segm_downsampling_rate: 8, or 4 for UPerNet and HRNetV2).
namespace {
void replay(const char* enc, const char* dec, int64_t fc_dim, int64_t label, const char* level = "O0",
            const char* amp_dtype = "f16") {
  check_step_replay(model_config(enc, dec, fc_dim, 7), level, amp_dtype, label);
  // The next config needs other block sizes: give the cached ones back (the five large configs in
  // one process peaked at 11.6 GB without this).
  allocator_for(cuda0()).release_cached();
  allocator_for(Device::cpu()).release_cached();
}
}  // namespace

// Host-access faults (kernels/sim: every launch opens and closes every device allocation to host
// code with mprotect, so that a host dereference of device memory faults as it would on a GPU) cost
// time in proportion to launches x allocations: one step of ResNet101-UPerNet took 250 CPU seconds
// with them, 178 of them in the kernel, and 78 without (SEG_SIM_HOST_FAULTS=0). The O0 steps of
// MobileNetV2dilated-C1_deepsup and ResNet18dilated-PPM_deepsup run with them (test_cuda_slow), and
// so do the other slow cases above and the CLI suite; the AMP levels of those two and the five
// larger configs run the same ops without them, as the CTest tests test_cuda_amp_steps and
// test_cuda_large_model_steps, which set SEG_SIM_HOST_FAULTS=0 (tests/cuda/CMakeLists.txt).
namespace {
std::string host_faults_off() {
  const char* v = std::getenv("SEG_SIM_HOST_FAULTS");
  return !simulated() || (v && std::string(v) == "0")
             ? std::string()
             : std::string("these steps run with the simulator's host-access faults off: set SEG_SIM_HOST_FAULTS=0 "
                           "(tests/cuda/test_model_steps.cpp says why)");
}
}  // namespace
SEG_TEST_REQUIREMENT(amp_steps, host_faults_off);
SEG_TEST_REQUIREMENT(large_model_steps, host_faults_off);

TEST_CASE("one O0 training step of MobileNetV2dilated-C1_deepsup and ResNet18dilated-PPM_deepsup at 32x32 on cuda:0 "
          "replays the CPU step op by op" *
          doctest::test_suite("slow")) {
  SUBCASE("MobileNetV2dilated-C1_deepsup") { replay("mobilenetv2dilated", "c1_deepsup", 320, 4); }
  SUBCASE("ResNet18dilated-PPM_deepsup") { replay("resnet18dilated", "ppm_deepsup", 512, 4); }
}

TEST_CASE("a training step of MobileNetV2dilated-C1_deepsup and ResNet18dilated-PPM_deepsup on cuda:0 replays the CPU "
          "step op by op in O1-O3, f16 and bf16" *
          SEG_REQUIRES(amp_steps)) {
  for (const char* dtype : {"f16", "bf16"})
    for (const char* level : {"O1", "O2", "O3"}) {
      replay("mobilenetv2dilated", "c1_deepsup", 320, 4, level, dtype);
      replay("resnet18dilated", "ppm_deepsup", 512, 4, level, dtype);
    }
}

TEST_CASE("one training step of each of the five other configs at 32x32 on cuda:0 replays the CPU step op by op (O0)" *
          SEG_REQUIRES(large_model_steps)) {
  SUBCASE("ResNet50dilated-PPM_deepsup") { replay("resnet50dilated", "ppm_deepsup", 2048, 4); }
  SUBCASE("ResNet101dilated-PPM_deepsup") { replay("resnet101dilated", "ppm_deepsup", 2048, 4); }
  SUBCASE("ResNet50-UPerNet") { replay("resnet50", "upernet", 2048, 8); }
  SUBCASE("ResNet101-UPerNet") { replay("resnet101", "upernet", 2048, 8); }
  SUBCASE("HRNetV2-C1") { replay("hrnetv2", "c1", 720, 8); }
}
