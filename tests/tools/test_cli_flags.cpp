// Numbers on the command line and in configs (issue 17): every numeric flag of every command is a
// usage error (exit 2) naming the flag and the bad text, never "segtrain: error: stoi" (exit 1);
// config values are echoed as written (3.7, not 3.7000000000000002); every config key is listed with
// its type and default; the build summary and `segtrain info` do not list unimplemented features.
#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/comm.h"
#include "core/error.h"
#include "core/numbers.h"
#include "tests/common/scratch.h"
#include "tests/tools/cli_test_helpers.h"
#include "tools/config.h"

using namespace seg;
using seg::test::run_segtrain;

namespace {
bool contains(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

void check_flag_error(std::vector<std::string> args, const std::string& flag, const std::string& value) {
  const auto r = run_segtrain(args);
  CAPTURE(args);
  CAPTURE(r.output);
  CHECK(r.exit_code == 2);
  CHECK(r.output.rfind("segtrain: usage error: " + flag + ": ", 0) == 0);  // the flag first
  CHECK(contains(r.output, value));
  CHECK(contains(r.output, "key: " + flag));
  CHECK_FALSE(contains(r.output, "stoi"));
  CHECK_FALSE(contains(r.output, "terminate called"));
}
}  // namespace

TEST_CASE("every numeric flag of every command: a bad value is a usage error naming the flag and the value") {
  const std::string cfg = seg::test::config_file();
  const std::string list = seg::test::tiny_dataset() + "/validation.odgt";
  struct Case {
    std::vector<std::string> args;
    std::string flag, shown;
  };
  const std::vector<Case> cases = {
      {{"demo", "--threads", "abc"}, "--threads", "'abc' is not an integer"},
      {{"demo", "--threads", "0"}, "--threads", "0 is out of range"},
      {{"train", "--cfg", cfg, "--threads", "2x"}, "--threads", "'2x' is not an integer"},
      {{"train", "--cfg", cfg, "--stop-after", "ten"}, "--stop-after", "'ten'"},
      {{"train", "--cfg", cfg, "--threads", "99999999999999999999"}, "--threads", "'99999999999999999999'"},
      {{"eval", "--cfg", cfg, "--max-images", "-3"}, "--max-images", "-3 is out of range"},
      {{"eval", "--cfg", cfg, "--scales", "300,abc"}, "--scales", "'abc'"},
      {{"eval", "--cfg", cfg, "--threads", "1.5"}, "--threads", "'1.5'"},
      {{"predict", "--cfg", cfg, "--imgs", list, "--scales", "x"}, "--scales", "'x'"},
      {{"bench", "--size", "big"}, "--size", "'big'"},
      {{"bench", "--batch", "0"}, "--batch", "0 is out of range"},
      {{"bench", "--steps", "1e3"}, "--steps", "'1e3'"},
      {{"bench", "--warmup", "-1"}, "--warmup", "-1 is out of range"},
      {{"bench", "--num-class", "many"}, "--num-class", "'many'"},
      {{"bench", "--threads", ""}, "--threads", "'' is not an integer"},
      {{"data", "check", list, "--num-class", "x"}, "--num-class", "'x'"},
      {{"data", "check", list, "--num-class", "300"}, "--num-class", "300 is out of range"},
      {{"data", "check", list, "--threads", "two"}, "--threads", "'two'"},
      {{"data", "synth", "--train", "x"}, "--train", "'x'"},
      {{"data", "synth", "--val", "1O"}, "--val", "'1O'"},
      {{"data", "synth", "--seed", "-5"}, "--seed", "-5 is out of range"},
      {{"data", "synth", "--classes", "eleven"}, "--classes", "'eleven'"},
      {{"data", "synth", "--size", "a-b"}, "--size", "'a'"},
      {{"data", "synth", "--aspect", "1.2-x"}, "--aspect", "'x'"},
      {{"data", "synth", "--portrait", "half"}, "--portrait", "'half'"},
      {{"data", "synth", "--quality", "101"}, "--quality", "101 is out of range"},
      {{"data", "synth", "--threads", "t"}, "--threads", "'t'"},
  };
  for (const Case& c : cases) check_flag_error(c.args, c.flag, c.shown);
  // Flags whose numbers are checked elsewhere keep their own (already clear) messages.
  const auto gpus = run_segtrain({"train", "--cfg", cfg, "--gpus", "99999999999999"});
  CHECK(gpus.exit_code == 2);
  CHECK(contains(gpus.output, "bad GPU index in '99999999999999'"));
  const auto scale = run_segtrain({"train", "--cfg", cfg, "--loss-scale", "inf"});
  CHECK(scale.exit_code == 2);
  CHECK(contains(scale.output, "bad loss scale 'inf'"));
}

TEST_CASE("the strict number parsers: whole text, no overflow, finite; shortest round-trip printing") {
  CHECK(parse_int64("42") == 42);
  CHECK(parse_int64("+7") == 7);
  CHECK(parse_int64("-9223372036854775808") == INT64_MIN);
  CHECK_FALSE(parse_int64("9223372036854775808"));
  CHECK_FALSE(parse_int64("12abc"));
  CHECK_FALSE(parse_int64(" 1"));
  CHECK_FALSE(parse_int64(""));
  CHECK_FALSE(parse_int64("1.0"));
  CHECK(parse_finite_double("1e-4") == 1e-4);
  CHECK(parse_finite_double(".5") == 0.5);
  CHECK_FALSE(parse_finite_double("inf"));
  CHECK_FALSE(parse_finite_double("nan"));
  CHECK_FALSE(parse_finite_double("1e999"));
  CHECK_FALSE(parse_finite_double("0.1x"));
  CHECK(format_double(3.7) == "3.7");
  CHECK(format_double(0.1 + 0.2) == "0.30000000000000004");  // a different double, printed exactly
  CHECK(format_double(1e-4) == "0.0001");
  CHECK(format_double(2.0) == "2");
  CHECK(format_double(-250.5) == "-250.5");
  CHECK(format_double(65536.0) == "65536");
  CHECK(format_double(1.5e-5) == "1.5e-05");
  CHECK(format_double(1e16) == "1e+16");
  CHECK(format_double(123456789012345.6) == "123456789012345.6");
  CHECK(parse_finite_double(format_double(0.123456789012345678)) == 0.123456789012345678);
}

TEST_CASE("JSON numbers are echoed as written: 3.7, not 3.7000000000000002") {
  const std::string path = seg::test::scratch_path("float_config.json");
  std::ofstream(path) << R"({"TRAIN": {"num_epoch": 3.7, "lr_encoder": 3.7}})";
  try {
    cli::load_config(path, {});
    FAIL("a fractional num_epoch must be refused");
  } catch (const Error& e) {
    CAPTURE(e.what());
    CHECK(contains(e.what(), "config key TRAIN.num_epoch: '3.7' is not an integer"));
    CHECK_FALSE(contains(e.what(), "3.7000000000000002"));
  }
  std::ofstream(path) << R"({"TRAIN": {"lr_encoder": 3.7, "lr_decoder": 0.123456789}, "MODEL": {"bn_momentum": 1e-4}})";
  const cli::Config c = cli::load_config(path, {});
  CHECK(c.TRAIN.lr_encoder == 3.7);
  CHECK(c.get("TRAIN.lr_encoder") == "3.7");
  CHECK(c.get("TRAIN.lr_decoder") == "0.123456789");  // was "0.123457" (6 digits): not the value
  CHECK(c.get("MODEL.bn_momentum") == "0.0001");
  CHECK(contains(c.to_json().dump(), "\"lr_encoder\":3.7,"));
  // A JSON integer too large for int64 is refused, not wrapped around.
  std::ofstream(path) << R"({"TRAIN": {"num_epoch": 18446744073709551615}})";
  CHECK_THROWS_WITH_AS(cli::load_config(path, {}), doctest::Contains("'18446744073709551615' is not an integer"), Error);
}

TEST_CASE("segtrain train --help-keys and info --keys list every key with type and default; the hint points there") {
  const auto r = run_segtrain({"train", "--help-keys"});
  CAPTURE(r.output);
  REQUIRE(r.exit_code == 0);
  const cli::Config defaults;
  for (const cli::ConfigKeyInfo& k : cli::config_key_table()) {
    CAPTURE(k.key);
    CHECK(k.default_value == defaults.get(k.key));
    CHECK_FALSE(k.help.empty());
    // "  KEY   TYPE   DEFAULT   meaning" on one line
    const size_t at = r.output.find("\n  " + k.key + " ");
    REQUIRE(at != std::string::npos);
    const std::string line = r.output.substr(at + 1, r.output.find('\n', at + 1) - at - 1);
    CHECK(contains(line, " " + k.type + " "));
    CHECK(contains(line, k.default_value.empty() ? "''" : k.default_value));
  }
  CHECK(cli::config_key_table().size() == cli::Config::keys().size());
  CHECK(contains(r.output, "TRAIN.lr_encoder                 number        0.02"));
  CHECK(contains(r.output, "DATASET.imgSizes                 integer list  (300, 375, 450, 525, 600)"));
  const auto info = run_segtrain({"info", "--keys"});
  CHECK(info.exit_code == 0);
  CHECK(info.output == r.output);
  // The unknown-key hint names a command that really lists the keys.
  const auto bad = run_segtrain({"train", "--cfg", seg::test::config_file(), "TRAIN.lr_encodr", "0.1"});
  CHECK(bad.exit_code == 2);
  CHECK(contains(bad.output, "segtrain train --help-keys lists every key"));
  CHECK(contains(run_segtrain({"train", "--help"}).output, "--help-keys"));
}

TEST_CASE("unimplemented features are not listed as features (info, build summary, README)") {
  const auto r = run_segtrain({"info"});
  CAPTURE(r.output);
  REQUIRE(r.exit_code == 0);
  // cuDNN is an engine of the CUDA build (issue 15, kernels/cuda/engine.h): a build without CUDA says so.
  CHECK(contains(r.output, "cuDNN            no (CUDA builds only: the cuDNN convolution engine)"));
  // NCCL is the communicator of the CUDA build (core/comm_nccl.cpp); the simulator's serves the tests.
  CHECK(contains(r.output, seg::built_with_nccl() ? "NCCL             yes (segtrain train --gpus 0-1" : "NCCL             no (CUDA builds with libnccl only)"));
  CHECK(contains(r.output, seg::built_with_mpi() ? "MPI              yes (mpirun -np N segtrain train" : "MPI              no (install libopenmpi-dev"));
  // The README's sample of tools/build.sh prints exactly the summary lines cmake/SegOptions.cmake
  // prints for the two that do not exist, and the default build's cuDNN line.
  auto text = [](const std::string& rel) {
    std::ifstream in(std::string(SEG_SOURCE_DIR) + "/" + rel);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  const std::string options = text("cmake/SegOptions.cmake"), readme = text("README.md");
  CHECK(contains(options, "set(SEG_CUDNN_SUMMARY \"OFF\")"));
  CHECK(contains(readme, "    --   cuDNN             : OFF\n"));
  {
    // The README shows the default build of a machine without a GPU: NCCL's OFF line.
    const size_t at = options.find("message(STATUS \"  NCCL              : OFF");
    REQUIRE(at != std::string::npos);
    const size_t begin = options.find("\"  ", at) + 1, end = options.find("\")", at);
    const std::string line = options.substr(begin, end - begin);
    CHECK(contains(readme, "    -- " + line + "\n"));
  }
  // MPI is built (docs/distributed.md): the summary says ON with the launcher, as the README shows.
  CHECK(contains(options, "MPI               : ON (MPI ${MPI_CXX_VERSION}, ${MPIEXEC_EXECUTABLE}: mpirun -np N segtrain train ...)"));
  CHECK(contains(readme, "    --   MPI               : ON (MPI "));
}
