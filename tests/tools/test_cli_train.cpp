// The product end to end on a tiny generated dataset: train (loss falls), evaluate, predict, resume
// exactly, survive an interrupt. Slow suite (about a minute on 2 cores).
#include <doctest/doctest.h>

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "core/fileio.h"
#include "core/npy.h"
#include "core/safetensors.h"
#include "data/image_codec.h"
#include "tools/cli.h"
#include "tools/config.h"
#include "tools/evaluate.h"
#include "tools/model_setup.h"
#include "tools/run_setup.h"
#include "tools/trainer.h"
#include "tests/common/compare.h"
#include "tests/tools/cli_test_helpers.h"

using namespace seg;
using namespace seg::cli;
using seg::test::fresh_dir;
using seg::test::tiny_overrides;

namespace {
Config tiny_config(const std::string& dir, int epochs, int iters, std::vector<std::string> extra = {}) {
  auto o = tiny_overrides(dir, epochs, iters);
  o.insert(o.end(), extra.begin(), extra.end());
  return load_config(seg::test::config_file(), o);
}

bool same_file(const std::string& a, const std::string& b) { return read_file(a) == read_file(b); }
}  // namespace

TEST_CASE("train, evaluate and predict on a tiny generated dataset" * doctest::test_suite("slow")) {
  const std::string dir = fresh_dir("train");
  const Config cfg = tiny_config(dir, 2, 12);
  TrainRunOptions opt;
  opt.quiet = true;
  const TrainSummary s = run_training(cfg, CommonFlags{}, opt);
  CHECK(s.steps == 24);
  CHECK_FALSE(s.interrupted);
  MESSAGE("tiny training: loss ", s.first_loss, " -> ", s.last_loss);
  CHECK(s.last_loss < 0.8 * s.first_loss);
  for (const char* f : {"/config.json", "/encoder_epoch_1.safetensors", "/decoder_epoch_2.safetensors",
                        "/train_state.safetensors", "/history.csv", "/history.json", "/history.svg"})
    CHECK_MESSAGE(file_exists(dir + f), f);
  CHECK(read_file(dir + "/history.svg").size() > 500);

  // eval through the command (its printed report) and the library (the numbers).
  std::vector<std::string> argv = {"eval", "--cfg", seg::test::config_file(), "--checkpoint", "epoch_2.pth"};
  for (const auto& o : tiny_overrides(dir, 2, 12)) argv.push_back(o);
  const auto ev2 = seg::test::run_segtrain(argv);
  CAPTURE(ev2.output);
  REQUIRE(ev2.exit_code == 0);
  CHECK(ev2.output.find("Mean IoU: ") != std::string::npos);
  CHECK(ev2.output.find("class [9] kite") != std::string::npos);

  // predict: coloured panel, class-index PNG, NCHW probabilities.
  std::vector<std::string> pargs = {"predict", "--cfg", seg::test::config_file(), "--checkpoint", "epoch_2.pth",
                                    "--imgs", seg::test::tiny_dataset() + "/images/validation", "--out", dir + "/pred",
                                    "--npy"};
  for (const auto& o : tiny_overrides(dir, 2, 12)) pargs.push_back(o);
  const auto pr = seg::test::run_segtrain(pargs);
  CAPTURE(pr.output);
  REQUIRE(pr.exit_code == 0);
  CHECK(pr.output.find("Predictions in [") != std::string::npos);
  const std::string first = dir + "/pred/synth_val_00000001";
  const data::Image labels = data::load_label(first + "_labels.png");
  for (uint8_t v : labels.pixels) CHECK((v >= 1 && v <= 10));
  const Tensor probs = read_npy(first + "_probs.npy");
  REQUIRE(probs.dim() == 4);
  CHECK(probs.size(1) == 10);  // NCHW
  CHECK(probs.size(2) == labels.height);
  double sum = 0;
  for (int64_t k = 0; k < 10; ++k) sum += probs.data<float>()[k * probs.size(2) * probs.size(3)];
  SEG_CHECK_CLOSE(sum, 1.0, seg::test::Tolerance{1e-5, 0});  // a probability distribution at pixel (0, 0)
  CHECK(file_exists(first + ".png"));
}

