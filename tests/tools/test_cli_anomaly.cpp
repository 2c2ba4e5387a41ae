// segtrain train --detect-anomaly through the binary, on the tiny synthetic dataset, with planted
// faults in the weights (MODEL.weights_encoder / weights_decoder files written here).
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "layers/ops.h"
#include "models/checkpoint.h"
#include "models/registry.h"
#include "tests/tools/cli_test_helpers.h"
#include "tools/config.h"
#include "tools/run_setup.h"

using namespace seg;
using namespace seg::test;

namespace {

std::vector<std::string> train_args(const std::string& dir, const std::vector<std::string>& extra) {
  std::vector<std::string> a{"train", "--cfg", config_file(), "--detect-anomaly", "--threads", "2"};
  a.insert(a.end(), extra.begin(), extra.end());
  for (const std::string& o : tiny_overrides(dir, 1, 2)) a.push_back(o);
  return a;
}

// The synth config's model with its initial weights, one tensor changed by `plant`, written as
// encoder and decoder weight files; returns the two KEY VALUE overrides that load them.
template <class F>
std::vector<std::string> planted_weights(const std::string& dir, F plant) {
  std::filesystem::create_directories(dir);
  const cli::Config cfg = cli::load_config(config_file(), {});
  auto model = build_segmentation_module(cli::model_config(cfg), true);
  plant(*model);
  save_checkpoint(*model->encoder, dir + "/enc.safetensors");
  save_checkpoint(*model->decoder, dir + "/dec.safetensors");
  return {"MODEL.weights_encoder", dir + "/enc.safetensors", "MODEL.weights_decoder", dir + "/dec.safetensors"};
}

}  // namespace

// Multiplies the named parameter of `m` by `factor` (or sets one element with `set_index`).
void scale_param(Module& m, const std::string& name, double factor) {
  for (const NamedTensor& p : m.named_parameters())
    if (p.name == name) {
      *p.tensor = ops::scale(p.tensor->detach(), factor);
      return;
    }
  FAIL("no parameter ", name);
}

TEST_CASE("train --detect-anomaly: a conv whose f16 output overflows is named (O3, forward, exit 1)") {
  const std::string dir = fresh_dir("anomaly_conv");
  // The stem conv's weights x 1e5: its f16 output exceeds 65504 on the first batch.
  const auto w = planted_weights(dir + "_w", [](SegmentationModule& m) { scale_param(*m.encoder, "features.0.0.weight", 1e5); });
  auto args = train_args(dir, {"--amp", "O3"});
  args.insert(args.end(), w.begin(), w.end());
  const RunResult r = run_segtrain(args);
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("anomaly: forward conv2d (encoder.features.0.0) made") != std::string::npos);
  CHECK(r.output.find("encoder.features.0.0.weight") != std::string::npos);
  CHECK(r.output.find("loss scale 1") != std::string::npos);
  CHECK(r.output.find("keep this op in f32") != std::string::npos);
}

TEST_CASE("train --detect-anomaly: an infinite loss from finite logits names the loss (O0, forward, exit 1)") {
  const std::string dir = fresh_dir("anomaly_loss");
  // conv_last's bias: class 0 at +3e38, every other class at -3e38. The logits stay finite, but a
  // pixel labelled anything but class 0 has probability 0: -log 0 overflows in the loss.
  const auto w = planted_weights(dir + "_w", [](SegmentationModule& m) {
    for (const NamedTensor& p : m.decoder->named_parameters())
      if (p.name == "conv_last.bias") {
        std::vector<float> b(static_cast<size_t>(p.tensor->numel()), -3e38f);
        b[0] = 3e38f;
        *p.tensor = Tensor::from_vector<float>(p.tensor->shape(), b);
      }
  });
  auto args = train_args(dir, {});
  args.insert(args.end(), w.begin(), w.end());
  const RunResult r = run_segtrain(args);
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("anomaly: forward softmax_nll_loss (after decoder.conv_last") != std::string::npos);
  CHECK(r.output.find("from finite inputs") != std::string::npos);
}

TEST_CASE("train --detect-anomaly: a backward overflow under dynamic scaling skips the step, names the op, goes on") {
  const std::string dir = fresh_dir("anomaly_backward");
  // The classifier's weights x 300 under O2 (f16 model, scale 65536): the forward stays finite, the
  // scaled gradients of the layers below overflow f16.
  const auto w = planted_weights(dir + "_w", [](SegmentationModule& m) { scale_param(*m.decoder, "conv_last.weight", 300); });
  auto args = train_args(dir, {"--amp", "O2"});
  args.insert(args.end(), w.begin(), w.end());
  const RunResult r = run_segtrain(args);
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("Gradient overflow. Skipping step") != std::string::npos);
  CHECK(r.output.find("anomaly: step 1 skipped: backward ") != std::string::npos);
  CHECK(r.output.find("at loss scale 65536") != std::string::npos);
  CHECK(r.output.find("trained 2 steps") != std::string::npos);
}

TEST_CASE("train --detect-anomaly: the same model without a plant reports nothing") {
  for (const char* level : {"O0", "O2"}) {
    CAPTURE(level);
    const std::string dir = fresh_dir(std::string("anomaly_clean_") + level);
    const RunResult r = run_segtrain(train_args(dir, {"--amp", level, "--loss-scale", "1"}));
    INFO(r.output);
    CHECK(r.exit_code == 0);
    CHECK(r.output.find("anomaly:") == std::string::npos);
  }
}

// --detect-anomaly and --amp-stats install two op observers per step. Before the fix in
// core/op_observer.cpp the trainer ended them outer-first and the second step looped forever in
// its first op (found trying both on the simulated cuda:0; the CPU hung the same way).
TEST_CASE("train --detect-anomaly --amp-stats together: every step runs and both report") {
  const std::string dir = fresh_dir("anomaly_amp_stats");
  const RunResult r = run_segtrain(train_args(dir, {"--amp", "O1", "--amp-stats"}));
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("f16 range of the activations") != std::string::npos);
  CHECK(r.output.find("trained 2 steps") != std::string::npos);
}
