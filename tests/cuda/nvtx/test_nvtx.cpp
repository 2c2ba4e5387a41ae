// NVTX ranges of one training step on cuda:0, recorded by the injection library nvtx_recorder (CTest
// sets NVTX_INJECTION64_PATH to it, as Nsight Systems sets it to its own): every op's forward and
// backward is a range named like the model, nested in the step's forward/backward/optimizer ranges.
#include <dlfcn.h>
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <map>

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
