// Model checkpoints: upstream names and OIHW layout in safetensors files, round trips, the SyncBN
// extras, strict and non-strict loading, every kind of bad file, and files converted from upstream
// .pth checkpoints (zip and legacy pickle formats) by tools/convert_pth.py.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "core/autograd.h"
#include "core/fileio.h"
#include "core/rng.h"
#include "models/checkpoint.h"
#include "models/registry.h"
#include "tests/common/scratch.h"
#include "tests/models/closed_form.h"

using namespace seg;

namespace {

std::string temp_dir() {
  const std::string d = seg::test::scratch_path("checkpoints");
  make_dirs(d);
  return d;
}

std::shared_ptr<SegmentationModule> small_model(uint64_t seed) {
  ModelConfig cfg;
  cfg.arch_encoder = "mobilenetv2dilated";
  cfg.arch_decoder = "c1_deepsup";
  cfg.fc_dim = 320;
  cfg.num_class = 7;
  cfg.seed = seed;
  cfg.bn_momentum = 0.1;
  return build_segmentation_module(cfg);
}

// Every parameter and buffer of a and b are equal, bit for bit.
void check_same_state(const Module& a, const Module& b) {
  const auto sa = upstream_state_dict(a), sb = upstream_state_dict(b);
  REQUIRE(sa.size() == sb.size());
  for (size_t i = 0; i < sa.size(); ++i) {
    CAPTURE(sa[i].first);
    CHECK(sa[i].first == sb[i].first);
    REQUIRE(sa[i].second.shape() == sb[i].second.shape());
    CHECK(sa[i].second.to(DType::f64).to_vector<double>() == sb[i].second.to(DType::f64).to_vector<double>());
  }
}

const Tensor* entry(const NamedTensors& sd, const std::string& name) {
  for (const auto& [n, t] : sd)
    if (n == name) return &t;
  return nullptr;
}

// Loads `file` into a fresh decoder expecting Error(data) about `tensor`; the model must be unchanged.
// `hint`: what the "what to do" line must contain ("" for no check; "-strict" to check that it does not
// offer --non-strict, which would not help).
void expect_load_error(const SafetensorsFile& file, const std::string& tensor, const std::string& needle,
                       const std::string& hint = "") {
  CAPTURE(tensor);
  auto dec = build_decoder("c1_deepsup", 320, 7);
  const auto before = upstream_state_dict(*dec);
  try {
    load_state_dict(*dec, file, "decoder_epoch_3.safetensors");
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::data);
    CHECK(e.exit_code() == 3);
    CHECK(e.context("tensor") == tensor);
    CHECK(e.context("file") == "decoder_epoch_3.safetensors");
    CHECK_MESSAGE(e.message().find(needle) != std::string::npos, e.what());
    if (hint == "-strict")
      CHECK_MESSAGE(e.context("what to do").find("strict") == std::string::npos, e.what());
    else if (!hint.empty())
      CHECK_MESSAGE(e.context("what to do").find(hint) != std::string::npos, e.what());
  }
  const auto after = upstream_state_dict(*dec);
  for (size_t i = 0; i < before.size(); ++i)
    CHECK(before[i].second.to(DType::f64).to_vector<double>() == after[i].second.to(DType::f64).to_vector<double>());
}

SafetensorsFile decoder_file() {
  SafetensorsFile f;
  f.tensors = upstream_state_dict(*build_decoder("c1_deepsup", 320, 7, BuildOptions{std::nullopt, 99, true}));
  return f;
}

}  // namespace