TEST_CASE("--resume continues exactly: same weights as an uninterrupted run" * doctest::test_suite("slow")) {
  TrainRunOptions opt;
  opt.quiet = true;
  const std::string a = fresh_dir("resume_a"), b = fresh_dir("resume_b");
  run_training(tiny_config(a, 2, 8), CommonFlags{}, opt);
  TrainRunOptions stop = opt;
  stop.stop_after = 5;  // mid-epoch
  const TrainSummary first = run_training(tiny_config(b, 2, 8), CommonFlags{}, stop);
  CHECK(first.interrupted);
  CHECK(first.steps == 5);
  TrainRunOptions resume = opt;
  resume.resume = true;
  const TrainSummary rest = run_training(tiny_config(b, 2, 8), CommonFlags{}, resume);
  CHECK(rest.steps == 16);
  CHECK(same_file(a + "/encoder_epoch_2.safetensors", b + "/encoder_epoch_2.safetensors"));
  CHECK(same_file(a + "/decoder_epoch_2.safetensors", b + "/decoder_epoch_2.safetensors"));
  // Resuming with a different architecture is refused, naming the key.
  TrainRunOptions again = resume;
  CHECK_THROWS_WITH_AS(run_training(tiny_config(b, 3, 8, {"MODEL.arch_decoder", "c1", "MODEL.fc_dim", "320"}),
                                    CommonFlags{}, again),
                       doctest::Contains("MODEL.arch_decoder"), Error);
}

TEST_CASE("mixed precision resume is exact too (O2: master weights and loss scale in the state)" *
          doctest::test_suite("slow")) {
  TrainRunOptions opt;
  opt.quiet = true;
  const std::string a = fresh_dir("amp_a"), b = fresh_dir("amp_b");
  run_training(tiny_config(a, 1, 8, {"TRAIN.amp", "O2"}), CommonFlags{}, opt);
  TrainRunOptions stop = opt;
  stop.stop_after = 3;
  run_training(tiny_config(b, 1, 8, {"TRAIN.amp", "O2"}), CommonFlags{}, stop);
  TrainRunOptions resume = opt;
  resume.resume = true;
  run_training(tiny_config(b, 1, 8, {"TRAIN.amp", "O2"}), CommonFlags{}, resume);
  CHECK(same_file(a + "/encoder_epoch_1.safetensors", b + "/encoder_epoch_1.safetensors"));
  const SafetensorsFile sa = read_safetensors(a + "/train_state.safetensors");
  const SafetensorsFile sb = read_safetensors(b + "/train_state.safetensors");
  CHECK(sa.metadata.at("loss_scale") == sb.metadata.at("loss_scale"));
}

