// The registry: every upstream architecture by name, with upstream's parameter counts, state_dict
// entry counts, names, shapes, conv settings and optimizer groups; errors for bad combinations.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "core/autograd.h"
#include "models/checkpoint.h"
#include "models/init.h"
#include "models/registry.h"
#include "tests/common/compare.h"

using namespace seg;

namespace {

BuildOptions skeleton() {  // no initialisation: these tests only look at the structure
  BuildOptions o;
  o.initialize = false;
  return o;
}

int64_t entries(const Module& m) { return static_cast<int64_t>(upstream_state_dict_layout(m).size()); }

// One line per state_dict entry, "name dtype [shape]" plus " kK sS pP dD gG" for conv weights: the
// text whose FNV-1a digest tools/golden/make_model_goldens.py stores for upstream's model.
std::string layout_text(const ModelComponent& m) {
  std::map<const TensorImpl*, const Conv2d*> conv_of;
  for (const Conv2d* c : m.convs()) conv_of[c->weight.impl()] = c;
  std::map<std::string, const Conv2d*> conv_by_name;
  for (const auto& p : m.named_parameters())
    if (conv_of.count(p.tensor->impl())) conv_by_name[p.name] = conv_of[p.tensor->impl()];
  std::string text;
  for (const auto& [name, shape_of, dtype] : upstream_state_dict_layout(m)) {
    std::string shape;
    for (int d = 0; d < shape_of.size(); ++d) shape += (d ? ", " : "") + std::to_string(shape_of[d]);
    text += name + " " + dtype_name(dtype) + " [" + shape + "]";
    if (conv_by_name.count(name)) {
      const Conv2d& c = *conv_by_name[name];
      text += str(" k", c.weight.size(1), " s", c.options.stride_h, " p", c.options.pad_h, " d", c.options.dil_h, " g",
                  c.options.groups);
    }
    text += "\n";
  }
  return text;
}

nlohmann::json upstream_architectures() {
  std::ifstream f(std::string(SEG_SOURCE_DIR) + "/tests/golden/models/architectures.json");
  REQUIRE(f.good());
  return nlohmann::json::parse(f);
}

void check_against_upstream(const ModelComponent& m, const std::string& key) {
  CAPTURE(key);
  const nlohmann::json arch = upstream_architectures().at(key);
  const std::string text = layout_text(m);
  char digest[17];
  std::snprintf(digest, sizeof digest, "%016llx", static_cast<unsigned long long>(model_init::fnv1a64(text)));
  CHECK(entries(m) == arch.at("entries").get<int64_t>());
  CHECK(m.num_parameters() == arch.at("params").get<int64_t>());
  if (arch.at("digest").get<std::string>() != digest) {
    // Leave our layout in the temp folder for a diff against the generator's (layout_text in
    // tools/golden/make_model_goldens.py).
    const std::string out =
        (std::filesystem::temp_directory_path() / ("segtrain_layout_" + key.substr(key.find(':') + 1) + ".txt")).string();
    std::ofstream(out) << text;
    FAIL_CHECK("state_dict names, shapes or conv settings differ from upstream's; ours are in " << out);
  }
}

}  // namespace

namespace {
struct EncoderRow {
  const char* arch;
  int64_t params, entries;
};

void check_encoders(std::initializer_list<EncoderRow> rows) {
  for (const EncoderRow& r : rows) {
    CAPTURE(r.arch);
    const auto enc = build_encoder(r.arch, 0, skeleton());
    CHECK(enc->arch() == r.arch);
    CHECK(enc->num_parameters() == r.params);
    CHECK(entries(*enc) == r.entries);
    check_against_upstream(*enc, std::string("encoder:") + r.arch);
  }
}
}  // namespace

