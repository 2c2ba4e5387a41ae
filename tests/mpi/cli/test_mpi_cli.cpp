// `mpirun -np 2 segtrain ...` end to end (label mpi). This suite runs as one ordinary process and
// starts mpirun itself (tests/mpi/test_mpi.cpp is the one that runs as two ranks).
//
//   * 20 steps on 2 ranks (per-rank BatchNorm) train exactly what one process trains with
//     TRAIN.sub_batches_per_rank 2: the same losses and bit-identical parameters; under O2 fp16 the
//     same losses and the same loss-scale skips;
//   * SyncBN on 2 ranks trains, and rank 0 alone writes the run's files; the start-up line lists
//     every rank's host and device; under O2 fp16 it trains with finite losses, its first loss
//     within f16 rounding of the f32 SyncBN run's;
//   * a SyncBN run resumed on another number of ranks (or without SyncBN) is refused, naming both;
//   * predict on 2 ranks writes one process's files byte for byte, and rank 0 alone prints;
//   * a run stopped on 2 ranks resumes on 1 process (same sub-batches per step) and ends where the
//     uninterrupted 2-rank run ends;
//   * eval on 2 ranks reports what one process reports;
//   * ranks started with different configs stop with the difference named; a rank killed with
//     SIGKILL ends the job (mpirun names the rank) within seconds, not a hang, and the last
//     checkpoint stays loadable; a rank that stops answering (SIGSTOP) ends the job after
//     --comm-timeout; Ctrl-C on mpirun stops both ranks after one step with a resumable state.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "core/comm.h"
#include "core/safetensors.h"
#include "tests/common/compare_tensor.h"
#include "tests/tools/cli_test_helpers.h"

using namespace seg;
using namespace seg::test;
namespace fs = std::filesystem;

std::string seg_test_skip_reason() {
  if (!built_with_mpi()) return "built without MPI (-DSEG_MPI=OFF or no libopenmpi-dev)";
  return "";
}

