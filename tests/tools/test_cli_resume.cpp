// --resume through the segtrain binary, in the sequence a user reported (issue 17): a finished run
// resumed must keep its step (it was reset to 0), resuming it with a larger TRAIN.num_epoch must
// continue at the saved step on the longer schedule without touching what exists, "trained N steps"
// counts this invocation only, and a config that changes the run is refused (or, with --force,
// warned about once per key).
#include <doctest/doctest.h>

#include <cmath>
#include <sstream>

#include "core/fileio.h"
#include "core/safetensors.h"
#include "tests/tools/cli_test_helpers.h"

using namespace seg;
using seg::test::fresh_dir;
using seg::test::run_segtrain;
using seg::test::tiny_overrides;

namespace {
std::vector<std::string> train_args(const std::string& dir, int epochs, int iters, std::vector<std::string> extra = {}) {
  std::vector<std::string> a = {"train", "--cfg", seg::test::config_file(), "--threads", "2"};
  a.insert(a.end(), extra.begin(), extra.end());
  for (const auto& o : tiny_overrides(dir, epochs, iters)) a.push_back(o);
  return a;
}
// Overrides after the tiny ones win (later KEY VALUE pairs override earlier ones).
std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}
int64_t state_step(const std::string& dir) {
  return std::stoll(read_safetensors(dir + "/train_state.safetensors").metadata.at("step"));
}
bool contains(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

// history.csv rows: iteration -> lr_encoder.
std::vector<std::pair<int64_t, double>> history_lr(const std::string& dir) {
  const std::vector<char> bytes = read_file(dir + "/history.csv");
  std::istringstream in(std::string(bytes.begin(), bytes.end()));
  std::string line;
  std::getline(in, line);  // header
  std::vector<std::pair<int64_t, double>> rows;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string cell; std::getline(ss, cell, ',');) f.push_back(cell);
    REQUIRE(f.size() >= 5);
    rows.emplace_back(std::stoll(f[0]), std::stod(f[4]));
  }
  return rows;
}
}  // namespace

TEST_CASE("a finished run resumed keeps its step; a larger TRAIN.num_epoch extends it in place" *
          doctest::test_suite("slow")) {
  const std::string dir = fresh_dir("resume_finished");
  const auto first = run_segtrain(train_args(dir, 1, 2));
  CAPTURE(first.output);
  REQUIRE(first.exit_code == 0);
  CHECK(contains(first.output, "trained 2 steps (steps 1-2 of 2)"));
  REQUIRE(state_step(dir) == 2);
  const std::vector<char> epoch1 = read_file(dir + "/encoder_epoch_1.safetensors");
  const std::vector<char> state1 = read_file(dir + "/train_state.safetensors");

  // The reported bug: this printed "trained 0 steps" and wrote step 0 into the state.
  const auto again = run_segtrain(with(train_args(dir, 1, 2), {"--resume"}));
  CAPTURE(again.output);
  REQUIRE(again.exit_code == 0);
  CHECK(contains(again.output, "nothing to train: the run in " + dir + " is at step 2 of 2"));
  CHECK_FALSE(contains(again.output, "trained 0 steps"));
  CHECK(state_step(dir) == 2);
  CHECK(read_file(dir + "/train_state.safetensors") == state1);  // not even rewritten

  // Extending: continues at step 2 of 4 with the 4-step schedule's learning rate; epoch 1's files
  // and history rows stay as they are.
  const auto longer = run_segtrain(with(train_args(dir, 2, 2), {"--resume"}));
  CAPTURE(longer.output);
  REQUIRE(longer.exit_code == 0);
  CHECK(contains(longer.output, "resumed from " + dir + "/train_state.safetensors at step 2 of 4"));
  CHECK(contains(longer.output, "trained 2 steps (steps 3-4 of 4)"));
  CHECK(state_step(dir) == 4);
  CHECK(read_file(dir + "/encoder_epoch_1.safetensors") == epoch1);
  CHECK(file_exists(dir + "/encoder_epoch_2.safetensors"));
  const auto rows = history_lr(dir);
  std::vector<int64_t> iterations;
  for (const auto& r : rows) iterations.push_back(r.first);
  CHECK(iterations == std::vector<int64_t>{1, 2, 3, 4});  // disp_iter 4: the first and the last step of each epoch
  // Step index 2 (the 3rd step) of a 4-step poly schedule: 0.02 * (1 - 2/4)^0.9 (tiny_overrides: lr 0.02).
  const double expected = 0.02 * std::pow(1.0 - 2.0 / 4.0, 0.9);
  CHECK(rows[2].second == doctest::Approx(expected).epsilon(1e-6));
  CHECK(std::abs(rows[2].second - 0.02) > 1e-3);  // not the schedule's first value (the reported restart)
}