// Spec 3.2 / 3.5 tables; the non-dilated ResNets have the same tensors as the dilated ones.
TEST_CASE("encoders: parameter and state_dict entry counts are upstream's; names, shapes, convs too") {
  check_encoders({{"mobilenetv2dilated", 1811712, 459},
                  {"resnet18dilated", 11324992, 207},
                  {"resnet18", 11324992, 207},
                  {"resnet50dilated", 23631808, 495}});
}
TEST_CASE("big encoders: parameter and state_dict entry counts are upstream's; names, shapes, convs too" *
          doctest::test_suite("slow")) {
  check_encoders({{"resnet50", 23631808, 495},
                  {"resnet101dilated", 42623936, 954},
                  {"resnet101", 42623936, 954},
                  {"hrnetv2", 65325120, 2745}});
}

TEST_CASE("decoders: parameter and state_dict entry counts are upstream's (num_class 150)") {
  struct Row {
    const char* arch;
    int64_t fc_dim, params, entries;  // entries -1: not in the spec's table
  };
  const Row rows[] = {{"c1_deepsup", 320, 370220, 22},       {"ppm_deepsup", 512, 13241644, 58},
                      {"ppm_deepsup", 2048, 27947308, 58},   {"upernet", 2048, 40590486, 110},
                      {"c1", 720, 1193910, 11},              {"ppm", 512, -1, -1},
                      {"upernet_lite", 2048, -1, -1}};
  for (const Row& r : rows) {
    CAPTURE(r.arch);
    CAPTURE(r.fc_dim);
    const auto dec = build_decoder(r.arch, r.fc_dim, 150, skeleton());
    CHECK(dec->arch() == r.arch);
    if (r.params >= 0) CHECK(dec->num_parameters() == r.params);
    if (r.entries >= 0) CHECK(entries(*dec) == r.entries);
    check_against_upstream(*dec, str("decoder:", r.arch, ":", r.fc_dim));
  }
}

TEST_CASE("encoder feature maps: channels and output stride") {
  const auto mb = build_encoder("mobilenetv2dilated", 320, skeleton());
  CHECK(mb->feature_channels() == std::vector<int64_t>{24, 32, 64, 160, 320});
  CHECK(mb->output_stride() == 8);
  const auto r18 = build_encoder("resnet18dilated", 512, skeleton());
  CHECK(r18->feature_channels() == std::vector<int64_t>{64, 128, 256, 512});
  CHECK(r18->output_stride() == 8);
  const auto r50 = build_encoder("resnet50", 2048, skeleton());
  CHECK(r50->feature_channels() == std::vector<int64_t>{256, 512, 1024, 2048});
  CHECK(r50->output_stride() == 32);
  const auto hr = build_encoder("hrnetv2", 720, skeleton());
  CHECK(hr->feature_channels() == std::vector<int64_t>{720});
  CHECK(hr->output_stride() == 4);

  // Spec 3.2: stride-2 convs and the max-pool round up: 65x49 -> 33x25 -> 17x13 -> 9x7.
  NoGradGuard no_grad;
  const auto out = mb->forward(Tensor::zeros({1, 65, 49, 3}));
  REQUIRE(out.size() == 5);
  CHECK(out[0].shape() == Shape{1, 17, 13, 24});
  for (size_t i = 1; i < 5; ++i) CHECK(out[i].shape() == Shape{1, 9, 7, mb->feature_channels()[i]});
}

TEST_CASE("names are case-insensitive; unknown and unsupported architectures are usage errors") {
  CHECK(build_encoder("ResNet18Dilated", 512, skeleton())->arch() == "resnet18dilated");
  try {
    build_encoder("resnet50dilatd", 2048, skeleton());
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::usage);
    CHECK(e.context("key") == "MODEL.arch_encoder");
    CHECK(e.context("what to do").find("resnet50dilated") != std::string::npos);
  }
  CHECK_THROWS_WITH_AS(build_encoder("resnet34", 512, skeleton()), doctest::Contains("not implemented"), Error);
  try {
    build_decoder("ppm_deepsupp", 512, 150, skeleton());
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::usage);
    CHECK(e.context("what to do").find("ppm_deepsup") != std::string::npos);
  }
  CHECK(has_deep_supervision("c1_deepsup"));
  CHECK(has_deep_supervision("PPM_DeepSup"));
  CHECK_FALSE(has_deep_supervision("upernet"));
  CHECK(encoder_archs().size() == 8);
  CHECK(decoder_archs().size() == 6);
}