TEST_CASE("checkpoint round trip: encoder and decoder files restore every parameter and buffer") {
  const std::string dir = temp_dir();
  auto a = small_model(1);
  {  // a training forward so the running statistics and num_batches_tracked are not the defaults
    PhiloxStream rng(5, RngPurpose::test);
    Tensor img = Tensor::empty({2, 33, 25, 3}, DType::f32, Device::cpu());
    for (int64_t i = 0; i < img.numel(); ++i) img.data<float>()[i] = rng.normal();
    a->forward_train(img, Tensor::zeros({2, 5, 4}, DType::i32, Device::cpu()));
  }
  const CheckpointPaths paths = checkpoint_paths(dir, 3);
  save_segmentation_checkpoint(*a, paths);
  auto b = small_model(2);
  const auto report = load_segmentation_checkpoint(*b, paths);
  CHECK(report.encoder.loaded == 51 + 51 * 5);  // 51 conv weights; 51 BN x (weight, bias, mean, var, count)
  CHECK(report.decoder.loaded == 4 + 2 + 2 * 5);
  CHECK(report.encoder.missing.empty());
  CHECK(report.decoder.unexpected.empty());
  check_same_state(*a, *b);
  std::filesystem::remove_all(dir);
}

TEST_CASE("checkpoint files hold upstream's state_dict: names, order, OIHW conv weights, SyncBN extras") {
  auto m = small_model(1);
  m->encoder->batch_norms()[0]->running_mean.fill_(0.25);
  const NamedTensors sd = upstream_state_dict(*m->encoder);
  CHECK(sd.size() == 459);  // spec 3.5: 51 convs + 51 BN x 8
  // Upstream order: per module its parameters, then its buffers (SyncBN's extras last).
  const char* first[] = {"features.0.0.weight",
                         "features.0.1.weight",
                         "features.0.1.bias",
                         "features.0.1.running_mean",
                         "features.0.1.running_var",
                         "features.0.1.num_batches_tracked",
                         "features.0.1._tmp_running_mean",
                         "features.0.1._tmp_running_var",
                         "features.0.1._running_iter",
                         "features.1.conv.0.weight"};
  for (size_t i = 0; i < std::size(first); ++i) CHECK(sd[i].first == first[i]);
  // Conv weights in PyTorch's [O, I/g, KH, KW]; element (o, i, kh, kw) is ours (o, kh, kw, i).
  const Tensor* w = entry(sd, "features.0.0.weight");
  REQUIRE(w != nullptr);
  CHECK(w->shape() == Shape{32, 3, 3, 3});
  const Tensor& ours = m->encoder->convs()[0]->weight;  // [32, 3, 3, 3] as [O, KH, KW, I]
  const float* f = w->data<float>();
  const float* o = ours.data<float>();
  for (int64_t oc : {0, 7, 31})
    for (int64_t ic = 0; ic < 3; ++ic)
      for (int64_t kh = 0; kh < 3; ++kh)
        for (int64_t kw = 0; kw < 3; ++kw) CHECK(f[((oc * 3 + ic) * 3 + kh) * 3 + kw] == o[((oc * 3 + kh) * 3 + kw) * 3 + ic]);
  const Tensor* dw = entry(sd, "features.2.conv.3.weight");  // depthwise: [96, 1, 3, 3]
  REQUIRE(dw != nullptr);
  CHECK(dw->shape() == Shape{96, 1, 3, 3});
  // SyncBN extras: _tmp_* = running statistics, _running_iter = [1.0]; num_batches_tracked i64 [].
  CHECK(entry(sd, "features.0.1._tmp_running_mean")->to_vector<float>() == std::vector<float>(32, 0.25f));
  CHECK(entry(sd, "features.0.1._running_iter")->shape() == Shape{1});
  CHECK(entry(sd, "features.0.1._running_iter")->item() == 1.0);
  CHECK(entry(sd, "features.0.1.num_batches_tracked")->dtype() == DType::i64);
  CHECK(entry(sd, "features.0.1.num_batches_tracked")->dim() == 0);
  CHECK(upstream_state_dict(*m->decoder).size() == 22);
}

