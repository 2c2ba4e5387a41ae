#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "tools/config.h"
#include "tests/common/scratch.h"

using namespace seg;
using namespace seg::cli;

namespace {
std::string temp_file(const std::string& name, const std::string& text) {
  const std::string path = seg::test::scratch_path(name);
  std::ofstream(path) << text;
  return path;
}
std::string source(const std::string& rel) { return std::string(SEG_SOURCE_DIR) + "/" + rel; }
}  // namespace

TEST_CASE("defaults are upstream's (spec 1.1)") {
  const Config c;
  CHECK(c.DIR == "ckpt/ade20k-resnet50dilated-ppm_deepsup");
  CHECK(c.DATASET.imgSizes == std::vector<int64_t>{300, 375, 450, 525, 600});
  CHECK(c.TRAIN.lr_encoder == 0.02);
  CHECK(c.TRAIN.seed == 304);
  CHECK(c.TRAIN.weight_decay == 1e-4);
  CHECK(c.MODEL.bn_momentum == 0.001);
  CHECK(c.VAL.checkpoint == "epoch_20.pth");
  CHECK(c.TRAIN.detect_anomaly == false);
  CHECK(Config::keys().size() == 51);  // upstream's keys and ours (TRAIN.engine and TRAIN.deterministic are the newest)
  CHECK(c.TRAIN.sub_batches_per_rank == 1);
  CHECK(c.TRAIN.sync_bn == true);  // upstream's models use SynchronizedBatchNorm2d
  CHECK(c.TRAIN.bucket_mb == 25);  // PyTorch DDP's default
  CHECK(c.TRAIN.allreduce_dtype == "storage");
  CHECK(c.TRAIN.engine == "own");  // the project's kernels unless asked otherwise
  CHECK(c.TRAIN.deterministic == false);
}

TEST_CASE("every shipped JSON config loads, and matches the upstream table") {
  const Config m = load_config(source("configs/ade20k-mobilenetv2dilated-c1_deepsup.json"), {});
  CHECK(m.MODEL.arch_encoder == "mobilenetv2dilated");
  CHECK(m.MODEL.fc_dim == 320);
  CHECK(m.TRAIN.batch_size_per_gpu == 3);
  const Config u = load_config(source("configs/ade20k-resnet101-upernet.json"), {});
  CHECK(u.TRAIN.num_epoch == 40);
  CHECK(u.VAL.checkpoint == "epoch_50.pth");  // upstream's inconsistency, kept
  CHECK(u.DATASET.padding_constant == 32);
  const Config h = load_config(source("configs/ade20k-hrnetv2.json"), {});
  CHECK(h.MODEL.bn_momentum == 0.1);
  CHECK(h.DATASET.segm_downsampling_rate == 4);
}

TEST_CASE("upstream YAML is accepted as it is, tuples included") {
  const std::string path = temp_file("up.yaml",
                                     "DATASET:\n  imgSizes: (300, 375)\n  random_flip: True\n"
                                     "MODEL:\n  arch_encoder: \"resnet18dilated\"\n  fc_dim: 512\n"
                                     "TRAIN:\n  weight_decay: 1e-4\n  fix_bn: False\nDIR: \"ckpt/x\"\n");
  const Config c = load_config(path, {"TRAIN.num_epoch", "3", "DATASET.imgSizes", "(128, 160)"});
  CHECK(c.DATASET.imgSizes == std::vector<int64_t>{128, 160});
  CHECK(c.MODEL.arch_encoder == "resnet18dilated");
  CHECK(c.MODEL.fc_dim == 512);
  CHECK(c.TRAIN.num_epoch == 3);
  CHECK(c.DIR == "ckpt/x");
}

TEST_CASE("unknown keys suggest the nearest; wrong types name the key and source") {
  try {
    load_config("", {"TRAIN.lr_encodr", "0.1"});
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.exit_code() == 2);
    CHECK(e.context("key") == "TRAIN.lr_encodr");
    CHECK(e.context("what to do").find("TRAIN.lr_encoder") != std::string::npos);
  }
  CHECK(closest_key("TRAIN.batch_size") == "TRAIN.batch_size_per_gpu");
  CHECK(closest_key("DATASET.imgsizes") == "DATASET.imgSizes");
  // A key of a megabyte is compared by its first characters only (the fuzz stage's 140 kB key took
  // 27 s under ASan when every character went into the edit distance): still a typo's suggestion.
  CHECK(closest_key("TRAIN.lr_encodr" + std::string(1 << 20, 'x')) == "TRAIN.lr_encoder");
  try {
    load_config("", {"TRAIN.num_epoch", "two"});
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("is not an integer") != std::string::npos);
    CHECK(e.context("from") == "command line");
  }
  const std::string bad = temp_file("bad.json", "{\"TRAIN\": {\"fix_bn\": \"maybe\"}}");
  CHECK_THROWS_WITH_AS(load_config(bad, {}), doctest::Contains("TRAIN.fix_bn"), Error);
  const std::string broken = temp_file("broken.json", "{\"TRAIN\": ");
  CHECK_THROWS_WITH_AS(load_config(broken, {}), doctest::Contains("cannot parse JSON"), Error);
  CHECK_THROWS_WITH_AS(load_config("/no/such.json", {}), doctest::Contains("not found"), Error);
  // Found by the config fuzz targets (tests/fuzz/regressions/config_*): a number beyond double's
  // range is nlohmann's out_of_range, not a parse_error; a string that is not UTF-8 (YAML and the
  // command line accept any bytes) could not be written to config.json once training had started.
  const std::string huge = temp_file("huge.json", "{\"TRAIN\": {\"lr_encoder\": 1e999}}");
  CHECK_THROWS_WITH_AS(load_config(huge, {}), doctest::Contains("cannot parse JSON"), Error);
  try {
    load_config("", {"DIR", "ckpt/\xff"});
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.exit_code() == 2);
    CHECK(e.context("key") == "DIR");
    CHECK(std::string(e.what()).find("not UTF-8") != std::string::npos);
  }
  const std::string latin1 = temp_file("latin1.yaml", "DIR: \"ckpt/caf\xe9\"\n");
  CHECK_THROWS_WITH_AS(load_config(latin1, {}), doctest::Contains("not UTF-8"), Error);
  CHECK(load_config("", {"DIR", "ckpt/caf\xc3\xa9"}).DIR == "ckpt/caf\xc3\xa9");  // UTF-8 is fine
  CHECK_THROWS_WITH_AS(load_config("", {"TRAIN.seed"}), doctest::Contains("KEY VALUE"), Error);
}

TEST_CASE("checkpoint names and the config dump") {
  CHECK(checkpoint_file("epoch_20.pth", "encoder") == "encoder_epoch_20.safetensors");
  CHECK(checkpoint_file("epoch_3", "decoder") == "decoder_epoch_3.safetensors");
  Config c;
  c.set("TRAIN.amp", "O2", "test");
  const nlohmann::json j = c.to_json();
  CHECK(j["TRAIN"]["amp"] == "O2");
  CHECK(j["DATASET"]["imgSizes"].size() == 5);
  // Round trip through the dump.
  const std::string path = seg::test::scratch_path("config_dump.json");
  dump_config(c, {{"max_iters", 100000}}, path);
  std::ifstream in(path);
  nlohmann::json back = nlohmann::json::parse(in);
  CHECK(back["derived"]["max_iters"] == 100000);
  back.erase("derived");
  std::ofstream(path) << back.dump();
  CHECK(load_config(path, {}).TRAIN.amp == "O2");
}