TEST_CASE("Ctrl-C (SIGINT) saves a resumable state and exits with 130" * doctest::test_suite("slow")) {
  const std::string dir = fresh_dir("sigint");
  std::vector<std::string> args = {"train", "--cfg", seg::test::config_file(), "--threads", "1"};
  for (const auto& o : tiny_overrides(dir, 50, 20)) args.push_back(o);  // long enough to be interrupted
  std::fflush(stdout);
  std::fflush(stderr);
  int out[2];
  REQUIRE(::pipe(out) == 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(out[1], STDERR_FILENO);
    ::close(out[0]);
    ::close(out[1]);
    std::vector<char*> argv;
    const std::string bin = seg::test::segtrain_binary();
    argv.push_back(const_cast<char*>(bin.c_str()));
    for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(bin.c_str(), argv.data());
    std::_Exit(127);
  }
  ::close(out[1]);
  // Event-driven: interrupt as soon as the first training step has been logged ("Epoch: [1][0/20]",
  // printed and flushed after step 1), however long start-up takes (sanitizers, a loaded machine).
  // The deadline only stops a hung child; the child's output is drained until it exits so it never
  // blocks on a full pipe.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(10);
  std::string output;
  bool interrupted = false;
  for (;;) {
    pollfd pfd{out[0], POLLIN, 0};
    const int ready = ::poll(&pfd, 1, 200);
    if (ready > 0) {
      char buf[4096];
      const ssize_t n = ::read(out[0], buf, sizeof buf);
      if (n <= 0) break;  // EOF: the child exited
      output.append(buf, static_cast<size_t>(n));
    }
    if (!interrupted && output.find("Epoch: [1][0/20]") != std::string::npos) {
      ::kill(pid, SIGINT);
      interrupted = true;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      break;
    }
  }
  ::close(out[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  CAPTURE(output);
  REQUIRE_MESSAGE(interrupted, "no training step was logged within 10 minutes");
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 130);
  REQUIRE(file_exists(dir + "/train_state.safetensors"));
  const SafetensorsFile st = read_safetensors(dir + "/train_state.safetensors");
  const int64_t step = std::stoll(st.metadata.at("step"));
  CHECK(step > 0);
  CHECK(step < 1000);
  // No temporary files left behind.
  for (const auto& e : std::filesystem::directory_iterator(dir))
    CHECK(e.path().filename().string().find(".tmp.") == std::string::npos);
}

TEST_CASE("half-precision inference (eval/predict --amp) agrees with fp32; --amp-stats prints the table" *
          doctest::test_suite("slow")) {
  const std::string dir = fresh_dir("amp_infer");
  TrainRunOptions opt;
  opt.quiet = true;
  run_training(tiny_config(dir, 1, 10), CommonFlags{}, opt);
  const Config cfg = tiny_config(dir, 1, 10);
  auto fp32 = load_model_for_inference(cfg, CheckpointChoice{"epoch_1.pth", "", "", true}, "", true);
  data::ValDataset val(dataset_options(cfg, CommonFlags{}));
  const data::EvalSample sample = val.get(0);
  const Tensor ref = multiscale_probabilities(*fp32, sample, make_amp_config("O0"));
  for (const char* level : {"O1", "O2", "O3"}) {
    for (const char* dtype : {"f16", "bf16"}) {
      CAPTURE(level);
      CAPTURE(dtype);
      const Config c = tiny_config(dir, 1, 10, {"TRAIN.amp", level, "TRAIN.amp_dtype", dtype});
      auto model = load_model_for_inference(c, CheckpointChoice{"epoch_1.pth", "", "", true}, "", true);
      const Tensor probs = multiscale_probabilities(*model, sample, amp_config(c));
      const auto a = probs.to_vector<float>(), b = ref.to_vector<float>();
      int64_t same_argmax = 0;
      const int64_t K = probs.size(-1), P = probs.numel() / K;
      for (int64_t p = 0; p < P; ++p) {
        int64_t ia = 0, ib = 0;
        for (int64_t k = 1; k < K; ++k) {
          if (a[p * K + k] > a[p * K + ia]) ia = k;
          if (b[p * K + k] > b[p * K + ib]) ib = k;
        }
        same_argmax += ia == ib;
      }
      // Probabilities within half precision's reach; the predicted class almost everywhere the same.
      SEG_CHECK_CLOSE(a, b, seg::test::Tolerance{std::string(dtype) == "bf16" ? 0.08 : 0.02, 0});
      CHECK(static_cast<double>(same_argmax) / static_cast<double>(P) > 0.97);
    }
  }
  std::vector<std::string> args = {"train", "--cfg", seg::test::config_file(), "--amp", "O1", "--amp-stats"};
  for (const auto& o : tiny_overrides(fresh_dir("amp_stats"), 1, 2)) args.push_back(o);
  const auto r = seg::test::run_segtrain(args);
  CAPTURE(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("fp16 range of the true gradients") != std::string::npos);
  CHECK(r.output.find("features.0.0.weight") != std::string::npos);
}