TEST_CASE("bad checkpoints: missing, unexpected, wrongly shaped or typed tensors name the tensor and file") {
  {
    SafetensorsFile f = decoder_file();
    f.tensors.erase(f.tensors.begin() + 3);  // cbr.1.running_mean
    expect_load_error(f, "cbr.1.running_mean", "lacks", "pass --non-strict to segtrain eval or predict");
  }
  {
    SafetensorsFile f = decoder_file();
    f.tensors.emplace_back("fc.weight", Tensor::zeros({10, 4}, DType::f32, Device::cpu()));
    expect_load_error(f, "fc.weight", "model lacks", "pass --non-strict to segtrain eval or predict");
  }
  {
    SafetensorsFile f = decoder_file();
    f.tensors[0].second = Tensor::zeros({80, 320, 1, 1}, DType::f32, Device::cpu());  // cbr.0.weight is [80, 320, 3, 3]
    expect_load_error(f, "cbr.0.weight", "shape [80, 320, 1, 1]", "-strict");  // --non-strict skips no shape
  }
  {
    SafetensorsFile f = decoder_file();
    f.tensors[0].second = Tensor::zeros({80, 3, 3, 320}, DType::f32, Device::cpu());  // our layout is not the file layout
    expect_load_error(f, "cbr.0.weight", "OIHW");
  }
  {
    SafetensorsFile f = decoder_file();
    f.tensors[1].second = Tensor::zeros({80}, DType::i64, Device::cpu());  // cbr.1.weight
    expect_load_error(f, "cbr.1.weight", "dtype i64");
  }
  {
    SafetensorsFile f = decoder_file();
    for (auto& [name, t] : f.tensors)
      if (name == "cbr.1.num_batches_tracked") t = Tensor::zeros(Shape{}, DType::f32, Device::cpu());
    expect_load_error(f, "cbr.1.num_batches_tracked", "integer");
  }
}

TEST_CASE("a truncated or corrupt checkpoint file is a data error naming the file") {
  const std::string dir = temp_dir();
  const std::string path = dir + "/decoder_epoch_1.safetensors";
  auto dec = build_decoder("c1_deepsup", 320, 7);
  save_checkpoint(*dec, path);
  std::vector<char> bytes = read_file(path);
  for (size_t cut : {size_t{3}, size_t{100}, bytes.size() / 2, bytes.size() - 1}) {
    write_file_atomic(path, bytes.data(), cut);
    try {
      load_checkpoint(*dec, path);
      FAIL("expected an error");
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::data);
      CHECK(e.context("file") == path);
    }
  }
  CHECK_THROWS_AS(load_checkpoint(*dec, dir + "/nonexistent.safetensors"), Error);
  std::filesystem::remove_all(dir);
}

TEST_CASE("non-strict loading skips missing and unexpected tensors and reports them (upstream strict=False)") {
  SafetensorsFile f = decoder_file();
  f.tensors.erase(f.tensors.begin());  // cbr.0.weight
  f.tensors.emplace_back("fc.weight", Tensor::zeros({10, 4}, DType::f32, Device::cpu()));
  f.tensors.emplace_back("fc.bias", Tensor::zeros({10}, DType::f32, Device::cpu()));
  auto dec = build_decoder("c1_deepsup", 320, 7);
  const std::vector<float> kept = dec->named_parameters()[0].tensor->to_vector<float>();
  const LoadReport r = load_state_dict(*dec, f, "pretrained.safetensors", LoadOptions{false});
  CHECK(r.missing == std::vector<std::string>{"cbr.0.weight"});
  CHECK(r.unexpected == std::vector<std::string>{"fc.weight", "fc.bias"});
  CHECK(r.loaded == 4 + 2 + 2 * 5 - 1);
  CHECK(r.summary().find("skipped 2 unexpected (fc.weight, fc.bias)") != std::string::npos);
  CHECK(dec->named_parameters()[0].tensor->to_vector<float>() == kept);  // missing: left as it was
  CHECK(dec->named_parameters()[1].tensor->to_vector<float>() == f.find("cbr.1.weight")->to_vector<float>());
  // A wrong shape stays an error without strict, as in PyTorch.
  f.tensors[0].second = Tensor::zeros({3}, DType::f32, Device::cpu());
  CHECK_THROWS_AS(load_state_dict(*dec, f, "x", LoadOptions{false}), Error);
}

