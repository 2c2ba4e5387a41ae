// Helpers for the CLI tests: a tiny synthetic dataset shared by the tests of one process, temporary
// run folders, and running the segtrain binary as a child process.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "data/synth_dataset.h"
#include "tests/common/scratch.h"

namespace seg::test {

// A small dataset (generated once per process): 24 training and 6 validation images, 64-96 px.
inline const std::string& tiny_dataset() {
  static const std::string dir = [] {
    data::SynthOptions o;
    o.out_dir = scratch_path("tiny_dataset");
    o.num_train = 24;
    o.num_val = 6;
    o.min_long_side = 64;
    o.max_long_side = 96;
    o.threads = 2;
    data::generate_synthetic_dataset(o);
    return o.out_dir;
  }();
  return dir;
}

inline std::string fresh_dir(const std::string& name) {
  const std::string dir = scratch_path("run_" + name);
  std::filesystem::remove_all(dir);
  return dir;
}

// Config overrides for a tiny MobileNetV2dilated-C1_deepsup run on tiny_dataset().
inline std::vector<std::string> tiny_overrides(const std::string& run_dir, int epochs, int iters) {
  const std::string d = tiny_dataset();
  return {"DIR", run_dir, "DATASET.root_dataset", d, "DATASET.list_train", d + "/training.odgt", "DATASET.list_val",
          d + "/validation.odgt", "DATASET.imgSizes", "(64,)", "DATASET.imgMaxSize", "96", "TRAIN.batch_size_per_gpu",
          "2", "TRAIN.num_epoch", std::to_string(epochs), "TRAIN.epoch_iters", std::to_string(iters), "TRAIN.disp_iter",
          "4", "TRAIN.workers", "2", "TRAIN.lr_encoder", "0.02", "TRAIN.lr_decoder", "0.02"};
}

inline std::string config_file() { return std::string(SEG_SOURCE_DIR) + "/configs/synth-mobilenetv2dilated-c1_deepsup.json"; }
// The CLI under test: segtrain, or segtrain_sim (the CLI on the simulated GPU) where a suite
// defines SEG_CLI_BINARY_NAME (tests/cuda/cli).
#ifndef SEG_CLI_BINARY_NAME
#define SEG_CLI_BINARY_NAME "segtrain"
#endif
inline std::string segtrain_binary() { return std::string(SEG_BINARY_DIR) + "/bin/" SEG_CLI_BINARY_NAME; }

struct RunResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

// Starts `program args...` (no shell) with stdout and stderr into the file `output`; `in_child`
// runs in the child before exec (a resource limit, say). The one fork/exec of the CLI tests.
inline pid_t spawn_program(const std::string& program, const std::vector<std::string>& args, const std::string& output,
                           const std::function<void()>& in_child = {}) {
  std::fflush(stdout);  // else the child flushes the parent's buffered output into its own file
  std::fflush(stderr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (!std::freopen(output.c_str(), "w", stdout)) std::_Exit(126);
    ::dup2(STDOUT_FILENO, STDERR_FILENO);
    if (in_child) in_child();
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(program.c_str()));
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
#ifdef SEG_SANITIZE_BUILD
    // ASan's allocator aborts on a huge request by default; segtrain's own out-of-memory handling
    // (tested below) needs the request to fail with null, as the system allocator does.
    ::setenv("ASAN_OPTIONS", "allocator_may_return_null=1", 0);
    ::setenv("TSAN_OPTIONS", "allocator_may_return_null=1", 0);  // the TSan build of the CLI suite too
#endif
    ::execv(program.c_str(), argv.data());
    std::_Exit(127);
  }
  return pid;
}

// Runs the segtrain binary with args (no shell), capturing its output.
inline RunResult run_segtrain(const std::vector<std::string>& args) {
  const std::string out = scratch_path("segtrain_output.txt");
  const pid_t pid = spawn_program(segtrain_binary(), args, out);
  int status = 0;
  ::waitpid(pid, &status, 0);
  RunResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  FILE* f = std::fopen(out.c_str(), "r");
  if (f) {
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) r.output.append(buf, n);
    std::fclose(f);
  }
  std::remove(out.c_str());
#ifdef SEG_SANITIZE_BUILD
  // Drop the sanitizer's own "==pid==WARNING: ... failed to allocate" lines: the tests check what
  // segtrain prints.
  std::string kept;
  for (size_t at = 0; at < r.output.size();) {
    size_t end = r.output.find('\n', at);
    end = end == std::string::npos ? r.output.size() : end + 1;
    if (r.output.compare(at, 2, "==") != 0) kept.append(r.output, at, end - at);
    at = end;
  }
  r.output = kept;
#endif
  return r;
}

}  // namespace seg::test
