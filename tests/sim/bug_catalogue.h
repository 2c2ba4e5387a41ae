// The catalogue of deliberately broken kernels (broken_kernels.h): how to run each one and judge
// what happened. A bug is "caught" when the simulator reports a fault, when every-element
// comparison with the intended result fails, or (in a child process) when the process dies with a
// report from the simulator's SIGSEGV handler or a sanitizer.
#pragma once

#include <string>
#include <vector>

#include "kernels/sim/sim.h"

namespace simtest {

struct Outcome {
  // counted: the results are right and the performance counters show the planted waste.
  enum class Kind { correct, wrong, fault, error, counted } kind = Kind::correct;
  seg::sim::FaultKind fault_kind = seg::sim::FaultKind::trap;
  std::string error;  // Kind::error: the runtime's error name (a call refused, as on a GPU)
  size_t wrong_elements = 0;
  std::string message;  // the fault report, or the counters that show the waste
  std::string counted;  // what the counters show ("bank conflicts", "uncoalesced")
  // "correct", "wrong", "fault:<kind name>", "error:<cudaError name>" or "counted:<what>"
  std::string summary() const;
};

// Kernel bugs (broken_{barriers,memory,warp,wmma,ptx}.cu) and host-side bugs around correct kernels
// (broken_streams.cu: streams, devices, graphs, host access); the detection table has one table each.
enum class BugGroup { kernel, host };

struct Bug {
  const char* id;
  const char* description;
  Outcome (*run)();
  BugGroup group = BugGroup::kernel;
};

const std::vector<Bug>& bug_catalogue();
const Bug* find_bug(const std::string& id);

// Runs bug `id` in a child process (test case "child: run bug") with the given SEG_SIM_*
// environment. The child prints "seg-sim-outcome: <summary>" unless it dies first.
struct BugRun {
  std::string outcome;  // the summary, or "" when the child died
  int exit_code = -1;
  int signal = 0;
  std::string output;
  bool caught_by(const std::string& text) const { return output.find(text) != std::string::npos; }
};
BugRun run_bug(const std::string& id, const std::vector<std::string>& env = {});

}  // namespace simtest
