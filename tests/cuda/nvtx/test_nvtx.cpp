// NVTX ranges of one training step on cuda:0, recorded by the injection library nvtx_recorder (CTest
// sets NVTX_INJECTION64_PATH to it, as Nsight Systems sets it to its own): every op's forward and
// backward is a range named like the model, nested in the step's forward/backward/optimizer ranges.
// Then `segtrain train --device cuda:0 --profile-steps 2-3` in-process (the CLI's code on the
// simulated GPU): each step's data wait is its own top-level range, and cudaProfilerStart/Stop,
// recorded by the simulator (kernels/sim/sim.h, "the profiler API"), bracket exactly steps 2 and 3.
#include <dlfcn.h>
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>

#include "core/amp_step.h"
#include "core/profiler.h"
#include "core/readback.h"
#include "core/rng.h"
#include "layers/amp_model.h"
#include "layers/autocast.h"
#include "models/registry.h"
#include "models/segmentation_module.h"
#include "tests/cuda/cuda_backend_util.h"
#include "tests/cuda/nvtx/nvtx_recorder.h"
#include "tests/tools/cli_test_helpers.h"
#include "tools/cli.h"
#include "tools/profile_steps.h"

using namespace seg;
using seg::test::NvtxRange;

namespace {
test::NvtxTakeFn recorder() {
  const char* path = std::getenv("NVTX_INJECTION64_PATH");
  REQUIRE_MESSAGE(path, "CTest runs this suite with NVTX_INJECTION64_PATH set to the recorder library");
  void* lib = dlopen(path, RTLD_NOW | RTLD_NOLOAD);  // already loaded by NVTX on its first call
  REQUIRE_MESSAGE(lib, "NVTX did not load the injection library ", path);
  auto fn = reinterpret_cast<test::NvtxTakeFn>(dlsym(lib, "seg_nvtx_take"));
  REQUIRE_MESSAGE(static_cast<bool>(fn), "the recorder library exports seg_nvtx_take");
  return fn;
}

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }
bool ends_with(const std::string& s, const std::string& e) {
  return s.size() >= e.size() && s.compare(s.size() - e.size(), e.size(), e) == 0;
}
}  // namespace

