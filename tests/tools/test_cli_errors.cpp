// Bad input at the command line: one clear message, the documented exit code, no stack trace.
#include <doctest/doctest.h>

#include <filesystem>

#include "core/fileio.h"
#include "tests/tools/cli_test_helpers.h"

using seg::test::run_segtrain;

namespace {
void check_error(const std::vector<std::string>& args, int code, const std::string& text) {
  const auto r = run_segtrain(args);
  CAPTURE(args[0]);
  CAPTURE(r.output);
  CHECK(r.exit_code == code);
  CHECK(r.output.find(text) != std::string::npos);
  CHECK(r.output.find("terminate called") == std::string::npos);
  CHECK(r.output.rfind("segtrain: ", 0) == 0);  // one message, prefixed
}
}  // namespace

TEST_CASE("every command has --help with examples, exit 0") {
  for (const char* cmd : {"train", "eval", "predict", "bench", "data", "demo", "info"}) {
    const auto r = run_segtrain({cmd, "--help"});
    CAPTURE(cmd);
    CHECK(r.exit_code == 0);
    CHECK(r.output.find("usage: segtrain") != std::string::npos);
    CHECK(r.output.find("example") != std::string::npos);
  }
  CHECK(run_segtrain({"--help"}).exit_code == 0);
  CHECK(run_segtrain({}).exit_code == 2);
}

TEST_CASE("config errors: unknown key with a suggestion, wrong type, missing file (exit 2)") {
  const std::string cfg = seg::test::config_file();
  check_error({"train", "--cfg", cfg, "TRAIN.lr_encodr", "0.1"}, 2, "did you mean TRAIN.lr_encoder");
  check_error({"train", "--cfg", cfg, "TRAIN.num_epoch", "ten"}, 2, "TRAIN.num_epoch");
  check_error({"train", "--cfg", "/no/such/config.json"}, 2, "config file not found");
  check_error({"train"}, 2, "needs --cfg");
  check_error({"train", "--cfg", cfg, "--amp", "O5"}, 2, "unknown mixed-precision level");
  check_error({"frobnicate"}, 2, "unknown command");
  check_error({"train", "--cfg", cfg, "--bogus"}, 2, "unknown option '--bogus'");
  // The engine is checked on every device, so a typo fails before a long CPU run, naming its source.
  check_error({"bench", "--engine", "bogus", "--size", "32", "--steps", "1", "--warmup", "0"}, 2, "unknown engine 'bogus'");
  check_error({"bench", "--cfg", cfg, "TRAIN.engine", "cuDNN", "--size", "32", "--steps", "1"}, 2, "TRAIN.engine");
  check_error({"eval", "--cfg", cfg, "--engine", "fast"}, 2, "--engine");
}

TEST_CASE("devices: no GPU is a device error (exit 4); several GPUs are for train, eval and predict, each once (exit 2)") {
  const std::string cfg = seg::test::config_file();
  check_error({"train", "--cfg", cfg, "--gpus", "0"}, 4, "GPU cuda:0 requested");
  // Several GPUs train data parallel (a thread each); this build has none.
  check_error({"train", "--cfg", cfg, "--gpus", "0-3"}, 4, "built without CUDA");
  check_error({"train", "--cfg", cfg, "--gpus", "0,1,0"}, 2, "GPU 0 is listed twice in --gpus 0,1,0");
  check_error({"eval", "--cfg", cfg, "--gpus", "0-1"}, 4, "built without CUDA");
  check_error({"predict", "--cfg", cfg, "--imgs", seg::test::tiny_dataset() + "/images/validation", "--gpus", "0-1"}, 4,
              "built without CUDA");
  check_error({"bench", "--gpus", "0-1", "--size", "32", "--steps", "1", "--warmup", "0"}, 2,
              "2 GPUs are for segtrain train, eval and predict");
  check_error({"train", "--cfg", cfg, "--gpus", "x1"}, 2, "bad GPU list");
}

TEST_CASE("missing dataset (exit 3) and missing checkpoint (exit 2) name the file; nothing half-written") {
  const std::string dir = seg::test::fresh_dir("errors");
  check_error({"train", "--cfg", seg::test::config_file(), "DIR", dir, "DATASET.list_train", "/no/list.odgt"}, 3,
              "/no/list.odgt");
  CHECK_FALSE(seg::file_exists(dir + "/config.json"));
  check_error({"eval", "--cfg", seg::test::config_file(), "DIR", dir, "--checkpoint", "epoch_99.pth"}, 2,
              "checkpoint not found: " + dir + "/encoder_epoch_99.safetensors");
  check_error({"predict", "--cfg", seg::test::config_file(), "--imgs", "/no/such/images"}, 2, "no such file or folder");
}

TEST_CASE("out of memory is a device error (exit 4) with advice") {
  check_error({"bench", "--size", "60000", "--batch", "64", "--steps", "1", "--warmup", "0"}, 4, "out of memory");
}
