// segtrain bench: time training steps of a model (forward, backward, optimizer) with a per-op table,
// and optionally write every op call as JSON for tools/bench/torch_ops.py (the PyTorch comparison).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>

#include "core/allocator.h"
#include "core/amp_step.h"
#include "core/autograd.h"
#include "core/fileio.h"
#include "core/numbers.h"
#include "core/op_observer.h"
#include "core/profiler.h"
#include "core/readback.h"
#include "core/stream.h"
#include "core/rng.h"
#include "kernels/cpu/conv2d.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/thread_pool.h"
#ifdef SEG_WITH_CUDA
#include "kernels/cuda/engine.h"
#endif
#include "layers/amp_model.h"
#include "layers/anomaly.h"
#include "layers/autocast.h"
#include "models/registry.h"
#include "tools/cli.h"
#include "tools/model_setup.h"
#include "tools/profile_steps.h"
#include "tools/run_setup.h"

namespace seg::cli {

namespace {
const char* kUsage =
    "usage: segtrain bench [--model ENCODER-DECODER | --cfg FILE] [--size S] [--batch B] [--steps N]\n"
    "                      [--warmup N] [--amp LEVEL] [--amp-dtype T] [--num-class K] [--ops-json FILE]\n"
    "                      [--detect-anomaly] [--threads N] [--device D [--no-tf32] [--engine NAME] [--deterministic]]\n"
    "                      [--verbose] [--profile-steps A-B]\n"
    "\n"
    "Times N training steps (after warm-up) of a model on random S x S images: forward, backward and\n"
    "optimizer step, images per second and peak memory, then a table of the time spent per op. The\n"
    "input is synthetic, so there is no data wait (the loader has its own benchmark, bench_loader).\n"
    "--ops-json writes every op call (shapes, hyper-parameters, mean time) for\n"
    "tools/bench/torch_ops.py, which times the same ops in PyTorch and prints the ratio.\n"
    "With dynamic loss scaling (--amp O1..O3 in f16) warm-up counts only steps that were applied\n"
    "(the first steps usually overflow while the scale settles); skipped steps are reported.\n"
    "--verbose also prints, for every distinct convolution of the measured steps and each pass, the\n"
    "algorithm the CPU conv dispatcher ran (implicit GEMM, depthwise, Winograd F(2x2)/F(4x4)/F(6x6),\n"
    "direct; SEG_CONV_ALGO overrides it, docs/performance.md \"Winograd\"); on CUDA with --engine auto\n"
    "it prints each shape's measured choice (own or the library) as it is made.\n"
    "--engine NAME (CUDA: own, cublaslt, cudnn, auto) and --deterministic as in segtrain train.\n"
    "--detect-anomaly runs the checker of `segtrain train --detect-anomaly` on every op (its cost).\n"
    "--profile-steps A-B (CUDA) calls cudaProfilerStart before step A and cudaProfilerStop after step B,\n"
    "counting every step bench runs from 1, warm-up first (with the defaults and no skipped warm-up step\n"
    "the measured steps are 3-5), so `nsys profile --capture-range=cudaProfilerApi` or\n"
    "`ncu --profile-from-start off` capture only those; on the CPU it does nothing and says so.\n"
    "A BatchNorm followed by a ReLU or ReLU6 runs as one op (batch_norm_relu, batch_norm_relu6 in the\n"
    "table); SEG_FUSE_BN_ACT=0 runs them apart (docs/performance.md \"BatchNorm + ReLU(6)\").\n"
    "\n"
    "defaults: --model mobilenetv2dilated-c1_deepsup --size 256 --batch 4 --steps 3 --warmup 2\n"
    "\n"
    "examples:\n"
    "  segtrain bench --model resnet50dilated-ppm_deepsup --size 256 --batch 4 --threads 2\n"
    "  segtrain bench --model mobilenetv2dilated-c1_deepsup --amp O2 --ops-json /tmp/ops.json\n";

// --verbose: the CPU conv dispatcher's choice per distinct layer and pass of the measured steps.
void print_conv_choices(const std::vector<cpu::ConvChoice>& choices, int64_t steps) {
  std::printf("\nconvolutions (CPU dispatcher, SEG_CONV_ALGO=%s): input NxHxWxC -> O, kernel/stride/pad/dilation/groups\n",
              cpu::conv_algo_name(cpu::conv_algo()));
  std::printf("%-40s %-16s %-10s %s\n", "layer", "pass", "algorithm", "calls/step");
  for (const auto& c : choices) {
    const cpu::ConvShape& s = c.shape;
    char layer[96];
    std::snprintf(layer, sizeof layer, "%lldx%lldx%lldx%lld->%lld k%lld s%lld p%lld d%lld g%lld",
                  static_cast<long long>(s.N), static_cast<long long>(s.H), static_cast<long long>(s.W),
                  static_cast<long long>(s.C), static_cast<long long>(s.O), static_cast<long long>(s.KH),
                  static_cast<long long>(s.stride_h), static_cast<long long>(s.pad_h), static_cast<long long>(s.dil_h),
                  static_cast<long long>(s.groups));
    std::printf("%-40s %-16s %-10s %lld%s\n", layer, cpu::conv_pass_name(c.pass), cpu::conv_algo_name(c.algo),
                static_cast<long long>(c.calls / steps), c.f32 ? "" : " (float64)");
  }
}

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Times the phases of a step: the host clock on the CPU; CUDA events on the device's stream on a
// GPU (kernels run asynchronously, so the host clock would measure only the launches). Event pairs
// are read once, after the measured steps.
class PhaseTimer {
 public:
  explicit PhaseTimer(Device device) : device_(device) {}
  void start() {
    if (device_.is_cpu()) {
      t0_ = std::chrono::steady_clock::now();
      return;
    }
    events_.emplace_back(std::make_unique<Event>(true), std::make_unique<Event>(true));
    events_.back().first->record(current_stream(device_));
  }
  // Returns the host seconds (CPU) or 0 (GPU: see total()).
  double stop() {
    if (device_.is_cpu()) return since(t0_);
    events_.back().second->record(current_stream(device_));
    return 0;
  }
  // The device seconds of the intervals whose index satisfies keep(i) (GPU only).
  template <class Keep>
  double total(Keep keep) const {
    double s = 0;
    for (size_t i = 0; i < events_.size(); ++i) {
      if (!keep(i)) continue;
      events_[i].second->synchronize();
      s += 1e-3 * events_[i].second->elapsed_ms_since(*events_[i].first);
    }
    return s;
  }