TEST_CASE("one training step on cuda:0 emits NVTX ranges named like the model, properly nested") {
  REQUIRE(prof::nvtx_active());
  { prof::Range warm("warm-up"); }  // NVTX initialises (loads the recorder) on its first call
  const test::NvtxTakeFn take = recorder();
  std::vector<NvtxRange> ranges;
  int open = 0, unbalanced = 0;
  take(&ranges, &open, &unbalanced);

  ModelConfig mc;
  mc.arch_encoder = "mobilenetv2dilated";
  mc.arch_decoder = "c1_deepsup";
  mc.fc_dim = 320;
  mc.num_class = 4;
  const AmpConfig amp = make_amp_config("O0");
  auto model = build_segmentation_module(mc);
  model->to(test::cuda0());
  SGD enc(SegmentationModule::param_groups(*model->encoder, 1e-4), 0.01, 0.9);
  SGD dec(SegmentationModule::param_groups(*model->decoder, 1e-4), 0.01, 0.9);
  LossScaler scaler(amp.scaler);
  const Tensor images = Tensor::full({2, 32, 32, 3}, 0.5, DType::f32, test::cuda0());
  const Tensor labels = Tensor::zeros({2, 4, 4}, DType::i32, test::cuda0());
  take(&ranges, &open, &unbalanced);  // start from here

  TrainOutput out;
  {
    prof::Range r("forward");
    out = model->forward_train(images, labels);
  }
  {
    prof::Range r("backward");
    scaled_backward(out.loss, scaler);
  }
  ReadBack rb(test::cuda0());
  rb.add(out.loss);
  unscale_and_step(scaler, {&enc, &dec}, &rb);
  take(&ranges, &open, &unbalanced);

  CHECK(open == 0);
  CHECK(unbalanced == 0);
  REQUIRE(!ranges.empty());
  // The step's top-level ranges, in order.
  std::vector<std::string> top;
  for (const NvtxRange& r : ranges)
    if (r.depth == 0) top.push_back(r.name);
  CHECK(top == std::vector<std::string>{"forward", "backward", "step.readback", "optimizer.step"});
  // Ranges under each top-level one.
  std::map<std::string, std::vector<NvtxRange>> under;
  std::string current;
  for (const NvtxRange& r : ranges) {
    if (r.depth == 0) current = r.name;
    else under[current].push_back(r);
  }
  auto has = [&](const std::string& where, auto pred) {
    const auto& v = under[where];
    return std::any_of(v.begin(), v.end(), pred);
  };
  // Forward: the first conv of MobileNetV2's stem, by its state_dict module path; the decoder's.
  CHECK(has("forward", [](const NvtxRange& r) { return r.depth == 1 && r.name == "MobileNetV2dilated/features.0.0/conv2d"; }));
  // The stem's BatchNorm carries its ReLU6 (fused, docs/performance.md); the last BatchNorm of the
  // first inverted residual has no activation after it.
  CHECK(has("forward", [](const NvtxRange& r) { return r.name == "MobileNetV2dilated/features.0.1/batch_norm_relu6"; }));
  CHECK(has("forward", [](const NvtxRange& r) { return r.name == "MobileNetV2dilated/features.1.conv.4/batch_norm"; }));
  CHECK(has("forward", [](const NvtxRange& r) { return starts_with(r.name, "C1DeepSup/") && ends_with(r.name, "/conv2d"); }));
  CHECK(has("forward", [](const NvtxRange& r) { return r.name == "loss"; }));
  CHECK(has("forward", [](const NvtxRange& r) { return r.depth == 2 && ends_with(r.name, "softmax_nll_loss"); }));
  // Backward: the same names with ".backward", restored from the forward's module path.
  CHECK(has("backward", [](const NvtxRange& r) { return r.name == "MobileNetV2dilated/features.0.0/conv2d.backward"; }));
  CHECK(has("backward", [](const NvtxRange& r) { return r.name == "MobileNetV2dilated/features.0.1/batch_norm_relu6.backward"; }));
  CHECK(has("backward", [](const NvtxRange& r) { return r.name == "MobileNetV2dilated/features.1.conv.4/batch_norm.backward"; }));
  CHECK(has("backward", [](const NvtxRange& r) { return ends_with(r.name, "softmax_nll_loss.backward"); }));
  // Every op range is inside one of the step's ranges, and every forward op has its backward.
  int conv_fwd = 0, conv_bwd = 0;
  for (const NvtxRange& r : ranges) {
    if (ends_with(r.name, "/conv2d")) ++conv_fwd;
    if (ends_with(r.name, "/conv2d.backward")) ++conv_bwd;
  }
  CHECK(conv_fwd > 40);
  CHECK(conv_fwd == conv_bwd);
  CHECK(has("optimizer.step", [](const NvtxRange& r) { return r.name == "sgd.step"; }));
}

namespace {
// The step-level ranges the trainer pushes at the top of the main thread's stack, in order, one
// line (readable in a failure message).
std::string step_ranges(const std::vector<NvtxRange>& ranges) {
  static const std::set<std::string> names = {"loader.wait", "forward", "backward", "step.readback", "optimizer.step"};
  std::string out;
  for (const NvtxRange& r : ranges)
    if (r.depth == 0 && names.count(r.name)) out += (out.empty() ? "" : " ") + r.name;
  return out;
}
// Step s of a run on a CUDA device (tools/device_batches.h): the wait for the batch after it (the
// copy overlaps the step), then forward, backward, the one read-back, the optimizer. The first step
// also waits for its own batch.
std::string expected_steps(int64_t first, int64_t last) {
  std::string out;
  for (int64_t s = first; s <= last; ++s) {
    if (s == 1) out += "loader.wait ";
    out += "loader.wait forward backward step.readback optimizer.step ";
  }
  if (!out.empty()) out.pop_back();
  return out;
}
}  // namespace

