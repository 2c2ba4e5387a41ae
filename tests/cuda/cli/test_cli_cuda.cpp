// The segtrain CLI with `--device cuda:0`, end to end, on the simulated GPU: segtrain_sim is the
// shipped CLI's code linked against the simulated CUDA backend (tools/CMakeLists.txt), so train,
// eval, predict and bench run every CUDA code path of the product here, in CI, without a GPU, and
// are compared with the same commands on the CPU.
//
// What is compared, and why these bounds:
// - train: the first step's loss is a forward pass of identical weights on identical batches (the
//   loader is deterministic, dropout draws the CPU's mask), so the two devices differ only in the
//   f32 summation order of convolutions, BatchNorm moments and the loss. Later steps are not
//   compared element by element: one pre-activation that rounding moves across ReLU6's kink changes
//   the gradients upstream of it by about 1% (tests/cuda/test_model_steps.cpp, docs/cuda-backend.md).
// - predict: the probabilities of the CPU-trained checkpoint, again one forward pass, strict f32
//   (--no-tf32) and with TF32 (the default), whose inputs keep 10 mantissa bits. Measured: within
//   6e-8 and 1.9e-5 of the CPU's; the bounds are 1e-6 (16 f32 roundings of 1) and 2e-4 (about 0.4
//   of one TF32 rounding of 1, 2^-11).
// - eval: mean IoU and accuracy are argmax counts: equal unless a pixel's two best classes are
//   closer than the devices' rounding difference.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/fileio.h"
#include "core/npy.h"
#include "core/safetensors.h"
#include "tests/common/compare_tensor.h"
#include "tests/common/requirement.h"
#include "tests/tools/cli_test_helpers.h"

using seg::test::run_segtrain;

namespace {

std::vector<std::string> with_overrides(std::vector<std::string> args, const std::string& dir) {
  for (const std::string& o : seg::test::tiny_overrides(dir, 1, 2)) args.push_back(o);
  // Every step in the history (one step per row), and no extra threads (the simulator has its own).
  for (const char* o : {"TRAIN.disp_iter", "1", "TRAIN.workers", "1"}) args.push_back(o);
  return args;
}

seg::test::RunResult train(const std::string& dir, const std::vector<std::string>& device_flags) {
  std::vector<std::string> args = {"train", "--cfg", seg::test::config_file()};
  args.insert(args.end(), device_flags.begin(), device_flags.end());
  return run_segtrain(with_overrides(args, dir));
}

std::vector<double> history_losses(const std::string& dir) {
  std::ifstream f(dir + "/history.json");
  const nlohmann::json j = nlohmann::json::parse(f);
  std::vector<double> out;
  for (const auto& row : j.at("train")) out.push_back(row.at("loss").get<double>());
  return out;
}

// Two simulated GPUs for the segtrain_sim runs of a case (it reads SEG_SIM_DEVICES at start-up).
struct TwoSimulatedGpus {
  TwoSimulatedGpus() { ::setenv("SEG_SIM_DEVICES", "2", 1); }
  ~TwoSimulatedGpus() { ::unsetenv("SEG_SIM_DEVICES"); }
};

// "Mean IoU: 0.1234, Accuracy: 56.78%" from eval's report.
std::pair<double, double> eval_numbers(const std::string& output) {
  const size_t at = output.find("Mean IoU: ");
  REQUIRE(at != std::string::npos);
  double miou = -1, acc = -1;
  REQUIRE(std::sscanf(output.c_str() + at, "Mean IoU: %lf, Accuracy: %lf%%", &miou, &acc) == 2);
  return {miou, acc};
}

// predict's output folders of two runs on the same 3 images: the same 9 files (NAME.png,
// NAME_labels.png and NAME_probs.npy for each image), byte for byte.
void expect_same_prediction_files(const std::string& want_dir, const std::string& got_dir) {
  namespace fs = std::filesystem;
  int files = 0;
  for (const auto& e : fs::directory_iterator(want_dir)) {
    const std::string name = e.path().filename().string();
    CAPTURE(name);
    REQUIRE(fs::exists(got_dir + "/" + name));
    CHECK(seg::read_file(got_dir + "/" + name) == seg::read_file(e.path().string()));
    ++files;
  }
  CHECK(files == 9);
  CHECK(std::distance(fs::directory_iterator(got_dir), fs::directory_iterator()) == 9);
}

}  // namespace