TEST_CASE("SegmentationModule checks that encoder and decoder fit") {
  auto module = [](const char* enc, const char* dec, int64_t fc) {
    return SegmentationModule(build_encoder(enc, fc, skeleton()), build_decoder(dec, fc, 150, skeleton()));
  };
  try {
    module("resnet18dilated", "ppm_deepsup", 2048);
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::usage);
    CHECK(e.context("key") == "MODEL.fc_dim");
    CHECK(e.context("what to do").find("512") != std::string::npos);
  }
  CHECK_THROWS_WITH_AS(module("hrnetv2", "c1_deepsup", 720), doctest::Contains("feature maps"), Error);
  CHECK_THROWS_WITH_AS(module("resnet18", "upernet", 512), doctest::Contains("256, 512, 1024, 2048"), Error);
  CHECK_NOTHROW(module("resnet50dilated", "upernet", 2048));  // upstream runs it too (all at stride 8)
  CHECK_NOTHROW(module("resnet50", "upernet_lite", 2048));
  CHECK_NOTHROW(module("hrnetv2", "c1", 720));
  CHECK_NOTHROW(module("mobilenetv2dilated", "ppm_deepsup", 320));
}

TEST_CASE("optimizer groups as upstream's group_weight: conv weights decay, biases and BN do not") {
  const auto enc = build_encoder("resnet50dilated", 2048, skeleton());
  const auto g = SegmentationModule::param_groups(*enc, 1e-4);
  REQUIRE(g.size() == 2);
  CHECK(g[0].name == "decay");
  CHECK(g[0].weight_decay == 1e-4);
  CHECK(g[0].params.size() == 55);
  int64_t elements = 0;
  for (const Tensor& t : g[0].params) elements += t.numel();
  SEG_CHECK_CLOSE(static_cast<double>(elements), 23.58e6, seg::test::Tolerance{0.005e6, 0});  // spec: 23.58M (rounded)
  CHECK(g[1].name == "no_decay");
  CHECK(g[1].weight_decay == 0.0);
  CHECK(g[1].params.size() == 110);
  const auto dec = build_decoder("ppm_deepsup", 2048, 150, skeleton());
  const auto gd = SegmentationModule::param_groups(*dec, 1e-4);
  CHECK(gd[0].params.size() == 8);
  CHECK(gd[1].params.size() == 14);
}

TEST_CASE("BN momentum: upstream's per-architecture default, configurable, changeable") {
  CHECK(build_encoder("resnet50dilated", 2048, skeleton())->batch_norms().front()->momentum == 0.001);
  CHECK(build_encoder("hrnetv2", 720, skeleton())->batch_norms().back()->momentum == 0.1);
  CHECK(build_decoder("c1", 720, 150, skeleton())->batch_norms().front()->momentum == 0.001);
  BuildOptions o = skeleton();
  o.bn_momentum = 0.1;
  const auto enc = build_encoder("mobilenetv2dilated", 320, o);
  CHECK(enc->batch_norms().size() == 51);
  for (BatchNorm2d* b : enc->batch_norms()) CHECK(b->momentum == 0.1);
  ModelConfig cfg;
  cfg.arch_encoder = "mobilenetv2dilated";
  cfg.arch_decoder = "c1_deepsup";
  cfg.fc_dim = 320;
  const auto model = build_segmentation_module(cfg, false);
  CHECK(model->batch_norms().size() == 51 + 2);
  CHECK(model->dropouts().empty());
  model->set_bn_momentum(0.25);
  for (BatchNorm2d* b : model->batch_norms()) CHECK(b->momentum == 0.25);
  cfg.arch_decoder = "ppm_deepsup";
  CHECK(build_segmentation_module(cfg, false)->dropouts().size() == 2);
}