TEST_CASE("segtrain train --device cuda:0 --profile-steps 2: each step's loader wait is a top-level range, and "
          "cudaProfilerStart/Stop bracket exactly step 2") {
  REQUIRE(prof::nvtx_active());
  { prof::Range warm("warm-up"); }
  const test::NvtxTakeFn take = recorder();
  std::vector<NvtxRange> ranges;
  int open = 0, unbalanced = 0;
  const std::string dir = test::fresh_dir("nvtx_profile_steps");
  std::vector<std::string> args = {"train", "--cfg", test::config_file(), "--device", "cuda:0", "--profile-steps", "2"};
  // Three steps of one image at 32 px (one epoch: the checkpoint comes after the last step), no
  // validation, one loader worker (the simulator has its own threads): about 3 s a step. Ranges of
  // several steps, resumed runs and runs that end inside the range: the next case.
  for (const std::string& o : test::tiny_overrides(dir, 1, 3)) args.push_back(o);
  for (const char* o : {"TRAIN.batch_size_per_gpu", "1", "DATASET.imgSizes", "(32,)", "DATASET.imgMaxSize", "48",
                        "TRAIN.workers", "1", "TRAIN.eval_every", "0", "TRAIN.disp_iter", "1"})
    args.push_back(o);

  // The NVTX ranges pushed between two profiler calls: segments[k] holds those before call k.
  std::vector<std::vector<NvtxRange>> segments(1);
  std::vector<int> open_at_call;
  auto take_into = [&](std::vector<NvtxRange>& to) {
    std::vector<NvtxRange> got;
    take(&got, &open, &unbalanced);
    to.insert(to.end(), got.begin(), got.end());
  };
  take(&ranges, &open, &unbalanced);  // drop what came before
  sim::reset_profiler_calls();
  sim::set_profiler_listener([&](const sim::ProfilerCall&) {
    take_into(segments.back());
    open_at_call.push_back(open);
    segments.emplace_back();
  });
  int rc = -1;
  try {
    rc = cli::run(args);
  } catch (...) {
    sim::set_profiler_listener({});
    throw;
  }
  sim::set_profiler_listener({});
  take_into(segments.back());
  REQUIRE(rc == 0);
  CHECK(open == 0);
  CHECK(unbalanced == 0);

  // The simulator saw one start and one stop, the stop after the device had finished its work.
  const std::vector<sim::ProfilerCall> calls = sim::profiler_calls();
  REQUIRE(calls.size() == 2);
  CHECK(calls[0].start);
  CHECK_FALSE(calls[0].was_capturing);
  CHECK_FALSE(calls[1].start);
  CHECK(calls[1].was_capturing);
  CHECK(calls[1].unfinished_ops == 0);
  CHECK_FALSE(sim::profiler_capturing());
  // Both calls between steps: no range open on the trainer's thread.
  CHECK(open_at_call == std::vector<int>{0, 0});

  REQUIRE(segments.size() == 3);
  // Before the start: step 1 whole; inside: step 2 whole; after the stop: step 3.
  CHECK(step_ranges(segments[0]) == expected_steps(1, 1));
  CHECK(step_ranges(segments[1]) == expected_steps(2, 2));
  CHECK(step_ranges(segments[2]) == expected_steps(3, 3));
  // Inside the capture, the ops of the step, named like the model.
  int conv_fwd = 0, conv_bwd = 0;
  for (const NvtxRange& r : segments[1]) {
    conv_fwd += r.name == "MobileNetV2dilated/features.0.0/conv2d";
    conv_bwd += r.name == "MobileNetV2dilated/features.0.0/conv2d.backward";
  }
  CHECK(conv_fwd == 1);
  CHECK(conv_bwd == 1);
  // The loader wait is a range of its own at the top of the stack: nothing nested in it (the next
  // range pushed is at depth 0 again), never inside forward or backward.
  std::vector<NvtxRange> all;
  for (const auto& seg : segments) all.insert(all.end(), seg.begin(), seg.end());
  int waits = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i].name != "loader.wait") continue;
    ++waits;
    CHECK(all[i].depth == 0);
    if (i + 1 < all.size()) CHECK(all[i + 1].depth == 0);
  }
  CHECK(waits == 4);  // steps 1 (its batch and the next), 2 and 3
}