namespace {

// mpirun's own flags: root in containers, 2 ranks on a 2-core machine whatever its slot count.
std::vector<std::string> mpirun_args(int ranks) {
  return {"--allow-run-as-root", "--oversubscribe", "-np", std::to_string(ranks)};
}

struct Started {
  pid_t pid = -1;
  std::string output_path;
};

// Starts `program args...` with stdout+stderr to a file named after `name`.
Started start(const std::string& program, const std::vector<std::string>& args, const std::string& name) {
  Started s;
  s.output_path = scratch_path(name + "_output.txt");
  s.pid = spawn_program(program, args, s.output_path);
  return s;
}

// Waits at most `seconds`; a process still running then is killed and reported as exit code -1.
RunResult finish(const Started& s, double seconds) {
  RunResult r;
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (;;) {
    const pid_t done = ::waitpid(s.pid, &status, WNOHANG);
    if (done == s.pid) {
      r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      break;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(s.pid, SIGKILL);
      ::waitpid(s.pid, &status, 0);
      r.exit_code = -1;  // a hang
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::ifstream in(s.output_path);
  std::stringstream ss;
  ss << in.rdbuf();
  r.output = ss.str();
  return r;
}

// mpirun's arguments for `ranks` ranks of segtrain with `segtrain_args`.
std::vector<std::string> mpi_command(int ranks, const std::vector<std::string>& segtrain_args) {
  std::vector<std::string> args = mpirun_args(ranks);
  args.push_back(segtrain_binary());
  args.insert(args.end(), segtrain_args.begin(), segtrain_args.end());
  return args;
}

RunResult run_mpi(int ranks, const std::vector<std::string>& segtrain_args, double seconds = 300) {
  return finish(start(SEG_MPIEXEC, mpi_command(ranks, segtrain_args), "mpirun"), seconds);
}

// `segtrain train` for `epochs` epochs of `iters` steps with the suite's tiny overrides and `extra`
// (flags or KEY VALUE pairs) after them; the failure tests stop such a run long before its end.
std::vector<std::string> long_train_args(const std::string& dir, int epochs, int iters,
                                         const std::vector<std::string>& extra = {}) {
  std::vector<std::string> a = {"train", "--cfg", config_file(), "--threads", "1"};
  for (const std::string& o : tiny_overrides(dir, epochs, iters)) a.push_back(o);
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// One epoch of `steps` steps, each logged, one loader worker.
std::vector<std::string> train_args(const std::string& dir, int steps, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> more = {"TRAIN.disp_iter", "1", "TRAIN.workers", "1"};
  more.insert(more.end(), extra.begin(), extra.end());
  return long_train_args(dir, 1, steps, more);
}

// One column of history.csv (one row per logged step): 3 = loss, 9 = loss scale.
std::vector<double> history_column(const std::string& dir, int column) {
  std::ifstream in(dir + "/history.csv");
  std::vector<double> out;
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::stringstream ss(line);
    std::string cell;
    for (int c = 0; c < column && std::getline(ss, cell, ','); ++c) {
    }
    out.push_back(std::stod(cell));
  }
  return out;
}
std::vector<double> losses(const std::string& dir) { return history_column(dir, 3); }

// How often `what` occurs in `out`.
size_t count(const std::string& out, const std::string& what) {
  size_t n = 0;
  for (size_t at = 0; (at = out.find(what, at)) != std::string::npos; ++at) ++n;
  return n;
}

// This machine's name, as the ranks print it in the start-up line.
std::string this_host() {
  char name[256] = {};
  return ::gethostname(name, sizeof name - 1) == 0 ? std::string(name) : std::string("?");
}

// Every regular file under `dir` by relative path, with its bytes.
std::map<std::string, std::string> files_under(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    std::ifstream in(e.path(), std::ios::binary);
    out[fs::relative(e.path(), dir).string()] = std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  return out;
}

// Parameters of a checkpoint file (running statistics and counters left out).
std::vector<std::pair<std::string, Tensor>> parameters_of(const std::string& path) {
  std::vector<std::pair<std::string, Tensor>> out;
  for (const auto& [name, t] : read_safetensors(path).tensors)
    if (name.find("running") == std::string::npos && name.find("num_batches") == std::string::npos) out.emplace_back(name, t);
  return out;
}

// Waits (up to 120 s) until the run in `dir` has written its first checkpoint, then returns the pid
// of its rank `rank` (found by the OMPI_COMM_WORLD_RANK of its environment), or -1.
pid_t wait_for_rank(const std::string& dir, int rank) {
  const std::string wanted = "OMPI_COMM_WORLD_RANK=" + std::to_string(rank) + '\0';
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (!fs::exists(dir + "/train_state.safetensors")) continue;
    for (const auto& e : fs::directory_iterator("/proc")) {
      const std::string name = e.path().filename().string();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      std::ifstream env(e.path() / "environ", std::ios::binary);
      const std::string text((std::istreambuf_iterator<char>(env)), std::istreambuf_iterator<char>());
      std::ifstream cmd(e.path() / "cmdline", std::ios::binary);
      const std::string cmdline((std::istreambuf_iterator<char>(cmd)), std::istreambuf_iterator<char>());
      if (text.find(wanted) != std::string::npos && cmdline.find(dir) != std::string::npos &&
          cmdline.find("mpirun") == std::string::npos)
        return static_cast<pid_t>(std::stol(name));
    }
  }
  return -1;
}

}  // namespace

TEST_CASE("20 steps on 2 MPI ranks train exactly what one process trains with 2 sub-batches per step") {
  const std::string two = fresh_dir("mpi_two"), one = fresh_dir("mpi_one");
  const RunResult r2 = run_mpi(2, train_args(two, 20, {"TRAIN.sync_bn", "false"}));
  CHECK_MESSAGE(r2.exit_code == 0, r2.output);
  CHECK(r2.output.find("data parallel: MPI (Open MPI") != std::string::npos);
  CHECK(r2.output.find("2 ranks x 1 sub-batch(es) of 2 images") != std::string::npos);
  const RunResult r1 = run_segtrain(train_args(one, 20, {"TRAIN.sub_batches_per_rank", "2"}));
  CHECK_MESSAGE(r1.exit_code == 0, r1.output);
  const std::vector<double> l2 = losses(two), l1 = losses(one);
  CHECK(l2.size() == 20);
  // Exact, not close: (g0 + g1) / 2 of the all-reduce and g0/2 + g1/2 of the accumulation are the
  // same f32 numbers (halving is exact, so both round the one sum g0 + g1), and everything else is
  // the same computation on the same sub-batches with the same thread count.
  CHECK(l2 == l1);
  CHECK(l2.back() < l2.front());
  for (const char* part : {"encoder", "decoder"}) {
    const auto p2 = parameters_of(two + "/" + part + "_epoch_1.safetensors");
    const auto p1 = parameters_of(one + "/" + part + "_epoch_1.safetensors");
    REQUIRE(p2.size() == p1.size());
    int64_t differing = 0;
    for (size_t i = 0; i < p2.size(); ++i) {
      const Comparison c = compare(p2[i].second, p1[i].second, Tolerance{0, 0});
      if (!c.ok()) {
        ++differing;
        CHECK_MESSAGE(c.ok(), (p2[i].first + ": " + c.str()));
      }
    }
    CHECK(differing == 0);
  }
}

TEST_CASE("O2 fp16 on 2 ranks: the same losses and loss-scale skips as one process with 2 sub-batches per step") {
  // Pre-divided gradients (core/data_parallel.h): each rank's half gradients are as large as one
  // process's micro-batch gradients, so the dynamic loss scale overflows at the same steps.
  // Both wires: half gradients sent as f16 (the default) and widened to f32. Either way a rank's
  // sum of two half gradients is rounded once to half, as one process's accumulation is.
  const std::string one = fresh_dir("mpi_o2_one");
  const RunResult r1 = run_segtrain(train_args(one, 10, {"--amp", "O2", "TRAIN.sub_batches_per_rank", "2"}));
  CHECK_MESSAGE(r1.exit_code == 0, r1.output);
  for (const char* wire : {"storage", "f32"}) {
    CAPTURE(wire);
    const std::string two = fresh_dir(std::string("mpi_o2_two_") + wire);
    const RunResult r2 =
        run_mpi(2, train_args(two, 10, {"--amp", "O2", "TRAIN.sync_bn", "false", "TRAIN.allreduce_dtype", wire}));
    CHECK_MESSAGE(r2.exit_code == 0, r2.output);
    CHECK(r2.output.find(std::string(wire) == "f32" ? "MB, f32) all-reduced" : "MB, half and f32) all-reduced") !=
          std::string::npos);
    CHECK(losses(two).size() == 10);
    CHECK(losses(two) == losses(one));
    const std::vector<double> scales = history_column(two, 9);
    CHECK(scales == history_column(one, 9));
    CHECK(scales.front() == 65536.0);
    CHECK(scales.back() < 65536.0);  // at least one overflow skipped on both ranks alike
  }
}

TEST_CASE("O2 fp16 with SyncBN on 2 ranks trains with finite losses; its first loss is the f32 SyncBN run's within 4 f16 roundings") {
  // The seed's users saw fp16 SyncBN hang across GPUs. Here: 6 steps under O2 with SyncBN (the
  // default), with the dynamic loss scale skipping its first overflows on both ranks alike.
  //
  // No one-process run reproduces SyncBN: one process with TRAIN.sub_batches_per_rank 2 normalises
  // each 2-image sub-batch alone, while SyncBN normalises the 4 images of both ranks together
  // (measured on this suite's data: first losses 3.674965 and 3.658923, 4.4e-3 apart relative), so
  // the reference is the same 2-rank SyncBN run in f32 (O0). Its first loss comes from the same
  // weights and images; under O2 the forward stores every activation in f16, so the two differ by
  // accumulated f16 roundings. The bound is 4 units of f16 roundoff relative, 4 x 2^-11 = 2^-9
  // (measured: 1.05e-4 = 0.21 units for SyncBN; 4.6e-4 = 0.94 units between O2 and f32 with
  // per-sub-batch BatchNorm, the same model one process). BatchNorm per rank under O2 instead of
  // SyncBN is 3.9e-3 away (measured with the trainer's SyncBN switched off under O2): outside the
  // bound. Later steps are not compared: after the first
  // update, f16 and f32 training drift apart by several percent within a few steps (measured up to
  // 7% by step 4, with a static scale too), whichever BatchNorm runs.
  const std::string half = fresh_dir("mpi_o2_syncbn"), full = fresh_dir("mpi_o2_syncbn_f32");
  const RunResult r = run_mpi(2, train_args(half, 6, {"--amp", "O2"}));
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  CHECK(r.output.find("BatchNorm synchronised over the ranks") != std::string::npos);
  CHECK(r.output.find("MB, half and f32) all-reduced") != std::string::npos);
  const std::vector<double> l = losses(half), scales = history_column(half, 9);
  REQUIRE(l.size() == 6);
  for (double v : l) CHECK((std::isfinite(v) && v > 0));
  CHECK(scales.front() == 65536.0);
  for (double v : scales) CHECK((std::isfinite(v) && v >= 1));
  const RunResult f = run_mpi(2, train_args(full, 6, {"--stop-after", "1"}));
  REQUIRE_MESSAGE(f.exit_code == 0, f.output);
  REQUIRE(losses(full).size() == 1);
  SEG_CHECK_CLOSE(l.front(), losses(full).front(), Tolerance{0, 0x1p-9});
}

TEST_CASE("SyncBN on 2 ranks trains; rank 0 alone writes the files, and eval on 2 ranks reports what one process does") {
  const std::string dir = fresh_dir("mpi_syncbn");
  const RunResult r = run_mpi(2, train_args(dir, 6));
  CHECK_MESSAGE(r.exit_code == 0, r.output);
  CHECK(r.output.find("BatchNorm synchronised over the ranks") != std::string::npos);
  // Every rank's host and device, gathered, in one line (not only rank 0's, as describe() says).
  CHECK_MESSAGE(count(r.output, "ranks: 0 on " + this_host() + " (cpu), 1 on " + this_host() + " (cpu)\n") == 1, r.output);
  // One rank speaks: the start-up line once, one log line per step.
  CHECK(count(r.output, "segtrain train: ") == 1);
  CHECK(losses(dir).size() == 6);
  CHECK(fs::exists(dir + "/encoder_epoch_1.safetensors"));
  std::ifstream cfg(dir + "/config.json");
  std::stringstream ss;
  ss << cfg.rdbuf();
  CHECK(ss.str().find("\"ranks\": 2") != std::string::npos);
  CHECK(ss.str().find("\"effective_batch_size\": 4") != std::string::npos);

  std::vector<std::string> eval = {"eval", "--cfg", config_file(), "--threads", "1", "VAL.checkpoint", "epoch_1.pth"};
  for (const std::string& o : tiny_overrides(dir, 1, 6)) eval.push_back(o);
  const RunResult e1 = run_segtrain(eval), e2 = run_mpi(2, eval);
  CHECK_MESSAGE(e1.exit_code == 0, e1.output);
  CHECK_MESSAGE(e2.exit_code == 0, e2.output);
  auto summary = [](const std::string& out) {
    const size_t at = out.find("Mean IoU:");
    return at == std::string::npos ? std::string("(none)") : out.substr(at, out.find(", Inference", at) - at);
  };
  CHECK(summary(e2.output) == summary(e1.output));
  CHECK(summary(e1.output) != "(none)");
  CHECK(e2.output.find("the ranks split the list") != std::string::npos);
  // rank 0 alone says which checkpoint files it loaded
  CHECK(count(e1.output, "encoder_epoch_1.safetensors: ") == 1);
  CHECK(count(e2.output, "encoder_epoch_1.safetensors: ") == 1);
}

TEST_CASE("a run stopped on 2 ranks resumes on 1 process with 2 sub-batches per step and ends as the 2-rank run") {
  const std::string whole = fresh_dir("mpi_whole"), split = fresh_dir("mpi_split");
  const std::vector<std::string> extra = {"TRAIN.sync_bn", "false"};
  const RunResult a = run_mpi(2, train_args(whole, 12, extra));
  CHECK_MESSAGE(a.exit_code == 0, a.output);
  std::vector<std::string> first = train_args(split, 12, extra);
  first.insert(first.end(), {"--stop-after", "5"});
  const RunResult b = run_mpi(2, first);
  CHECK_MESSAGE(b.exit_code == 0, b.output);
  std::vector<std::string> rest = train_args(split, 12, {"TRAIN.sync_bn", "false", "TRAIN.sub_batches_per_rank", "2", "--resume"});
  const RunResult c = run_segtrain(rest);
  CHECK_MESSAGE(c.exit_code == 0, c.output);
  CHECK(losses(split) == losses(whole));
  // One process with 1 sub-batch per step would see other data: refused, with the reason.
  std::vector<std::string> wrong = train_args(split, 12, {"TRAIN.num_epoch", "2", "--resume"});
  const RunResult d = run_segtrain(wrong);
  CHECK(d.exit_code == 2);
  CHECK(d.output.find("sub-batches per step (MPI ranks x TRAIN.sub_batches_per_rank): 2 (the run) -> 1 (now)") !=
        std::string::npos);
}

TEST_CASE("a SyncBN run resumed on another number of ranks, or without SyncBN, is refused naming both counts; --force warns") {
  // SyncBN normalises over both ranks' sub-batches (4 images); one process with 2 sub-batches per
  // step normalises each sub-batch alone (2 images): the same data, another training.
  const std::string dir = fresh_dir("mpi_syncbn_resume");
  const RunResult a = run_mpi(2, train_args(dir, 4, {"--stop-after", "2"}));
  CHECK_MESSAGE(a.exit_code == 0, a.output);
  const RunResult one = run_segtrain(train_args(dir, 4, {"TRAIN.sub_batches_per_rank", "2", "--resume"}));
  CHECK(one.exit_code == 2);
  CHECK_MESSAGE(one.output.find("BatchNorm ranks (SyncBN normalises over every rank's sub-batch; 1 = each sub-batch alone): "
                                "2 (TRAIN.sync_bn true, 2 ranks) (the run) -> 1 (TRAIN.sync_bn true, 1 rank) (now)") !=
                    std::string::npos,
                one.output);
  CHECK(one.output.find("--force") != std::string::npos);
  CHECK(one.output.find("sub-batches per step") == std::string::npos);  // that number is the same
  // The same 2 ranks with SyncBN switched off: refused too.
  const RunResult off = run_mpi(2, train_args(dir, 4, {"TRAIN.sync_bn", "false", "--resume"}), 120);
  CHECK(off.exit_code == 2);
  CHECK_MESSAGE(off.output.find("2 (TRAIN.sync_bn true, 2 ranks) (the run) -> 1 (TRAIN.sync_bn false, 2 ranks) (now)") !=
                    std::string::npos,
                off.output);
  // --force: one warning naming both, and training goes on from the saved step.
  const RunResult forced = run_segtrain(train_args(dir, 4, {"TRAIN.sub_batches_per_rank", "2", "--resume", "--force"}));
  CHECK_MESSAGE(forced.exit_code == 0, forced.output);
  CHECK(forced.output.find("warning: --resume --force: BatchNorm ranks") != std::string::npos);
  CHECK(forced.output.find("changed from 2 (TRAIN.sync_bn true, 2 ranks) (the run) to 1 (TRAIN.sync_bn true, 1 rank)") !=
        std::string::npos);
  CHECK(forced.output.find("resumed from") != std::string::npos);
  CHECK(losses(dir).size() == 4);
}

TEST_CASE("predict on 2 ranks writes the files one process writes, byte for byte, and rank 0 alone prints them in order") {
  // A model to predict with (2 steps, one process), and 5 images: rank 0 takes 3, rank 1 takes 2.
  const std::string dir = fresh_dir("mpi_predict");
  const RunResult t = run_segtrain(long_train_args(dir, 1, 2));
  REQUIRE_MESSAGE(t.exit_code == 0, t.output);
  const std::string images = dir + "/images";
  fs::create_directories(images);
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(tiny_dataset() + "/images/validation")) names.push_back(e.path().string());
  std::sort(names.begin(), names.end());
  REQUIRE(names.size() >= 5);
  for (size_t i = 0; i < 5; ++i) fs::copy_file(names[i], images + "/" + fs::path(names[i]).filename().string());
  auto predict = [&](const std::string& out) {
    std::vector<std::string> a = {"predict", "--cfg", config_file(), "--threads", "1", "--checkpoint", "epoch_1.pth",
                                  "--imgs", images, "--out", out, "--npy"};
    for (const std::string& o : tiny_overrides(dir, 1, 2)) a.push_back(o);
    return a;
  };
  const RunResult p1 = run_segtrain(predict(dir + "/pred_one"));
  // --tag-output: mpirun starts each line with its rank's tag, "[job,rank]<stdout>:".
  std::vector<std::string> tagged = mpirun_args(2);
  tagged.push_back("--tag-output");
  tagged.push_back(segtrain_binary());
  for (const std::string& a : predict(dir + "/pred_two")) tagged.push_back(a);
  const RunResult p2_tagged = finish(start(SEG_MPIEXEC, tagged, "predict"), 120);
  REQUIRE_MESSAGE(p1.exit_code == 0, p1.output);
  REQUIRE_MESSAGE(p2_tagged.exit_code == 0, p2_tagged.output);
  // Only rank 0 prints: every line carries rank 0's tag. Untagged, the lines are the output.
  RunResult p2 = p2_tagged;
  p2.output.clear();
  int64_t lines = 0, other_ranks = 0;
  std::stringstream in(p2_tagged.output);
  for (std::string line; std::getline(in, line);) {
    const size_t tag_end = line.find(">:");
    const bool rank0 = line.rfind("[", 0) == 0 && line.find(",0]<std") != std::string::npos && tag_end != std::string::npos;
    if (!rank0) {
      ++other_ranks;
      MESSAGE("a line not from rank 0: " << line);
    }
    p2.output += (tag_end == std::string::npos ? line : line.substr(tag_end + 2)) + "\n";
    ++lines;
  }
  CHECK(lines > 5);
  CHECK(other_ranks == 0);
  // The same files with the same bytes: 5 images x (panel, class indices, probabilities).
  const auto one = files_under(dir + "/pred_one"), two = files_under(dir + "/pred_two");
  CHECK(one.size() == 15);
  CHECK(two.size() == one.size());
  for (const auto& [name, bytes] : one) {
    CAPTURE(name);
    const auto it = two.find(name);
    REQUIRE(it != two.end());
    CHECK(it->second == bytes);
  }
  // Printed once, by rank 0, in the images' order: what one process prints, from the first image's
  // lines to the closing line.
  auto predictions = [](const std::string& out) {
    const size_t at = out.find("Predictions in ["), end = out.find("results in ");
    return at == std::string::npos || end == std::string::npos || end < at ? std::string("(none)") : out.substr(at, end - at);
  };
  CHECK(predictions(p2.output) == predictions(p1.output));
  CHECK(predictions(p1.output) != "(none)");
  CHECK(count(p2.output, "Predictions in [") == 5);
  CHECK(count(p2.output, "results in " + dir + "/pred_two\n") == 1);
  CHECK(count(p2.output, "encoder_epoch_1.safetensors: ") == 1);  // which checkpoint it loaded: rank 0 alone
}

