// NCCL across processes in the simulator (kernels/sim/nccl_spanning.cpp): each case starts several
// sim_nccl_peer processes (tests/sim/nccl_peer), one rank each, as mpirun starts one process per GPU
// and core/comm_nccl.cpp's make_nccl_communicator joins them with rank 0's unique id. The peers
// compare every result with the host's rank-order arithmetic themselves; here the exit codes and
// what they printed are checked, and that the directory the ranks met in is gone afterwards.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

struct Peers {
  std::vector<int> exit_codes;
  std::vector<std::string> outputs;
  std::string dir;  // TMPDIR of the peers: the id file and the meeting directory go there
};

// Starts ranks 0..started-1 of an `nranks`-rank communicator, all at once, and waits for them.
Peers run_peers(const std::string& mode, int nranks, int started, const std::string& env = "") {
  char templ[] = "/tmp/seg-test-nccl-processes-XXXXXX";
  REQUIRE(mkdtemp(templ) != nullptr);
  Peers peers;
  peers.dir = templ;
  std::vector<FILE*> pipes;
  for (int r = 0; r < started; ++r) {
    const std::string cmd = env + " TMPDIR=" + peers.dir + " " + SEG_SIM_NCCL_PEER + " " + mode + " " +
                            std::to_string(r) + " " + std::to_string(nranks) + " " + peers.dir + "/id 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    REQUIRE(p != nullptr);
    pipes.push_back(p);
  }
  for (FILE* p : pipes) {
    std::string out;
    char buf[4096];
    while (size_t got = std::fread(buf, 1, sizeof buf, p)) out.append(buf, got);
    const int status = pclose(p);
    peers.exit_codes.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    peers.outputs.push_back(out);
  }
  return peers;
}

// The meeting directories (seg-sim-nccl-*) left in the peers' TMPDIR.
int meeting_dirs_left(const std::string& dir) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().filename().string().rfind("seg-sim-nccl-", 0) == 0) ++n;
  return n;
}

}  // namespace

TEST_CASE("NCCL across processes: every collective of 3 ranks in 3 processes equals the rank-order arithmetic") {
  const Peers peers = run_peers("collectives", 3, 3);
  for (int r = 0; r < 3; ++r) {
    CAPTURE(r);
    INFO(peers.outputs[r]);
    CHECK(peers.exit_codes[r] == 0);
    CHECK(contains(peers.outputs[r], "rank " + std::to_string(r) + ": collectives ok"));
  }
  CHECK(meeting_dirs_left(peers.dir) == 0);  // the last rank to leave removed it
  std::filesystem::remove_all(peers.dir);
}

TEST_CASE("NCCL across processes: mismatched calls, an aborted peer and a peer that never joins fail with a message") {
  SUBCASE("rank 1 all-reduces one element more: both ranks' syncs report the mismatch") {
    const Peers peers = run_peers("mismatch", 2, 2);
    for (int r = 0; r < 2; ++r) {
      INFO(peers.outputs[r]);
      CHECK(peers.exit_codes[r] == 0);
      CHECK(contains(peers.outputs[r], "failed as expected"));
      CHECK(contains(peers.outputs[r], "ncclAllReduce(count=5"));
    }
    std::filesystem::remove_all(peers.dir);
  }
  SUBCASE("rank 1 aborts: rank 0's all-reduce fails at once, naming it") {
    const Peers peers = run_peers("abort", 2, 2, "SEG_SIM_NCCL_TIMEOUT_S=60");
    INFO(peers.outputs[0]);
    INFO(peers.outputs[1]);
    CHECK(peers.exit_codes[0] == 0);
    CHECK(peers.exit_codes[1] == 0);
    CHECK(contains(peers.outputs[0], "rank 1 called ncclCommAbort"));
    std::filesystem::remove_all(peers.dir);
  }
  SUBCASE("rank 2 of 3 is never started: ncclCommInitRank fails after the timeout, naming it") {
    // 4 s: both started ranks must have joined before either gives up (processes start with some
    // skew on a loaded machine), so that each names rank 2 alone.
    const Peers peers = run_peers("join", 3, 2, "SEG_SIM_NCCL_TIMEOUT_S=4");
    for (int r = 0; r < 2; ++r) {
      INFO(peers.outputs[r]);
      CHECK(peers.exit_codes[r] == 0);
      CHECK(contains(peers.outputs[r], "rank(s) 2 never joined"));
    }
    CHECK(meeting_dirs_left(peers.dir) == 0);
    std::filesystem::remove_all(peers.dir);
  }
}
