// segtrain export against ONNX Runtime: every upstream config (and the synthetic one) exported with
// the closed-form weights of the model goldens (tests/models/closed_form.h: BN statistics and
// affine parameters far from the identity, so folding is really exercised), run in ONNX Runtime on
// the CPU, compared with `segtrain predict --npy` on the same image.
//
// ONNX Runtime is Python (the onnxruntime wheel from PyPI): the suite runs tools/onnx_check.py with
// the interpreter named by SEG_ORT_PYTHON, or `python3` if that one imports onnxruntime. Where none
// does, the whole suite exits 77 and CTest reports it as skipped. .ci/run installs it into a venv.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "data/image.h"
#include "data/image_codec.h"
#include "data/transforms.h"
#include "core/npy.h"
#include "tests/common/compare_tensor.h"
#include "kernels/common/philox.h"
#include "models/checkpoint.h"
#include "models/registry.h"
#include "tests/models/closed_form.h"
#include "tests/tools/cli_test_helpers.h"
#include "tools/config.h"
#include "tools/run_setup.h"

using namespace seg;
using seg::test::run_segtrain;

namespace {

std::string ort_python() {
  if (const char* p = std::getenv("SEG_ORT_PYTHON"); p && *p) return p;
  return "python3";
}

bool have_onnxruntime() {
  const std::string cmd = ort_python() + " -c 'import onnxruntime, numpy, PIL' >/dev/null 2>&1";
  return std::system(cmd.c_str()) == 0;
}

// Runs tools/onnx_check.py; returns its exit code and puts its one-line report into `report`.
int onnx_check(const std::vector<std::string>& args, std::string& report) {
  std::string cmd = ort_python() + " " + std::string(SEG_SOURCE_DIR) + "/tools/onnx_check.py";
  for (const std::string& a : args) cmd += " '" + a + "'";
  const std::string out = seg::test::scratch_path("onnx_check.txt");
  const int rc = std::system((cmd + " >'" + out + "' 2>&1").c_str());
  FILE* f = std::fopen(out.c_str(), "r");
  report.clear();
  if (f) {
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) report.append(buf, n);
    std::fclose(f);
  }
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
}

// A noise image of size h x w (PNG: lossless, so both sides decode the same pixels).
std::string noise_png(const std::string& path, int h, int w) {
  data::Image img(w, h, 3);
  for (size_t i = 0; i < img.pixels.size(); i += 4) {
    const PhiloxCounter r = philox4x32_10(PhiloxCounter{{static_cast<uint32_t>(i), 7, 0, 0}}, PhiloxKey{{1, 2}});
    for (size_t j = 0; j < 4 && i + j < img.pixels.size(); ++j) img.pixels[i + j] = static_cast<uint8_t>(r.c[j]);
  }
  data::save_png(path, img);
  return path;
}

std::string config_path(const std::string& name) { return std::string(SEG_SOURCE_DIR) + "/configs/" + name + ".json"; }

// The closed-form model of a config (its weights are a function of the parameter names only).
std::shared_ptr<SegmentationModule> closed_form_model(const std::string& cfg_name) {
  const cli::Config cfg = cli::load_config(config_path(cfg_name), {});
  auto model = build_segmentation_module(cli::model_config(cfg));
  seg::test::fill_closed_form(*model);
  model->eval();
  return model;
}

// A run folder holding encoder/decoder_epoch_1 for the config, with closed-form weights.
std::string closed_form_checkpoint(const std::string& cfg_name) {
  const std::string dir = seg::test::fresh_dir("export_" + cfg_name);
  std::filesystem::create_directories(dir);
  save_segmentation_checkpoint(*closed_form_model(cfg_name), checkpoint_paths(dir, 1));
  return dir;
}

// The truth for a case: the same model in float64 on the same normalised image, NCHW like predict's.
Tensor f64_probabilities(const std::string& cfg_name, const std::string& png) {
  auto model = closed_form_model(cfg_name);
  for (const NamedTensor& p : model->named_parameters()) *p.tensor = p.tensor->detach().to(DType::f64);
  for (const NamedTensor& b : model->named_buffers())
    if (is_floating(b.tensor->dtype())) *b.tensor = b.tensor->to(DType::f64);
  const data::Image img = data::load_image_rgb(png);
  Tensor x = Tensor::empty({1, img.height, img.width, 3}, DType::f32);
  data::imagenet_normalizer().apply(img, x.data<float>(), 3 * img.width);
  const Tensor p = model->infer(x.to(DType::f64), img.height, img.width);  // [1, H, W, K]
  return p.permute({0, 3, 1, 2}).contiguous();
}