TEST_CASE("segtrain train, eval, predict and bench with --device cuda:0 on the simulated GPU match the CPU") {
  const std::string cpu_dir = seg::test::fresh_dir("cli_cuda_cpu"), gpu_dir = seg::test::fresh_dir("cli_cuda_gpu");

  const auto on_cpu = train(cpu_dir, {"--device", "cpu"});
  INFO(on_cpu.output);
  REQUIRE(on_cpu.exit_code == 0);
  const auto on_gpu = train(gpu_dir, {"--device", "cuda:0", "--no-tf32"});
  INFO(on_gpu.output);
  REQUIRE(on_gpu.exit_code == 0);
  // The start-up lines: the device, and which kernels f32 runs on.
  CHECK(on_gpu.output.find("cuda:0: engine own") != std::string::npos);
  CHECK(on_gpu.output.find("strict f32 (TF32 off)") != std::string::npos);
  CHECK(on_gpu.output.find("images on cuda:0") != std::string::npos);

  const std::vector<double> cpu_losses = history_losses(cpu_dir), gpu_losses = history_losses(gpu_dir);
  REQUIRE(cpu_losses.size() == 2);
  REQUIRE(gpu_losses.size() == 2);
  MESSAGE("first-step loss: cpu ", cpu_losses[0], ", cuda:0 ", gpu_losses[0], " (relative difference ",
          std::abs(gpu_losses[0] - cpu_losses[0]) / cpu_losses[0], "); second: ", cpu_losses[1], " / ", gpu_losses[1]);
  // history.json keeps the loss as a double; the bound is 16 f32 roundings (2^-24 each), relative.
  SEG_CHECK_CLOSE(std::vector<double>{gpu_losses[0]}, std::vector<double>{cpu_losses[0]},
                  seg::test::Tolerance{0, 16.0 / (1 << 24)});
  CHECK(std::isfinite(gpu_losses[1]));
  // The checkpoints were read back from the device and written like the CPU's.
  for (const char* f : {"/encoder_epoch_1.safetensors", "/decoder_epoch_1.safetensors", "/train_state.safetensors"}) {
    CAPTURE(f);
    const seg::SafetensorsFile a = seg::read_safetensors(cpu_dir + f), b = seg::read_safetensors(gpu_dir + f);
    CHECK(a.tensors.size() == b.tensors.size());
    for (const auto& [name, t] : b.tensors) {
      CAPTURE(name);
      const seg::Tensor* want = a.find(name);
      REQUIRE(want != nullptr);
      CHECK(t.shape() == want->shape());
      CHECK(t.dtype() == want->dtype());
      CHECK(t.device().is_cpu());
    }
  }

  // predict and eval of the CPU-trained checkpoint on both devices.
  const std::string image = seg::test::tiny_dataset() + "/images/validation/synth_val_00000001.jpg";
  auto predict = [&](const std::string& out, const std::vector<std::string>& device_flags) {
    std::vector<std::string> args = {"predict", "--cfg", seg::test::config_file(), "--checkpoint", "epoch_1.pth",
                                     "--imgs", image, "--out", out, "--npy"};
    args.insert(args.end(), device_flags.begin(), device_flags.end());
    const auto r = run_segtrain(with_overrides(args, cpu_dir));
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    return seg::read_npy(out + "/synth_val_00000001_probs.npy");
  };
  const seg::Tensor p_cpu = predict(cpu_dir + "/pred_cpu", {"--device", "cpu"});
  const seg::Tensor p_strict = predict(cpu_dir + "/pred_strict", {"--device", "cuda:0", "--no-tf32"});
  const seg::Tensor p_tf32 = predict(cpu_dir + "/pred_tf32", {"--device", "cuda:0"});
  const seg::test::Comparison strict = seg::test::compare(p_strict, p_cpu, {1e-6, 0});
  const seg::test::Comparison tf32 = seg::test::compare(p_tf32, p_cpu, {2e-4, 0});
  MESSAGE("predict probabilities vs the CPU: strict f32 ", strict.str(), "; TF32 ", tf32.str());
  CHECK_MESSAGE(strict.ok(), strict.str());
  CHECK_MESSAGE(tf32.ok(), tf32.str());
  // TF32 really ran: its difference from the CPU is far above strict f32's.
  CHECK(tf32.max_abs > 10 * strict.max_abs);

  auto eval = [&](const std::vector<std::string>& device_flags) {
    std::vector<std::string> args = {"eval", "--cfg", seg::test::config_file(), "--checkpoint", "epoch_1.pth",
                                     "--max-images", "2"};
    args.insert(args.end(), device_flags.begin(), device_flags.end());
    const auto r = run_segtrain(with_overrides(args, cpu_dir));
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    return eval_numbers(r.output);
  };
  const auto e_cpu = eval({"--device", "cpu"}), e_gpu = eval({"--device", "cuda:0", "--no-tf32"});
  MESSAGE("eval: cpu mIoU ", e_cpu.first, " acc ", e_cpu.second, "%; cuda:0 mIoU ", e_gpu.first, " acc ", e_gpu.second, "%");
  CHECK(e_gpu.first == e_cpu.first);
  CHECK(e_gpu.second == e_cpu.second);

  // bench: forward, backward and optimizer phases timed with CUDA events on the device's stream.
  const auto b = run_segtrain({"bench", "--cfg", seg::test::config_file(), "--device", "cuda:0", "--size", "32",
                               "--batch", "1", "--steps", "1", "--warmup", "0"});
  INFO(b.output);
  REQUIRE(b.exit_code == 0);
  CHECK(b.output.find("per step: forward") != std::string::npos);
  CHECK(b.output.find("cuda:0") != std::string::npos);
}