 private:
  Device device_;
  std::chrono::steady_clock::time_point t0_;
  std::vector<std::pair<std::unique_ptr<Event>, std::unique_ptr<Event>>> events_;
};
}  // namespace

int cmd_bench(const Args& args) {
  if (wants_help(args)) {
    std::printf("%s", kUsage);
    return 0;
  }
  const CommonFlags flags = parse_common_flags(
      args, {"--detect-anomaly", "--verbose"}, {"--model", "--size", "--batch", "--steps", "--warmup", "--num-class", "--ops-json", "--profile-steps"});
  std::optional<StepRange> profile_steps;
  bool detect_anomaly = false, verbose = false;
  std::string model_name = "mobilenetv2dilated-c1_deepsup", ops_json;
  int64_t size = 256, batch = 4, steps = 3, warmup = 2, num_class = 150;
  auto number = [](const std::string& flag, const std::string& v) { return int_flag(flag, v, 1); };
  for (size_t i = 0; i < flags.rest.size(); ++i) {
    const std::string& a = flags.rest[i];
    if (a == "--detect-anomaly" || a == "--verbose") {  // flags without a value
      (a == "--verbose" ? verbose : detect_anomaly) = true;
      continue;
    }
    const std::string& v = flags.rest[++i];
    if (a == "--model") model_name = v;
    else if (a == "--size") size = number(a, v);
    else if (a == "--batch") batch = number(a, v);
    else if (a == "--steps") steps = number(a, v);
    else if (a == "--warmup") warmup = int_flag(a, v, 0);
    else if (a == "--num-class") num_class = number(a, v);
    else if (a == "--ops-json") ops_json = v;
    else if (a == "--profile-steps") profile_steps = parse_profile_steps(v);
  }
  Config cfg = flags.cfg_path.empty() ? load_config("", {}) : load_run_config(flags);
  if (flags.cfg_path.empty()) {
    const size_t dash = model_name.find('-');
    if (dash == std::string::npos)
      throw Error(ErrorKind::usage, "--model must be ENCODER-DECODER, got '" + model_name + "'")
          .key("--model")
          .hint("e.g. mobilenetv2dilated-c1_deepsup or resnet50dilated-ppm_deepsup");
    cfg.MODEL.arch_encoder = model_name.substr(0, dash);
    cfg.MODEL.arch_decoder = model_name.substr(dash + 1);
    cfg.MODEL.fc_dim = fc_dim_for(cfg.MODEL.arch_encoder);
    cfg.DATASET.num_class = num_class;
    if (!flags.amp.empty()) cfg.TRAIN.amp = flags.amp;
    if (!flags.amp_dtype.empty()) cfg.TRAIN.amp_dtype = flags.amp_dtype;
    if (!flags.engine.empty()) cfg.TRAIN.engine = flags.engine;
    cfg.TRAIN.deterministic = flags.deterministic;
    if (flags.threads > 0) set_num_threads(flags.threads);
  }
  const Device device = resolve_device(flags, &cfg);
#ifdef SEG_WITH_CUDA
  // --engine auto decides once per shape; --verbose shows each decision as it is made.
  if (verbose && device.is_cuda()) cuda::set_engine_log([](const std::string& line) { std::printf("%s\n", line.c_str()); });
#endif
  const AmpConfig amp = amp_config(cfg);
  reset_global_rng(1);
  auto model = build_segmentation_module(model_config(cfg), true);
  cast_model_for_amp(*model, amp);
  model->to(device);
  SGD enc(SegmentationModule::param_groups(*model->encoder, 1e-4), 0.01, 0.9, amp.master_weights());
  SGD dec(SegmentationModule::param_groups(*model->decoder, 1e-4), 0.01, 0.9, amp.master_weights());
  LossScaler scaler(amp.scaler);
  const bool stride4 = cfg.MODEL.arch_decoder.rfind("upernet", 0) == 0 || cfg.MODEL.arch_encoder == "hrnetv2";
  const int64_t label_size = (size + (stride4 ? 3 : 7)) / (stride4 ? 4 : 8);
  PhiloxStream rng(2, RngPurpose::test);
  Tensor images = Tensor::empty({batch, size, size, 3}, DType::f32, Device::cpu());
  for (int64_t i = 0; i < images.numel(); ++i) images.data<float>()[i] = rng.normal();
  Tensor labels = Tensor::empty({batch, label_size, label_size}, DType::i32, Device::cpu());
  for (int64_t i = 0; i < labels.numel(); ++i) labels.data<int32_t>()[i] = static_cast<int32_t>(rng.below(static_cast<uint32_t>(num_class)));
  images = images.to(amp_input_dtype(amp)).to(device);
  labels = labels.to(device);

  const std::string where = device.is_cpu() ? str(num_threads(), " threads (", cpu_isa_name(cpu_isa()), ")")
                                             : probe_cuda().names.at(static_cast<size_t>(device.index)) +
                                                   ", timed with CUDA events";
  std::printf("segtrain bench: %s + %s, %lld parameters, batch %lld x %lldx%lld, %s, %s, %s\n",
              cfg.MODEL.arch_encoder.c_str(), cfg.MODEL.arch_decoder.c_str(), static_cast<long long>(model->num_parameters()),
              static_cast<long long>(batch), static_cast<long long>(size), static_cast<long long>(size),
              amp.name().c_str(), device.str().c_str(), where.c_str());
  Allocator& alloc = allocator_for(device);
  double t_fwd = 0, t_bwd = 0, t_opt = 0;
  PhaseTimer fwd_timer(device), bwd_timer(device), opt_timer(device);
  std::vector<bool> measured;  // per step: whether it counts (GPU timings are read at the end)
  uint64_t allocs_after_warmup = 0;
  // Warm-up counts applied steps only: under dynamic loss scaling the first steps on random data
  // usually overflow and are skipped, and a skipped step neither runs the optimizer nor creates its
  // state (momentum, master gradients), so measuring then would report too little memory and time.
  // 50 skipped warm-up steps would mean the scaler cannot find a working scale: an error.
  int64_t applied = 0, skipped_in_warmup = 0;  // the scaler counts the skipped steps
  std::optional<AnomalyDetector> anomaly;
  if (detect_anomaly) {
    anomaly.emplace(*model);
    std::printf("--detect-anomaly: every op's outputs and gradients are checked for inf/NaN\n");
  }
  bool measuring = false;
  ProfileSteps profiling(profile_steps, device, [](const std::string& line) { std::printf("%s\n", line.c_str()); });
  int64_t steps_run = 0;  // warm-up included: what --profile-steps counts
  for (int64_t measured_steps = 0; measured_steps < steps;) {
    profiling.begin_step(++steps_run);
    if (!measuring && applied >= warmup) {
      measuring = true;
      skipped_in_warmup = scaler.skipped_steps();
      synchronize(device);
      prof::reset();
      prof::set_device_timing(device);
      prof::set_enabled(true);
      if (verbose) cpu::set_conv_choice_recording(true);
      alloc.reset_peak();
      allocs_after_warmup = alloc.stats().system_allocs;
    }
    model->train(true);
    enc.zero_grad();
    dec.zero_grad();
    // --detect-anomaly: the checker of `segtrain train --detect-anomaly` on every op, to measure its cost.
    std::optional<ScopedOpObserver> observing;
    if (anomaly) {
      anomaly->begin_step(scaler.scale(), scaler.enabled() && scaler.options().dynamic);
      observing.emplace(*anomaly);
    }
    fwd_timer.start();
    TrainOutput out;
    {
      Autocast ac(amp);
      prof::Range range("forward");
      out = model->forward_train(images, labels);
    }
    const double f = fwd_timer.stop();
    bwd_timer.start();
    {
      prof::Range range("backward");
      scaled_backward(out.loss, scaler);
    }
    const double b = bwd_timer.stop();
    observing.reset();
    opt_timer.start();
    ReadBack readback(device);
    readback.add(out.loss);  // the one read-back of a training step, as in train
    const StepOutcome outcome = unscale_and_step(scaler, {&enc, &dec}, &readback);
    const double o = opt_timer.stop();
    profiling.end_step(steps_run);
    measured.push_back(measuring);
    if (measuring) {
      t_fwd += f, t_bwd += b, t_opt += o;
      ++measured_steps;
    } else if (outcome.stepped) {
      ++applied;
    } else if (scaler.skipped_steps() >= 50) {
      throw Error(ErrorKind::runtime, "segtrain bench: 50 warm-up steps overflowed (loss scale " +
                                          std::to_string(scaler.scale()) + ")")
          .hint("try --amp-dtype bf16 or a smaller --size");
    }
  }
  profiling.finish(1, steps_run);
  prof::set_enabled(false);
  cpu::set_conv_choice_recording(false);
  if (device.is_cuda()) {
    synchronize(device);
    auto keep = [&](size_t i) { return static_cast<bool>(measured[i]); };
    t_fwd = fwd_timer.total(keep), t_bwd = bwd_timer.total(keep), t_opt = opt_timer.total(keep);
  }
  const double n = static_cast<double>(steps), total = (t_fwd + t_bwd + t_opt) / n;
  std::printf("per step: forward %.1f ms, backward %.1f ms, optimizer %.1f ms, total %.1f ms, %.2f images/s\n",
              1e3 * t_fwd / n, 1e3 * t_bwd / n, 1e3 * t_opt / n, 1e3 * total, static_cast<double>(batch) / total);
  std::printf("peak memory %.1f MiB; new system allocations during the measured steps: %llu\n",
              static_cast<double>(alloc.stats().peak_bytes) / (1024.0 * 1024.0),
              static_cast<unsigned long long>(alloc.stats().system_allocs - allocs_after_warmup));
  if (scaler.enabled())
    std::printf("loss scale %g; %lld warm-up steps and %lld of %lld measured steps skipped (gradient overflow)\n",
                scaler.scale(), static_cast<long long>(skipped_in_warmup),
                static_cast<long long>(scaler.skipped_steps() - skipped_in_warmup),
                static_cast<long long>(steps));

  // Per-op table: by op and phase, then the 15 most expensive individual shapes.
  const auto entries = prof::collect();
  std::map<std::string, std::pair<double, int64_t>> by_op;
  double op_total = 0;
  for (const auto& e : entries) {
    auto& a = by_op[e.op + " " + e.phase];
    a.first += e.seconds / n;
    a.second += e.calls;
    op_total += e.seconds / n;
  }
  std::vector<std::pair<std::string, std::pair<double, int64_t>>> rows(by_op.begin(), by_op.end());
  std::sort(rows.begin(), rows.end(), [](const auto& x, const auto& y) { return x.second.first > y.second.first; });
  std::printf("\n%-32s %10s %7s %8s\n", "op phase", "ms/step", "share", "calls");
  for (const auto& [name, v] : rows)
    std::printf("%-32s %10.2f %6.1f%% %8lld\n", name.c_str(), 1e3 * v.first, 100.0 * v.first / total,
                static_cast<long long>(v.second / steps));
  std::printf("%-32s %10.2f %6.1f%%\n", "(all instrumented ops)", 1e3 * op_total, 100.0 * op_total / total);
  std::vector<prof::Entry> top = entries;
  std::sort(top.begin(), top.end(), [](const auto& x, const auto& y) { return x.seconds > y.seconds; });
  std::printf("\n%-22s %-9s %10s  %s\n", "top layers", "phase", "ms/step", "arguments");
  for (size_t i = 0; i < std::min<size_t>(15, top.size()); ++i)
    std::printf("%-22s %-9s %10.2f  %s\n", top[i].op.c_str(), top[i].phase.c_str(), 1e3 * top[i].seconds / n,
                top[i].args.dump().c_str());
  if (verbose) print_conv_choices(cpu::conv_choices(), steps);
  if (!ops_json.empty()) {
    nlohmann::json j;
    j["model"] = cfg.MODEL.arch_encoder + "-" + cfg.MODEL.arch_decoder;
    j["batch"] = batch;
    j["size"] = size;
    j["threads"] = num_threads();
    j["step_seconds"] = total;
    j["ops"] = nlohmann::json::array();
    for (const auto& e : entries)
      j["ops"].push_back({{"op", e.op}, {"phase", e.phase}, {"args", e.args},
                          {"calls", e.calls / steps}, {"seconds_per_call", e.seconds / static_cast<double>(e.calls)}});
    const std::string text = j.dump(1);
    write_file_atomic(ops_json, text.data(), text.size());
    std::printf("\nop calls written to %s (compare: /usr/bin/python3 tools/bench/torch_ops.py %s --threads %d)\n",
                ops_json.c_str(), ops_json.c_str(), num_threads());
  }
  return 0;
}

}  // namespace seg::cli