TEST_CASE("ranks started with different configs stop at once, naming the key and both values") {
  const std::string dir = fresh_dir("mpi_mismatch");
  std::vector<std::string> args = mpirun_args(1);
  args.push_back(segtrain_binary());
  for (const std::string& a : train_args(dir, 4)) args.push_back(a);
  args.push_back(":");
  for (const std::string& a : mpirun_args(1)) if (a != "--allow-run-as-root" && a != "--oversubscribe") args.push_back(a);
  args.push_back(segtrain_binary());
  for (const std::string& a : train_args(dir, 4, {"TRAIN.lr_encoder", "0.05"})) args.push_back(a);
  const RunResult r = finish(start(SEG_MPIEXEC, args, "mismatch"), 120);
  CHECK_MESSAGE(r.exit_code == 2, r.output);
  CHECK(r.output.find("rank 1 of 2 started with a different run than rank 0; rank 0: 'TRAIN.lr_encoder = 0.02', "
                      "rank 1: 'TRAIN.lr_encoder = 0.05'") != std::string::npos);
  CHECK_FALSE(fs::exists(dir + "/train_state.safetensors"));
}

TEST_CASE("a rank killed with SIGKILL ends the job within seconds, mpirun naming the rank; the checkpoint stays") {
  const std::string dir = fresh_dir("mpi_killed");
  // Epochs of 2 steps, so a complete checkpoint exists early; far more steps than it will run.
  const Started s = start(SEG_MPIEXEC, mpi_command(2, long_train_args(dir, 500, 2)), "killed");
  // Wait for the first checkpoint, then find rank 1 and kill it.
  const pid_t victim = wait_for_rank(dir, 1);
  REQUIRE_MESSAGE(victim > 0, "rank 1 of the run was not found");
  const auto killed_at = std::chrono::steady_clock::now();
  ::kill(victim, SIGKILL);
  const RunResult r = finish(s, 60);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count();
  CHECK_MESSAGE(r.exit_code != -1, "mpirun still ran 60 s after rank 1 was killed: a hang");
  CHECK(r.exit_code != 0);
  CHECK(r.output.find("rank 1") != std::string::npos);
  CHECK(r.output.find("exited on signal 9") != std::string::npos);
  MESSAGE("mpirun ended " << seconds << " s after rank 1 was killed");
  // The last complete checkpoint is intact: the run resumes from it (a short continuation).
  const RunResult again = run_mpi(2, long_train_args(dir, 500, 2, {"--resume", "--stop-after", "1"}), 120);
  CHECK_MESSAGE(again.exit_code == 0, again.output);
  CHECK(again.output.find("resumed from") != std::string::npos);
}