// --detect-anomaly and --amp-stats on cuda:0: the anomaly detector reads every op's outputs and
// gradients and the range statistics count f16 flushes and overflows, both from device tensors.
// Under O1 at the default scale (65536) both steps of this run overflow in backward, on the CPU and
// on cuda:0 alike; the first op to make an inf must be the same op of the same module on both (the
// counts of inf values may differ: f16 rounding of the two devices' f32 accumulations).
TEST_CASE("segtrain train --device cuda:0 --detect-anomaly --amp-stats names the same op as the CPU") {
  auto run = [](const std::string& dir, const char* device) {
    std::vector<std::string> args = {"train", "--cfg", seg::test::config_file(), "--device", device, "--no-tf32",
                                     "--amp", "O1", "--detect-anomaly", "--amp-stats"};
    args = with_overrides(args, dir);
    for (const char* o : {"DATASET.imgSizes", "(32,)", "DATASET.imgMaxSize", "48"}) args.push_back(o);
    const auto r = run_segtrain(args);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(r.output.find("fp16 range of the true gradients") != std::string::npos);
    CHECK(r.output.find("f16 range of the activations") != std::string::npos);
    CHECK(r.output.find("trained 2 steps") != std::string::npos);
    return r.output;
  };
  // "anomaly: step N skipped: backward OP (MODULE) made": each step's line up to the counts.
  auto anomalies = [](const std::string& out) {
    std::vector<std::string> lines;
    for (size_t at = out.find("anomaly: step "); at != std::string::npos; at = out.find("anomaly: step ", at + 1))
      lines.push_back(out.substr(at, out.find(" made ", at) - at));
    return lines;
  };
  const std::string cpu = run(seg::test::fresh_dir("cli_cuda_anomaly_cpu"), "cpu");
  const std::string gpu = run(seg::test::fresh_dir("cli_cuda_anomaly_gpu"), "cuda:0");
  const std::vector<std::string> on_cpu = anomalies(cpu), on_gpu = anomalies(gpu);
  for (const std::string& l : on_gpu) MESSAGE("cuda:0: ", l);
  REQUIRE(on_cpu.size() == 2);
  CHECK(on_gpu == on_cpu);
}

// --engine / TRAIN.engine: the simulated build has only the project's kernels. Asking for a library
// engine is a device error (exit 4) naming the engine, the setting and why; auto runs (its measured
// table is empty, so it runs own everywhere) and says so; --deterministic is named in the line.
TEST_CASE("segtrain_sim: --engine cudnn/cublaslt are device errors naming the setting; auto and --deterministic run") {
  const std::vector<std::string> tiny = {"--size", "32", "--batch", "1", "--steps", "1", "--warmup", "0"};
  auto bench = [&](std::vector<std::string> args) {
    args.insert(args.begin(), "bench");
    args.insert(args.end(), tiny.begin(), tiny.end());
    return run_segtrain(args);
  };
  const auto cudnn = bench({"--device", "cuda:0", "--engine", "cudnn"});
  INFO(cudnn.output);
  CHECK(cudnn.exit_code == 4);
  CHECK(cudnn.output.find("engine 'cudnn' is not available") != std::string::npos);
  CHECK(cudnn.output.find("--engine") != std::string::npos);
  const auto lt = bench({"--cfg", seg::test::config_file(), "--device", "cuda:0", "TRAIN.engine", "cublaslt"});
  INFO(lt.output);
  CHECK(lt.exit_code == 4);
  CHECK(lt.output.find("engine 'cublaslt' is not available") != std::string::npos);
  CHECK(lt.output.find("TRAIN.engine") != std::string::npos);
  // On the CPU the engine has no effect, so a library engine is not an error there.
  const auto on_cpu = bench({"--device", "cpu", "--engine", "cudnn"});
  INFO(on_cpu.output);
  CHECK(on_cpu.exit_code == 0);
  const auto automatic = bench({"--device", "cuda:0", "--engine", "auto", "--deterministic", "--verbose"});
  INFO(automatic.output);
  REQUIRE(automatic.exit_code == 0);
  CHECK(automatic.output.find("cuda:0: engine auto (no measured table yet") != std::string::npos);
  CHECK(automatic.output.find("restricted to deterministic algorithms") != std::string::npos);
  // --verbose: each shape's decision, once, as it is made (GEMM extents M x N x K of the convolution).
  CHECK(automatic.output.find("engine auto: conv_fwd f32 ") != std::string::npos);
  CHECK(automatic.output.find("per step: forward") != std::string::npos);
}