TEST_CASE("--profile-steps on cuda:0: a resumed run opens at its first step in the range, a run that ends inside "
          "closes it, a range no step reaches opens nothing") {
  std::vector<std::string> said;
  auto say = [&](const std::string& line) { said.push_back(line); };
  auto said_has = [&](const std::string& part) {
    return std::any_of(said.begin(), said.end(), [&](const std::string& l) { return l.find(part) != std::string::npos; });
  };
  auto starts_and_stops = [] {
    std::vector<bool> out;
    for (const sim::ProfilerCall& c : sim::profiler_calls()) out.push_back(c.start);
    return out;
  };
  SUBCASE("steps 1-5 with 2-3: open from step 2 to step 3 only") {
    sim::reset_profiler_calls();
    cli::ProfileSteps p(cli::StepRange{2, 3}, test::cuda0(), say);
    std::vector<bool> capturing;
    for (int64_t s = 1; s <= 5; ++s) {
      p.begin_step(s);
      capturing.push_back(sim::profiler_capturing());
      p.end_step(s);
    }
    p.finish(1, 5);
    CHECK(capturing == std::vector<bool>{false, true, true, false, false});
    CHECK(starts_and_stops() == std::vector<bool>{true, false});
    CHECK(said_has("--profile-steps 2-3: cudaProfilerStart before step 2"));
    CHECK(said_has("--profile-steps 2-3: cudaProfilerStop after step 3"));
    CHECK(said.size() == 2);
  }
  SUBCASE("resumed at step 3 of 2-5, stopped after step 4 (--stop-after, Ctrl-C)") {
    sim::reset_profiler_calls();
    cli::ProfileSteps p(cli::StepRange{2, 5}, test::cuda0(), say);
    for (int64_t s = 3; s <= 4; ++s) {
      p.begin_step(s);
      CHECK(sim::profiler_capturing());
      p.end_step(s);
    }
    p.finish(3, 4);
    CHECK_FALSE(sim::profiler_capturing());
    CHECK(starts_and_stops() == std::vector<bool>{true, false});
    CHECK(said_has("cudaProfilerStart before step 3 (the first step of the range this run reaches)"));
    CHECK(said_has("cudaProfilerStop after step 4, the last step of this run (steps 3-4 captured)"));
  }
  SUBCASE("a range after the run's last step") {
    sim::reset_profiler_calls();
    cli::ProfileSteps p(cli::StepRange{10, 12}, test::cuda0(), say);
    for (int64_t s = 1; s <= 3; ++s) {
      p.begin_step(s);
      p.end_step(s);
    }
    p.finish(1, 3);
    CHECK(sim::profiler_calls().empty());
    CHECK(said_has("--profile-steps 10-12: no step of the range ran (this run ran steps 1-3): nothing was captured"));
  }
  SUBCASE("an error inside the range still closes it") {
    sim::reset_profiler_calls();
    {
      cli::ProfileSteps p(cli::StepRange{1, 2}, test::cuda0(), say);
      p.begin_step(1);
      CHECK(sim::profiler_capturing());
    }  // no end_step, no finish: the loop was left by an exception
    CHECK_FALSE(sim::profiler_capturing());
    CHECK(starts_and_stops() == std::vector<bool>{true, false});
  }
}
