// Prints the detection tables of docs/cuda-simulator.md for this build: every broken kernel under
// each schedule, and every broken piece of host code (streams, devices, graphs, host access) under
// the stream modes, each in its own child process. Not part of the normal run (it takes a while):
//   build/bin/test_sim --no-skip -tc="sim: detection table"
// Run it in the default, ASan and TSan builds for the three groups of columns.
#include <algorithm>
#include <cstdio>

#include "tests/sim/bug_catalogue.h"
#include "tests/sim/sim_test_util.h"

namespace {

std::string describe(const simtest::BugRun& r) {
  if (r.caught_by("[run_child: killed after 300 s]")) return "hang (killed)";
  if (!r.outcome.empty()) {
    if (r.caught_by("ThreadSanitizer: data race")) return "TSan race";
    if (r.outcome == "correct" && r.exit_code != 0) return "exit " + std::to_string(r.exit_code);
    return r.outcome;
  }
  // The simulator's own SIGSEGV explanations first, then sanitizer reports.
  for (const char* report : {"host code dereferenced device memory", "dynamic shared memory given at launch",
                             "a use after free", "device allocation", "stack overflow:", "heap-buffer-overflow",
                             "heap-use-after-free", "use-after-poison", "out of bounds", "SEGV on unknown address"})
    if (r.caught_by(report)) return std::string("crash: ") + report;
  return r.signal ? "killed by signal " + std::to_string(r.signal) : "exit " + std::to_string(r.exit_code);
}

}  // namespace

TEST_CASE("sim: detection table" * doctest::skip()) {
  struct Column {
    const char* name;
    std::vector<std::string> env;
  };
  std::vector<Column> columns = {{"rr", {}}, {"reverse", {"SEG_SIM_SCHEDULE=reverse"}}};
  for (int seed = 1; seed <= 5; ++seed)
    columns.push_back({"", {"SEG_SIM_SCHEDULE=random", "SEG_SIM_SEED=" + std::to_string(seed)}});
  columns.push_back({"rr, 2 workers", {"SEG_SIM_WORKERS=2"}});
  columns.push_back({"rr, non-strict", {"SEG_SIM_STRICT=0"}});
  std::printf(
      "| bug | rr | reverse | random (seeds 1-5) | rr, 2 workers | rr, SEG_SIM_STRICT=0 "
      "|\n|---|---|---|---|---|---|\n");
  for (const simtest::Bug& bug : simtest::bug_catalogue()) {
    if (bug.group != simtest::BugGroup::kernel) continue;
    std::vector<std::string> cells, random;
    for (const Column& c : columns) {
      const std::string d = describe(simtest::run_bug(bug.id, c.env));
      if (c.name[0] == '\0')
        random.push_back(d);
      else
        cells.push_back(d);
    }
    // The five random runs as "5/5 <outcome>" when they agree, else listed.
    std::string random_text;
    if (std::count(random.begin(), random.end(), random[0]) == 5) {
      random_text = "5/5 " + random[0];
    } else {
      for (const std::string& d : random) random_text += (random_text.empty() ? "" : ", ") + d;
    }
    std::printf("| %s | %s | %s | %s | %s | %s |\n", bug.description, cells[0].c_str(), cells[1].c_str(),
                random_text.c_str(), cells[2].c_str(), cells[3].c_str());
    std::fflush(stdout);
  }

  // Host code: the stream modes.
  const std::vector<std::string> no_races = {"SEG_SIM_RACE_CHECK=0"};
  std::printf(
      "\n| host-side bug | default | RACE_CHECK=0 | random order, RACE_CHECK=0 (seeds 1-5) | SYNC_LAUNCH=1 | "
      "HOST_FAULTS=0 |\n|---|---|---|---|---|---|\n");
  for (const simtest::Bug& bug : simtest::bug_catalogue()) {
    if (bug.group != simtest::BugGroup::host) continue;
    std::vector<std::string> random;
    for (int seed = 1; seed <= 5; ++seed)
      random.push_back(describe(simtest::run_bug(
          bug.id, {"SEG_SIM_STREAM_ORDER=random", "SEG_SIM_SEED=" + std::to_string(seed), "SEG_SIM_RACE_CHECK=0"})));
    std::string random_text;
    for (const std::string& d : {std::string("wrong"), std::string("correct")}) {
      const auto k = std::count(random.begin(), random.end(), d);
      if (k) random_text += (random_text.empty() ? "" : ", ") + std::to_string(k) + "/5 " + d;
    }
    for (const std::string& d : random)
      if (d != "wrong" && d != "correct" && random_text.find(d) == std::string::npos)
        random_text += (random_text.empty() ? "" : ", ") + d;
    std::printf("| %s | %s | %s | %s | %s | %s |\n", bug.description, describe(simtest::run_bug(bug.id)).c_str(),
                describe(simtest::run_bug(bug.id, no_races)).c_str(), random_text.c_str(),
                describe(simtest::run_bug(bug.id, {"SEG_SIM_SYNC_LAUNCH=1"})).c_str(),
                describe(simtest::run_bug(bug.id, {"SEG_SIM_HOST_FAULTS=0"})).c_str());
    std::fflush(stdout);
  }
}