TEST_CASE("segtrain_sim reports its GPU as simulated, and a GPU it does not have is a device error") {
  const auto info = run_segtrain({"info"});
  INFO(info.output);
  REQUIRE(info.exit_code == 0);
  CHECK(info.output.find("simulated") != std::string::npos);
  const auto r = run_segtrain({"bench", "--device", "cuda:7", "--size", "32", "--steps", "1", "--warmup", "0"});
  INFO(r.output);
  CHECK(r.exit_code != 0);
  CHECK(r.output.find("cuda:7") != std::string::npos);
}

// --gpus 0-1 (issue 16's GPU half): one process, a thread per simulated GPU, NCCL (the simulator's)
// between them. Two GPUs with one sub-batch each must train exactly as one GPU that runs the same
// two sub-batches as gradient accumulation (TRAIN.sub_batches_per_rank 2): the same images per
// sub-batch, the same seed S/2 per backward, the sum g0 + g1 of the same two f32 gradients (NCCL's
// rank-order sum against the accumulation's one addition), BatchNorm per sub-batch in both. So
// the losses are compared for equality, not within a tolerance.
TEST_CASE("segtrain train --gpus 0-1 on two simulated GPUs equals one GPU running both sub-batches") {
  const TwoSimulatedGpus two;
  // Small images (32 px, at most 48): the simulator runs a step of two GPUs in seconds.
  auto small = [](const std::string& dir, const std::vector<std::string>& flags, const char* steps) {
    std::vector<std::string> args = {"train", "--cfg", seg::test::config_file()};
    args.insert(args.end(), flags.begin(), flags.end());
    args = with_overrides(args, dir);
    for (const char* o : {"DATASET.imgSizes", "(32,)", "DATASET.imgMaxSize", "48", "TRAIN.epoch_iters"}) args.push_back(o);
    args.push_back(steps);
    return run_segtrain(args);
  };
  const std::string two_dir = seg::test::fresh_dir("cli_cuda_two_gpus"), one_dir = seg::test::fresh_dir("cli_cuda_one_gpu");
  const auto two_gpus = small(two_dir, {"--gpus", "0-1", "--no-tf32", "TRAIN.sync_bn", "False"}, "2");
  INFO(two_gpus.output);
  REQUIRE(two_gpus.exit_code == 0);
  CHECK(two_gpus.output.find("data parallel: NCCL 2.") != std::string::npos);
  CHECK(two_gpus.output.find("(simulated): rank 0 of 2, cuda:0") != std::string::npos);
  CHECK(two_gpus.output.find("2 ranks x 1 sub-batch(es) of 2 images") != std::string::npos);
  const auto one_gpu = small(one_dir, {"--device", "cuda:0", "--no-tf32", "TRAIN.sub_batches_per_rank", "2"}, "2");
  INFO(one_gpu.output);
  REQUIRE(one_gpu.exit_code == 0);
  const std::vector<double> two_losses = history_losses(two_dir), one_losses = history_losses(one_dir);
  REQUIRE(two_losses.size() == 2);
  REQUIRE(one_losses.size() == 2);
  MESSAGE("losses: two GPUs ", two_losses[0], ", ", two_losses[1], "; one GPU ", one_losses[0], ", ", one_losses[1]);
  CHECK(two_losses == one_losses);
  // Rank 0 wrote the checkpoint: the same weights as the one-GPU run's, bit for bit. (Not the
  // running statistics: one GPU updates them once per sub-batch, each of two GPUs once per step.)
  const seg::SafetensorsFile a = seg::read_safetensors(two_dir + "/encoder_epoch_1.safetensors");
  const seg::SafetensorsFile b = seg::read_safetensors(one_dir + "/encoder_epoch_1.safetensors");
  REQUIRE(a.tensors.size() == b.tensors.size());
  int compared = 0;
  for (const auto& [name, t] : a.tensors) {
    if (name.find("running") != std::string::npos || name.find("num_batches") != std::string::npos) continue;
    ++compared;
    CAPTURE(name);
    const seg::Tensor* want = b.find(name);
    REQUIRE(want != nullptr);
    REQUIRE(t.nbytes() == want->nbytes());
    CHECK(std::memcmp(t.data_ptr(), want->data_ptr(), t.nbytes()) == 0);
  }
  CHECK(compared > 100);

  // SyncBN (the default): the statistics of both sub-batches, all-reduced on the devices. The
  // first step's loss is a forward pass of the same weights: with the union's statistics it differs
  // from the per-GPU statistics' loss.
  const std::string sync_dir = seg::test::fresh_dir("cli_cuda_sync_bn");
  // One step (the simulator is slow): its loss is the forward pass under the union's statistics.
  const auto sync_bn = small(sync_dir, {"--gpus", "0-1", "--no-tf32"}, "1");
  INFO(sync_bn.output);
  REQUIRE(sync_bn.exit_code == 0);
  CHECK(sync_bn.output.find("BatchNorm synchronised over the ranks") != std::string::npos);
  const std::vector<double> sync_losses = history_losses(sync_dir);
  REQUIRE(sync_losses.size() == 1);
  MESSAGE("SyncBN first loss: ", sync_losses[0], " (per-GPU BatchNorm: ", two_losses[0], ")");
  CHECK(std::isfinite(sync_losses[0]));
  CHECK(sync_losses[0] != two_losses[0]);
}