struct Case {
  const char* config;
  int size;
};

// Exports, predicts and compares one config at one size; `extra` goes to segtrain export.
//
// The bound: ONNX Runtime and segtrain are two float32 implementations of one model, so each is as
// far from the float64 truth as float32 rounding through that model makes it. On the closed-form
// weights the deep models amplify rounding a lot (saturated softmax): segtrain's own float32 error
// here ranges from 1.6e-5 (MobileNetV2) to 1e-3 (ResNet50 UPerNet). So both differences,
// |ORT - segtrain| and |ORT - f64|, must stay within max(1e-5, 4 x segtrain's own error).
void check_parity(const std::string& cfg_name, int size, const std::vector<std::string>& extra = {},
                  const std::vector<std::string>& check_extra = {}) {
  const std::string dir = closed_form_checkpoint(cfg_name);
  const std::string onnx = dir + "/model.onnx", img = noise_png(dir + "/noise.png", size, size);
  std::vector<std::string> args{"export", "--cfg", config_path(cfg_name), "DIR", dir, "--checkpoint", "epoch_1.pth",
                                "--onnx", onnx, "--size", std::to_string(size)};
  args.insert(args.end(), extra.begin(), extra.end());
  const auto ex = run_segtrain(args);
  INFO(ex.output);
  REQUIRE(ex.exit_code == 0);
  CHECK(ex.output.find("checked with onnx::checker") != std::string::npos);
  const auto pr = run_segtrain({"predict", "--cfg", config_path(cfg_name), "DIR", dir, "--checkpoint", "epoch_1.pth",
                                "--imgs", img, "--npy", "--scales", std::to_string(size), "DATASET.imgMaxSize",
                                std::to_string(size), "TEST.result", dir + "/pred"});
  INFO(pr.output);
  REQUIRE(pr.exit_code == 0);
  const std::string ours_npy = dir + "/pred/noise_probs.npy", truth_npy = dir + "/truth_f64.npy";
  const Tensor truth = f64_probabilities(cfg_name, img);
  write_npy(truth_npy, truth);
  const auto own = seg::test::compare(read_npy(ours_npy), truth);
  REQUIRE_MESSAGE(std::isfinite(own.max_abs), own.str());
  const double atol = std::max(1e-5, 4.0 * own.max_abs);
  std::string report;
  std::vector<std::string> cargs{onnx, img, "--npy", ours_npy, "--ref64", truth_npy, "--atol", std::to_string(atol)};
  cargs.insert(cargs.end(), check_extra.begin(), check_extra.end());
  const int rc = onnx_check(cargs, report);
  MESSAGE(cfg_name << " at " << size << "x" << size << ": segtrain's own f32 error " << own.max_abs << "; " << report);
  CHECK(rc == 0);
  std::filesystem::remove_all(dir);
}

}  // namespace

std::string seg_test_skip_reason() {
  if (!have_onnxruntime())
    return "no Python with onnxruntime, numpy and Pillow (set SEG_ORT_PYTHON to a venv's python; "
           "pip install onnxruntime numpy pillow)";
  return "";
}

TEST_CASE("export: every upstream config matches segtrain predict in ONNX Runtime") {
  // 64x64 is a multiple of every config's padding constant (8 or 32). At 64 the dilated encoders'
  // 8x8 features meet PPM's bins 3 and 6 unevenly; HRNet and UPerNet run at their stride 4/32.
  const std::vector<Case> cases = {
      {"synth-mobilenetv2dilated-c1_deepsup", 64}, {"ade20k-mobilenetv2dilated-c1_deepsup", 64},
      {"ade20k-resnet18dilated-ppm_deepsup", 64},  {"ade20k-resnet50dilated-ppm_deepsup", 64},
      {"ade20k-resnet101dilated-ppm_deepsup", 64}, {"ade20k-hrnetv2", 64},
      {"ade20k-resnet50-upernet", 64},             {"ade20k-resnet101-upernet", 64},
  };
  for (const Case& c : cases) {
    SUBCASE(c.config) { check_parity(c.config, c.size); }
  }
}

TEST_CASE("export: PPM with uneven adaptive bins (72x72 input, 9x9 features into 2, 3 and 6 bins)") {
  // The case upstream's own exporter fails on (its issue #240): 9 rows into 6 bins overlap.
  check_parity("ade20k-resnet18dilated-ppm_deepsup", 72);
}

