#include "tests/sim/sim_test_util.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

extern char** environ;

namespace simtest {

seg::sim::Options with_schedule(seg::sim::Schedule s, uint64_t seed, int workers) {
  seg::sim::Options o;
  o.schedule = s;
  o.seed = seed;
  o.workers = workers;
  return o;
}

std::vector<Config> all_configs() {
  using seg::sim::Schedule;
  std::vector<Config> configs = {
      {"rr", with_schedule(Schedule::round_robin)},
      {"reverse", with_schedule(Schedule::reverse)},
      {"random seed 1", with_schedule(Schedule::random, 1)},
      {"random seed 2", with_schedule(Schedule::random, 2)},
      {"rr, 2 workers", with_schedule(Schedule::round_robin, 1, 2)},
  };
  seg::sim::Options uc = with_schedule(Schedule::round_robin);
  uc.use_ucontext = true;
  configs.push_back({"rr, ucontext switch", uc});
  return configs;
}

ChildResult run_child(const std::string& name, const std::vector<std::string>& env) {
  // The child's environment: ours without any SEG_SIM_* variable, plus `env`.
  std::vector<std::string> vars;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "SEG_SIM_", 8) != 0) vars.emplace_back(*e);
  for (const std::string& v : env) vars.push_back(v);
  std::vector<char*> envp;
  for (std::string& v : vars) envp.push_back(v.data());
  envp.push_back(nullptr);

  std::string filter = "--test-case=" + name;
  std::string no_skip = "--no-skip";
  std::string exe = "/proc/self/exe";
  char* argv[] = {exe.data(), no_skip.data(), filter.data(), nullptr};

  int out[2];
  REQUIRE(pipe(out) == 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, out[1], 2);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv, envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  REQUIRE(rc == 0);
  ChildResult r;
  char buf[4096];
  ssize_t n;
  while ((n = read(out[0], buf, sizeof buf)) > 0) r.output.append(buf, static_cast<size_t>(n));
  close(out[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  return r;
}

}  // namespace simtest