// eval and predict with --gpus 0-1 (issue 16: "eval and predict split images across ranks"): a
// thread per simulated GPU, rank r takes images r, r + 2, ...; eval sums the intersections and
// unions over NCCL, predict gathers each image's lines back into the list's order. Both GPUs run
// the same kernels on the same images as one GPU does, so the report and every file must be
// identical to the one-GPU run's, not merely close. An odd number of images leaves rank 1 one
// short (it sends nothing in the last round).
TEST_CASE("segtrain eval and predict --gpus 0-1 on two simulated GPUs equal one GPU") {
  const TwoSimulatedGpus two;
  const std::string dir = seg::test::fresh_dir("cli_cuda_gpus_infer");
  const auto trained = train(dir, {"--device", "cpu"});  // the checkpoint; the device does not matter
  INFO(trained.output);
  REQUIRE(trained.exit_code == 0);

  auto eval = [&](const std::vector<std::string>& device_flags) {
    std::vector<std::string> args = {"eval", "--cfg", seg::test::config_file(), "--checkpoint", "epoch_1.pth",
                                     "--max-images", "3", "--no-tf32"};
    args.insert(args.end(), device_flags.begin(), device_flags.end());
    return run_segtrain(with_overrides(args, dir));
  };
  const auto one = eval({"--device", "cuda:0"}), both = eval({"--gpus", "0-1"});
  INFO(one.output);
  INFO(both.output);
  REQUIRE(one.exit_code == 0);
  REQUIRE(both.exit_code == 0);
  CHECK(both.output.find("(simulated): rank 0 of 2, cuda:0") != std::string::npos);
  CHECK(both.output.find("the ranks split the list") != std::string::npos);
  // The report from its first class line to the accuracy: every class's IoU, mean IoU, accuracy
  // (the inference time after it differs).
  auto report = [](const std::string& out) {
    const size_t from = out.find("class ["), to = out.find("Mean IoU: ");
    REQUIRE(from != std::string::npos);
    REQUIRE(to != std::string::npos);
    const size_t time = out.find(", Inference Time", to);
    REQUIRE(time != std::string::npos);
    return out.substr(from, time - from);
  };
  CHECK(report(both.output) == report(one.output));
  CHECK(eval_numbers(both.output) == eval_numbers(one.output));
  CHECK(both.output.find("evaluating 3 images") != std::string::npos);

  // predict on three images of the validation folder.
  namespace fs = std::filesystem;
  const std::string imgs = dir + "/imgs";
  fs::create_directories(imgs);
  for (const char* n : {"synth_val_00000001.jpg", "synth_val_00000002.jpg", "synth_val_00000003.jpg"})
    fs::copy_file(seg::test::tiny_dataset() + "/images/validation/" + n, imgs + "/" + n);
  auto predict = [&](const std::string& out, const std::vector<std::string>& device_flags) {
    std::vector<std::string> args = {"predict", "--cfg", seg::test::config_file(), "--checkpoint", "epoch_1.pth",
                                     "--imgs", imgs, "--out", out, "--npy", "--no-tf32"};
    args.insert(args.end(), device_flags.begin(), device_flags.end());
    return run_segtrain(with_overrides(args, dir));
  };
  const std::string out_one = dir + "/pred_one", out_both = dir + "/pred_both";
  const auto p_one = predict(out_one, {"--device", "cuda:0"}), p_both = predict(out_both, {"--gpus", "0-1"});
  INFO(p_one.output);
  INFO(p_both.output);
  REQUIRE(p_one.exit_code == 0);
  REQUIRE(p_both.exit_code == 0);
  // Each image's lines, in the list's order, printed once (by rank 0).
  auto image_lines = [](const std::string& out) {
    const size_t from = out.find("synth_val_00000001"), to = out.find("results in ");
    REQUIRE(from != std::string::npos);
    REQUIRE(to != std::string::npos);
    REQUIRE(from < to);
    return out.substr(from, to - from);
  };
  CHECK(image_lines(p_both.output) == image_lines(p_one.output));
  CHECK(image_lines(p_both.output).find("synth_val_00000003") > image_lines(p_both.output).find("synth_val_00000002"));
  expect_same_prediction_files(out_one, out_both);
}