TEST_CASE("export: BatchNorm kept as nodes, and a dynamic batch of 2") {
  check_parity("ade20k-mobilenetv2dilated-c1_deepsup", 64, {"--no-fold-bn"});
  check_parity("ade20k-resnet18dilated-ppm_deepsup", 64, {"--dynamic-batch"}, {"--batch", "2"});
}

TEST_CASE("export: bad inputs give a usage or data error and no file") {
  const std::string dir = closed_form_checkpoint("ade20k-resnet18dilated-ppm_deepsup");
  const std::string cfg = config_path("ade20k-resnet18dilated-ppm_deepsup");
  const std::string onnx = dir + "/model.onnx";
  auto base = [&](const std::string& size, const std::string& out) {
    return std::vector<std::string>{"export", "--cfg", cfg, "DIR", dir, "--checkpoint", "epoch_1.pth",
                                    "--onnx", out, "--size", size};
  };
  SUBCASE("a size that is not a multiple of the padding constant") {
    const auto r = run_segtrain(base("60", onnx));
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("padding_constant") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(onnx));
  }
  SUBCASE("a malformed size") {
    const auto r = run_segtrain(base("64xabc", onnx));
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("--size") != std::string::npos);
  }
  SUBCASE("a folder that does not exist") {
    const auto r = run_segtrain(base("64", dir + "/no/such/folder/model.onnx"));
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("does not exist") != std::string::npos);
  }
  SUBCASE("a checkpoint of another model") {
    // The MobileNetV2 config reading ResNet18-PPM weights: names and shapes differ.
    const auto r = run_segtrain({"export", "--cfg", config_path("ade20k-mobilenetv2dilated-c1_deepsup"), "DIR", dir,
                                 "--checkpoint", "epoch_1.pth", "--onnx", onnx, "--size", "64"});
    CHECK((r.exit_code == 2 || r.exit_code == 3));
    CHECK_FALSE(std::filesystem::exists(onnx));
    // Nothing half-written either: no temporary file next to it.
    for (const auto& e : std::filesystem::directory_iterator(dir))
      CHECK(e.path().extension() != ".tmp");
  }
  SUBCASE("an opset the ONNX library cannot check") {
    auto args = base("64", onnx);
    args.insert(args.end(), {"--opset", "9"});
    const auto r = run_segtrain(args);
    CHECK(r.exit_code == 2);
    CHECK_FALSE(std::filesystem::exists(onnx));
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("export --half: f16 weights and arithmetic, within the error of segtrain's own pure-half inference") {
  // The reference error of half precision on this case: segtrain predict --amp O3 (everything in
  // f16) against its f32 run. The f16 ONNX model may differ from f32 by a small multiple of that.
  const std::string name = "ade20k-mobilenetv2dilated-c1_deepsup";
  const std::string dir = closed_form_checkpoint(name);
  const std::string img = noise_png(dir + "/noise.png", 64, 64);
  auto predict = [&](const std::string& out, const std::vector<std::string>& extra) {
    std::vector<std::string> a{"predict", "--cfg", config_path(name), "DIR", dir, "--checkpoint", "epoch_1.pth", "--imgs",
                               img, "--npy", "--scales", "64", "DATASET.imgMaxSize", "64", "TEST.result", dir + "/" + out};
    a.insert(a.end(), extra.begin(), extra.end());
    const auto r = run_segtrain(a);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    return read_npy(dir + "/" + out + "/noise_probs.npy");
  };
  const Tensor f32 = predict("pred32", {}), o3 = predict("pred16", {"--amp", "O3"});
  const auto half_err = seg::test::compare(o3, f32);
  REQUIRE(std::isfinite(half_err.max_abs));
  const double atol = std::max(1e-5, 4.0 * half_err.max_abs);
  for (const bool half : {false, true}) {
    std::vector<std::string> args{"export", "--cfg", config_path(name), "DIR", dir, "--checkpoint", "epoch_1.pth",
                                  "--onnx", dir + (half ? "/h.onnx" : "/f.onnx"), "--size", "64"};
    if (half) args.push_back("--half");
    const auto r = run_segtrain(args);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
  }
  // The f16 file holds 2-byte weights: about half the f32 file.
  CHECK(std::filesystem::file_size(dir + "/h.onnx") < 0.6 * std::filesystem::file_size(dir + "/f.onnx"));
  std::string report;
  const int rc = onnx_check({dir + "/h.onnx", img, "--npy", dir + "/pred32/noise_probs.npy", "--atol", std::to_string(atol)},
                            report);
  MESSAGE("--half: segtrain O3 vs f32 " << half_err.max_abs << "; " << report);
  CHECK(rc == 0);
  std::filesystem::remove_all(dir);
}