TEST_CASE("optional entries: files without num_batches_tracked and SyncBN extras load; f16 files load into f32") {
  SafetensorsFile full = decoder_file();
  SafetensorsFile f;
  for (const auto& [name, t] : full.tensors) {
    const std::string leaf = name.substr(name.rfind('.') + 1);
    if (leaf == "num_batches_tracked" || leaf[0] == '_') continue;
    f.tensors.emplace_back(name, leaf == "weight" ? t.to(DType::f16) : t);
  }
  CHECK(f.tensors.size() == 22 - 2 * 4);
  auto dec = build_decoder("c1_deepsup", 320, 7);
  const LoadReport r = load_state_dict(*dec, f, "old.safetensors");
  CHECK(r.loaded == 14);
  const Tensor* w = f.find("conv_last.weight");
  CHECK(entry(upstream_state_dict(*dec), "conv_last.weight")->to_vector<float>() == w->to(DType::f32).to_vector<float>());
}

TEST_CASE("checkpoint file names follow upstream's (encoder_/decoder_epoch_N) with .safetensors") {
  const CheckpointPaths p = checkpoint_paths("ckpt/ade20k-resnet50dilated-ppm_deepsup", 20);
  CHECK(p.encoder == "ckpt/ade20k-resnet50dilated-ppm_deepsup/encoder_epoch_20.safetensors");
  CHECK(p.decoder == "ckpt/ade20k-resnet50dilated-ppm_deepsup/decoder_epoch_20.safetensors");
  CHECK(checkpoint_paths("d/", "epoch_50.pth").encoder == "d/encoder_epoch_50.safetensors");
  CHECK(checkpoint_paths("d", "epoch_7").decoder == "d/decoder_epoch_7.safetensors");
  CHECK(checkpoint_paths("d", "epoch_7.safetensors").decoder == "d/decoder_epoch_7.safetensors");
  CHECK_THROWS_AS(checkpoint_paths("d", "best.pth"), Error);
  CHECK_THROWS_AS(checkpoint_paths("d", "epoch_.pth"), Error);
}

TEST_CASE("upstream .pth checkpoints converted by tools/convert_pth.py load strictly (zip and legacy pickles)") {
  // tools/golden/make_checkpoint_fixtures.py: upstream's c1_deepsup (fc_dim 32, 5 classes) with the
  // closed-form weights and num_batches_tracked 7, saved by torch.save in both formats, converted.
  for (const char* fmt : {"zip", "legacy"}) {
    CAPTURE(fmt);
    const std::string path =
        std::string(SEG_SOURCE_DIR) + "/tests/golden/checkpoints/c1_deepsup_fc32_k5_from_" + fmt + "_pth.safetensors";
    const SafetensorsFile file = read_safetensors(path);
    CHECK(file.tensors.size() == 22);
    auto dec = build_decoder("c1_deepsup", 32, 5);
    const LoadReport r = load_checkpoint(*dec, path);
    CHECK(r.loaded == 16);
    // Every value is the closed form of its name; the counters are 7.
    for (const auto& [name, t] : upstream_state_dict(*dec)) {
      CAPTURE(name);
      Tensor expected;
      if (test::closed_form_tensor(name, t.shape(), expected))
        CHECK(t.to_vector<float>() == expected.to_vector<float>());
      else if (name.find("num_batches_tracked") != std::string::npos)
        CHECK(t.item() == 7.0);
      // What we would write is what the converter wrote (the SyncBN extras aside, which upstream
      // initialises independently of the running statistics).
      if (name.find("._") == std::string::npos) {
        const Tensor* theirs = file.find(name);
        REQUIRE(theirs != nullptr);
        CHECK(theirs->shape() == t.shape());
        CHECK(theirs->dtype() == t.dtype());
        CHECK(theirs->to(DType::f64).to_vector<double>() == t.to(DType::f64).to_vector<double>());
      }
    }
  }
}