// One process per GPU under mpirun (issue 16: `mpirun -np N segtrain train --gpus 0-3`, the
// process of local rank i drives the i-th GPU listed; rank 0's ncclUniqueId goes to the others
// over MPI and each calls ncclCommInitRank: tools/ranks.cpp's run_process_per_gpu). Each process
// is its own simulator with two simulated GPUs, and the simulator's NCCL joins the processes'
// ranks through files (kernels/sim/nccl_spanning.cpp) with the same rank-order arithmetic as
// between threads. So two processes must train and evaluate exactly as two threads do: the same
// losses, the same checkpoint files byte for byte (SyncBN on: its statistics are all-reduced too,
// so every rank's running statistics are equal), the same evaluation report, the same prediction
// lines and files.
std::string mpirun_missing() {
#ifdef SEG_CLI_MPIEXEC
  return std::filesystem::exists(SEG_CLI_MPIEXEC) ? std::string() : std::string(SEG_CLI_MPIEXEC) + " is missing";
#else
  return "built without MPI (-DSEG_MPI=OFF or no libopenmpi-dev): segtrain_sim cannot run under mpirun";
#endif
}
SEG_TEST_REQUIREMENT(mpirun, mpirun_missing);

#ifdef SEG_CLI_MPIEXEC
TEST_CASE("mpirun -np 2 segtrain_sim train, eval and predict --gpus 0-1, a process per simulated GPU, equal a thread per GPU" *
          SEG_REQUIRES(mpirun)) {
  const TwoSimulatedGpus two;
  auto mpirun = [](const std::vector<std::string>& segtrain_args) {
    std::vector<std::string> args = {"--allow-run-as-root", "--oversubscribe", "-np", "2", seg::test::segtrain_binary()};
    args.insert(args.end(), segtrain_args.begin(), segtrain_args.end());
    const std::string out = seg::test::scratch_path("mpirun_output.txt");
    const pid_t pid = seg::test::spawn_program(SEG_CLI_MPIEXEC, args, out);
    int status = 0;
    ::waitpid(pid, &status, 0);
    seg::test::RunResult r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    const std::vector<char> bytes = seg::read_file(out);
    r.output.assign(bytes.begin(), bytes.end());
    return r;
  };
  auto train_args = [](const std::string& dir) {
    std::vector<std::string> args = with_overrides({"train", "--cfg", seg::test::config_file(), "--gpus", "0-1", "--no-tf32"}, dir);
    for (const char* o : {"DATASET.imgSizes", "(32,)", "DATASET.imgMaxSize", "48", "TRAIN.epoch_iters", "2"}) args.push_back(o);
    return args;
  };
  auto count = [](const std::string& text, const std::string& part) {
    int n = 0;
    for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
    return n;
  };
  const std::string threads_dir = seg::test::fresh_dir("cli_cuda_gpus_threads"),
                    processes_dir = seg::test::fresh_dir("cli_cuda_gpus_processes");
  const auto threads = run_segtrain(train_args(threads_dir));
  INFO(threads.output);
  REQUIRE(threads.exit_code == 0);
  const auto processes = mpirun(train_args(processes_dir));
  INFO(processes.output);
  REQUIRE(processes.exit_code == 0);
  for (const std::string* out : {&threads.output, &processes.output}) {
    CHECK(out->find("(simulated): rank 0 of 2, cuda:0") != std::string::npos);
    CHECK(out->find("BatchNorm synchronised over the ranks") != std::string::npos);
    CHECK(count(*out, ": engine own;") == 1);  // one engine line per run, not one per GPU
  }
  CHECK(processes.output.find("ranks: 0 on ") != std::string::npos);
  CHECK(processes.output.find("(cuda:1)") != std::string::npos);  // the second process drove the second GPU
  const std::vector<double> a = history_losses(threads_dir), b = history_losses(processes_dir);
  REQUIRE(a.size() == 2);
  CHECK(a == b);
  for (const char* file : {"/encoder_epoch_1.safetensors", "/decoder_epoch_1.safetensors"}) {
    CAPTURE(file);
    REQUIRE(std::filesystem::exists(processes_dir + file));
    CHECK(seg::read_file(processes_dir + file) == seg::read_file(threads_dir + file));
  }

  // eval of that checkpoint on 3 images: rank r takes images r, r + 2, ...; the counts are
  // all-reduced over the processes' NCCL.
  auto eval_args = [&](const std::string& dir) {
    return with_overrides({"eval", "--cfg", seg::test::config_file(), "--checkpoint", "epoch_1.pth", "--max-images", "3",
                           "--no-tf32", "--gpus", "0-1"},
                          dir);
  };
  const auto eval_threads = run_segtrain(eval_args(threads_dir));
  const auto eval_processes = mpirun(eval_args(processes_dir));
  INFO(eval_threads.output);
  INFO(eval_processes.output);
  REQUIRE(eval_threads.exit_code == 0);
  REQUIRE(eval_processes.exit_code == 0);
  CHECK(eval_processes.output.find("the ranks split the list") != std::string::npos);
  CHECK(eval_numbers(eval_processes.output) == eval_numbers(eval_threads.output));
  const size_t from = eval_threads.output.find("class ["), to = eval_threads.output.find("Mean IoU: ");
  REQUIRE(from != std::string::npos);
  REQUIRE(to != std::string::npos);
  CHECK(eval_processes.output.find(eval_threads.output.substr(from, to - from)) != std::string::npos);

  // predict on three validation images: each process writes its images' files, rank 0 prints
  // every image's lines in the list's order.
  namespace fs = std::filesystem;
  const std::string imgs = processes_dir + "/imgs";
  fs::create_directories(imgs);
  for (const char* n : {"synth_val_00000001.jpg", "synth_val_00000002.jpg", "synth_val_00000003.jpg"})
    fs::copy_file(seg::test::tiny_dataset() + "/images/validation/" + n, imgs + "/" + n);
  auto predict_args = [&](const std::string& dir, const std::string& out) {
    return with_overrides({"predict", "--cfg", seg::test::config_file(), "--checkpoint", "epoch_1.pth", "--imgs", imgs,
                           "--out", out, "--npy", "--no-tf32", "--gpus", "0-1"},
                          dir);
  };
  const std::string out_threads = threads_dir + "/pred", out_processes = processes_dir + "/pred";
  const auto p_threads = run_segtrain(predict_args(threads_dir, out_threads));
  const auto p_processes = mpirun(predict_args(processes_dir, out_processes));
  INFO(p_threads.output);
  INFO(p_processes.output);
  REQUIRE(p_threads.exit_code == 0);
  REQUIRE(p_processes.exit_code == 0);
  const size_t lines = p_threads.output.find("synth_val_00000001"), end = p_threads.output.find("results in ");
  REQUIRE(lines != std::string::npos);
  REQUIRE(end != std::string::npos);
  CHECK(p_processes.output.find(p_threads.output.substr(lines, end - lines)) != std::string::npos);
  expect_same_prediction_files(out_threads, out_processes);
}
#endif