TEST_CASE("Ctrl-C on mpirun: the ranks stop after the same step and rank 0 saves a resumable state") {
  const std::string dir = fresh_dir("mpi_ctrl_c");
  const std::vector<std::string> train = long_train_args(dir, 100, 20, {"TRAIN.disp_iter", "1"});
  const Started s = start(SEG_MPIEXEC, mpi_command(2, train), "ctrl_c");
  // Wait until a few steps are logged (rank 0 prints one line per step), then interrupt mpirun.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::ifstream in(s.output_path);
    std::stringstream ss;
    ss << in.rdbuf();
    size_t lines = 0;
    for (size_t at = 0; (at = ss.str().find("Epoch: [1]", at)) != std::string::npos; ++at) ++lines;
    if (lines >= 3 || std::chrono::steady_clock::now() > deadline) break;
  }
  ::kill(s.pid, SIGINT);  // mpirun passes it on to the ranks as SIGTERM
  const RunResult r = finish(s, 60);
  CHECK_MESSAGE(r.exit_code != -1, "mpirun still ran 60 s after Ctrl-C: a hang");
  CHECK_MESSAGE(r.output.find("stopped by SIGTERM after step") != std::string::npos, r.output);
  CHECK(r.output.find("resumable state saved") != std::string::npos);
  std::vector<std::string> resume = train;
  resume.insert(resume.end(), {"--resume", "--stop-after", "1"});
  const RunResult again = run_mpi(2, resume, 120);
  CHECK_MESSAGE(again.exit_code == 0, again.output);
  CHECK(again.output.find("resumed from") != std::string::npos);
}

TEST_CASE("a rank that stops answering ends the job after --comm-timeout, the waiting rank naming the collective") {
  const std::string dir = fresh_dir("mpi_stalled");
  const Started s = start(SEG_MPIEXEC, mpi_command(2, long_train_args(dir, 500, 2, {"--comm-timeout", "3"})), "stalled");
  const pid_t victim = wait_for_rank(dir, 1);
  REQUIRE_MESSAGE(victim > 0, "rank 1 of the run was not found");
  ::kill(victim, SIGSTOP);  // alive but silent: rank 0 waits in its next collective
  const RunResult r = finish(s, 90);
  ::kill(victim, SIGKILL);  // in case mpirun left it behind
  CHECK_MESSAGE(r.exit_code != -1, "mpirun still ran 90 s after rank 1 stopped: the watchdog did not fire");
  CHECK(r.exit_code != 0);
  CHECK_MESSAGE(r.output.find("rank 0 of 2 waited") != std::string::npos, r.output);
  CHECK(r.output.find("--comm-timeout 3 s") != std::string::npos);
}