TEST_CASE("\"trained N steps\" counts the steps of this invocation only" * doctest::test_suite("slow")) {
  const std::string dir = fresh_dir("resume_count");
  const auto first = run_segtrain(train_args(dir, 2, 3, {"--stop-after", "2"}));
  CAPTURE(first.output);
  REQUIRE(first.exit_code == 0);
  CHECK(contains(first.output, "trained 2 steps (steps 1-2 of 6)"));
  const auto rest = run_segtrain(with(train_args(dir, 2, 3), {"--resume"}));
  CAPTURE(rest.output);
  REQUIRE(rest.exit_code == 0);
  CHECK(contains(rest.output, "trained 4 steps (steps 3-6 of 6)"));
  CHECK(state_step(dir) == 6);
}

TEST_CASE("--resume refuses a config that changes the run, naming each key with both values; --force warns" *
          doctest::test_suite("slow")) {
  const std::string dir = fresh_dir("resume_changed");
  REQUIRE(run_segtrain(train_args(dir, 1, 2)).exit_code == 0);
  const std::vector<char> state = read_file(dir + "/train_state.safetensors");

  const auto changed = run_segtrain(with(train_args(dir, 2, 2, {"--amp", "O1"}),
                                         {"--resume", "TRAIN.batch_size_per_gpu", "3", "TRAIN.lr_encoder", "0.01",
                                          "DATASET.imgSizes", "(80,)", "MODEL.arch_decoder", "c1", "DATASET.num_class", "12"}));
  CAPTURE(changed.output);
  CHECK(changed.exit_code == 2);
  CHECK(contains(changed.output, "usage error: --resume with a config that changes the run in 6 keys:"));
  for (const char* line : {"MODEL.arch_decoder: c1_deepsup (the run) -> c1 (now)", "DATASET.num_class: 10 (the run) -> 12 (now)",
                           "TRAIN.batch_size_per_gpu: 2 (the run) -> 3 (now)", "TRAIN.lr_encoder: 0.02 (the run) -> 0.01 (now)",
                           "DATASET.imgSizes: (64) (the run) -> (80) (now)", "TRAIN.amp: O0 (the run) -> O1 (now)"})
    CHECK_MESSAGE(contains(changed.output, line), line);
  CHECK(contains(changed.output, "--force"));
  CHECK(read_file(dir + "/train_state.safetensors") == state);  // nothing written

  // --force: one warning line per difference, then training goes on from the saved step.
  const auto forced = run_segtrain(with(train_args(dir, 2, 2), {"--resume", "--force", "TRAIN.lr_encoder", "0.01",
                                                                 "TRAIN.batch_size_per_gpu", "3"}));
  CAPTURE(forced.output);
  CHECK(forced.exit_code == 0);
  CHECK(contains(forced.output, "segtrain: warning: --resume --force: TRAIN.lr_encoder changed from 0.02 (the run) to 0.01"));
  CHECK(contains(forced.output, "segtrain: warning: --resume --force: TRAIN.batch_size_per_gpu changed from 2 (the run) to 3"));
  CHECK(contains(forced.output, "trained 2 steps (steps 3-4 of 4)"));
  CHECK(state_step(dir) == 4);
  // The state now records the new values: resuming with them needs no --force.
  const auto after = run_segtrain(with(train_args(dir, 2, 2), {"--resume", "TRAIN.lr_encoder", "0.01",
                                                                "TRAIN.batch_size_per_gpu", "3"}));
  CAPTURE(after.output);
  CHECK(after.exit_code == 0);
  CHECK(contains(after.output, "nothing to train"));
  // --force alone is a usage error.
  CHECK(run_segtrain(with(train_args(fresh_dir("force_alone"), 1, 2), {"--force"})).exit_code == 2);
}