// The README's main command on the simulated GPU, shortened: `segtrain demo --smoke --steps 2
// --device cuda:0` (the smoke dataset: 48 training images, 12 validation images of 96-128 px;
// 2 steps of 4 images at 96 px) runs every stage end to end: it generates the data, trains on
// cuda:0, evaluates on cuda:0 and writes the checkpoints, the training plot and one prediction
// PNG per validation image. The first step's loss is one forward pass of the same weights on the
// same batch, so it must equal the CPU demo's (--no-tf32: strict f32 on both; bound as in the
// train case above). Later numbers are not compared: the second step starts from weights that a
// kink flip may have moved (tests/cuda/test_model_steps.cpp).
// The simulator runs this one without its stream race detector and host-access faults: at 96 px
// the race detector's bookkeeping took over 8 CPU minutes for the first training step alone (the
// whole case, 2 steps and its CPU demo, takes 66 CPU-s without both), and the cases above,
// test_cuda and test_cuda_slow run the same train, eval and predict code paths with both on.
TEST_CASE("segtrain demo --device cuda:0, shortened, trains, evaluates and writes its outputs on the simulated GPU") {
  struct SimChecksOff {  // segtrain_sim reads these at start-up (kernels/sim/sim.h)
    SimChecksOff() {
      ::setenv("SEG_SIM_RACE_CHECK", "0", 1);
      ::setenv("SEG_SIM_HOST_FAULTS", "0", 1);
    }
    ~SimChecksOff() {
      ::unsetenv("SEG_SIM_RACE_CHECK");
      ::unsetenv("SEG_SIM_HOST_FAULTS");
    }
  } checks_off;
  const std::string data = seg::test::fresh_dir("demo_cuda_data"), gpu_out = seg::test::fresh_dir("demo_cuda"),
                    cpu_out = seg::test::fresh_dir("demo_cuda_cpu");
  auto demo = [&](const std::string& out, const std::vector<std::string>& device_flags) {
    std::vector<std::string> args = {"demo", "--smoke", "--steps", "2", "--threads", "1", "--data", data, "--out", out};
    args.insert(args.end(), device_flags.begin(), device_flags.end());
    return run_segtrain(args);
  };
  const auto on_gpu = demo(gpu_out, {"--device", "cuda:0", "--no-tf32"});
  INFO(on_gpu.output);
  REQUIRE(on_gpu.exit_code == 0);
  CHECK(on_gpu.output.find("[1/4] dataset: generating") != std::string::npos);
  CHECK(on_gpu.output.find("for 2 steps of 4 images") != std::string::npos);
  CHECK(on_gpu.output.find(") on cuda:0 ...") != std::string::npos);
  CHECK(on_gpu.output.find("[3/4] evaluating") != std::string::npos);
  CHECK(on_gpu.output.find("Mean IoU: ") != std::string::npos);
  CHECK(on_gpu.output.find("[4/4] done") != std::string::npos);
  CHECK(on_gpu.output.find("on 12 validation images") != std::string::npos);
  const auto [miou, acc] = eval_numbers(on_gpu.output);
  CHECK(miou >= 0.0);
  CHECK(miou <= 1.0);
  CHECK(acc >= 0.0);
  CHECK(acc <= 100.0);

  // Trained: two steps in the history, finite, the first equal to the CPU demo's first.
  const std::vector<double> gpu_losses = history_losses(gpu_out);
  REQUIRE(gpu_losses.size() == 2);
  CHECK(std::isfinite(gpu_losses[1]));
  const auto on_cpu = demo(cpu_out, {"--device", "cpu"});
  INFO(on_cpu.output);
  REQUIRE(on_cpu.exit_code == 0);
  CHECK(on_cpu.output.find("dataset: " + data + " (already there)") != std::string::npos);
  const std::vector<double> cpu_losses = history_losses(cpu_out);
  REQUIRE(cpu_losses.size() == 2);
  MESSAGE("demo first-step loss: cpu ", cpu_losses[0], ", cuda:0 ", gpu_losses[0], "; second: ", cpu_losses[1], " / ",
          gpu_losses[1], "; cuda:0 mIoU ", miou, ", accuracy ", acc, "%");
  SEG_CHECK_CLOSE(std::vector<double>{gpu_losses[0]}, std::vector<double>{cpu_losses[0]},
                  seg::test::Tolerance{0, 16.0 / (1 << 24)});

  // The outputs, written from the device's tensors.
  namespace fs = std::filesystem;
  for (const char* f : {"/encoder_epoch_1.safetensors", "/decoder_epoch_1.safetensors", "/history.svg", "/history.csv"}) {
    CAPTURE(f);
    CHECK(fs::is_regular_file(gpu_out + f));
  }
  const seg::SafetensorsFile enc = seg::read_safetensors(gpu_out + "/encoder_epoch_1.safetensors");
  CHECK(enc.tensors.size() > 100);
  int pngs = 0;
  for (const auto& e : fs::directory_iterator(gpu_out + "/result"))
    if (e.path().extension() == ".png" && fs::file_size(e.path()) > 0) ++pngs;
  CHECK(pngs == 12);
}
