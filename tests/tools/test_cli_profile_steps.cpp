// --profile-steps A-B of segtrain train and bench (tools/profile_steps.h) where there is no GPU: the
// value is checked as a usage error naming the flag, and on the CPU the flag does nothing and says
// so. What it does on a CUDA device (cudaProfilerStart/Stop around exactly those steps) is tested on
// the simulated GPU, tests/cuda/nvtx/test_nvtx.cpp.
#include <doctest/doctest.h>

#include "core/device.h"
#include "core/error.h"
#include "tests/tools/cli_test_helpers.h"
#include "tools/profile_steps.h"

using namespace seg;
using seg::test::run_segtrain;

namespace {
bool contains(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }
}  // namespace

TEST_CASE("--profile-steps: A-B and N parse; anything else is a usage error naming the flag and the text") {
  const cli::StepRange r = cli::parse_profile_steps("2-3");
  CHECK(r.first == 2);
  CHECK(r.last == 3);
  const cli::StepRange one = cli::parse_profile_steps("7");
  CHECK(one.first == 7);
  CHECK(one.last == 7);
  struct Bad {
    const char* text;
    const char* why;
  };
  for (const Bad& b : {Bad{"3-2", "ends before it starts"}, Bad{"0-2", "starts before step 1"},
                       Bad{"0", "starts before step 1"}, Bad{"abc", "is not a step range"}, Bad{"2-", "is not a step range"},
                       Bad{"-3", "is not a step range"}, Bad{"1-2-3", "is not a step range"}, Bad{"", "is not a step range"},
                       Bad{"+1-2", "is not a step range"}, Bad{"1.5-2", "is not a step range"},
                       Bad{"1-99999999999999999999", "is not a step range"}}) {
    CAPTURE(b.text);
    try {
      cli::parse_profile_steps(b.text);
      FAIL("accepted");
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::usage);
      CHECK(e.message().rfind(std::string("--profile-steps: '") + b.text + "' ", 0) == 0);
      CHECK(contains(e.message(), b.why));
      CHECK(e.context("key") == "--profile-steps");
      CHECK(contains(e.context("what to do"), "--profile-steps 10-12"));
    }
  }
}

TEST_CASE("--profile-steps on the command line: exit 2 naming the flag, before anything runs (train and bench)") {
  const std::string cfg = seg::test::config_file();
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"train", "--cfg", cfg, "--profile-steps", "5-2"},
        std::vector<std::string>{"bench", "--size", "32", "--profile-steps", "x"}}) {
    const auto r = run_segtrain(args);
    CAPTURE(args);
    CAPTURE(r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output.rfind("segtrain: usage error: --profile-steps: '", 0) == 0);
    CHECK(contains(r.output, "key: --profile-steps"));
  }
  // A flag without its value.
  const auto missing = run_segtrain({"train", "--cfg", cfg, "--profile-steps"});
  CHECK(missing.exit_code == 2);
  CHECK(contains(missing.output, "--profile-steps"));
  // Both commands document it, with its CPU behaviour.
  for (const char* cmd : {"train", "bench"}) {
    const auto help = run_segtrain({cmd, "--help"});
    CAPTURE(cmd);
    CHECK(help.exit_code == 0);
    CHECK(contains(help.output, "--profile-steps A-B"));
    CHECK(contains(help.output, "capture-range=cudaProfilerApi"));
    CHECK(contains(help.output, "does nothing and says so"));
  }
}

TEST_CASE("--profile-steps on the CPU: the run goes on and says the flag did nothing") {
  std::vector<std::string> lines;
  {
    cli::ProfileSteps p(cli::StepRange{1, 2}, Device::cpu(), [&](const std::string& l) { lines.push_back(l); });
    for (int64_t s = 1; s <= 3; ++s) {
      p.begin_step(s);
      CHECK_FALSE(p.capturing());
      p.end_step(s);
    }
    p.finish(1, 3);
  }
  REQUIRE(lines.size() == 1);  // said once, at the start
  CHECK(contains(lines[0], "--profile-steps 1-2: ignored on the CPU"));
  // No range, no words.
  lines.clear();
  {
    cli::ProfileSteps p(std::nullopt, Device::cpu(), [&](const std::string& l) { lines.push_back(l); });
    p.begin_step(1);
    p.end_step(1);
    p.finish(1, 1);
  }
  CHECK(lines.empty());

  // The commands: a one-step bench and a one-step training run on the CPU succeed and print the note.
  const auto bench = run_segtrain({"bench", "--device", "cpu", "--size", "32", "--batch", "1", "--steps", "1", "--warmup",
                                   "0", "--threads", "1", "--profile-steps", "1"});
  CAPTURE(bench.output);
  CHECK(bench.exit_code == 0);
  CHECK(contains(bench.output, "--profile-steps 1-1: ignored on the CPU"));
  const std::string dir = seg::test::fresh_dir("profile_steps_cpu");
  std::vector<std::string> args = {"train", "--cfg", seg::test::config_file(), "--device", "cpu", "--threads", "1",
                                   "--profile-steps", "1-1"};
  for (const std::string& o : seg::test::tiny_overrides(dir, 1, 1)) args.push_back(o);
  for (const char* o : {"DATASET.imgSizes", "(32,)", "DATASET.imgMaxSize", "48", "TRAIN.eval_every", "0"}) args.push_back(o);
  const auto train = run_segtrain(args);
  CAPTURE(train.output);
  CHECK(train.exit_code == 0);
  CHECK(contains(train.output, "--profile-steps 1-1: ignored on the CPU"));
  CHECK_FALSE(contains(train.output, "cudaProfilerStart before"));
}

TEST_CASE("cuda_profiler_start/stop need a CUDA device: a usage error naming the CPU") {
  for (auto call : {&cuda_profiler_start, &cuda_profiler_stop}) {
    try {
      call(Device::cpu());
      FAIL("returned");
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::usage);
      CHECK(contains(e.message(), "on cpu: the CUDA profiler API needs a CUDA device"));
    }
  }
}
