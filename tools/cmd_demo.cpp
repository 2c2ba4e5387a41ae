// segtrain demo: the README's main command. On a machine without a GPU it generates the synthetic
// dataset (if missing), trains a MobileNetV2dilated-C1_deepsup model on it on the CPU, evaluates it,
// writes a prediction PNG per validation image and the training plot, and prints where everything is and the mIoU reached.
// --smoke does the same on a tiny dataset in about a minute, with the demo's own settings otherwise
// (the test suite runs it and checks that it learns: tests/tools/demo/test_demo_smoke.cpp).
// --steps N shortens the training to N steps (the end-to-end test of a device).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "core/error.h"
#include "core/fileio.h"
#include "core/numbers.h"
#include "data/synth_dataset.h"
#include "kernels/cpu/thread_pool.h"
#include "tools/cli.h"
#include "tools/console.h"
#include "tools/evaluate.h"
#include "tools/model_setup.h"
#include "tools/run_setup.h"
#include "tools/trainer.h"

namespace seg::cli {

namespace {
const char* kUsage =
    "usage: segtrain demo [--smoke] [--steps N] [--data DIR] [--out DIR] [--threads N] [--device D [--no-tf32] [--engine NAME] [--deterministic]]\n"
    "\n"
    "The end-to-end demo on generated data:\n"
    "  1. writes the synthetic ADE20K-format dataset to DIR (default data-gen/synth) unless it is there,\n"
    "  2. trains MobileNetV2dilated + C1_deepsup on it (configs/synth-mobilenetv2dilated-c1_deepsup.json),\n"
    "  3. evaluates on its validation split (mIoU, pixel accuracy, per-class IoU),\n"
    "  4. writes image | ground truth | prediction PNGs for the validation images and the training plot,\n"
    "and prints where everything is. --smoke runs a tiny version (about a minute) to check the pipeline.\n"
    "\n"
    "options:\n"
    "  --smoke       tiny dataset and 75 steps\n"
    "  --steps N     train N steps only (one epoch of N; with --smoke: the CI test of a device)\n"
    "  --device D    cpu (default) or cuda:N\n"
    "  --no-tf32     strict f32 convolutions and GEMMs on CUDA (default: TF32 tensor cores, as PyTorch)\n"
    "  --engine NAME convolutions and GEMMs on CUDA: own (default), cublaslt, cudnn or auto (TRAIN.engine)\n"
    "  --deterministic  cuDNN/cuBLASLt pick deterministic algorithms only (TRAIN.deterministic)\n"
    "  --data DIR    dataset folder (default data-gen/synth, or data-gen/smoke with --smoke)\n"
    "  --out DIR     run folder (default runs/demo, or runs/demo-smoke)\n"
    "  --threads N   CPU threads (default: all cores)\n"
    "\n"
    "examples:\n"
    "  segtrain demo\n"
    "  segtrain demo --smoke --out /tmp/demo\n";

std::string config_path() { return std::string(SEG_SOURCE_DIR_TOOLS) + "/configs/synth-mobilenetv2dilated-c1_deepsup.json"; }
}  // namespace

int cmd_demo(const Args& args) {
  if (wants_help(args)) {
    std::printf("%s", kUsage);
    return 0;
  }
  bool smoke = false;
  std::string data_dir, out_dir;
  int threads = 0;
  int64_t steps = 0;
  std::string device;
  bool no_tf32 = false, deterministic = false;
  std::string engine;
  for (size_t i = 0; i < args.size(); ++i) {
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) throw Error(ErrorKind::usage, args[i] + " needs a value").key(args[i]);
      return args[++i];
    };
    if (args[i] == "--smoke") smoke = true;
    else if (args[i] == "--data") data_dir = value();
    else if (args[i] == "--out") out_dir = value();
    else if (args[i] == "--threads") threads = static_cast<int>(int_flag("--threads", value(), 1, 4096));
    else if (args[i] == "--device") device = value();
    else if (args[i] == "--no-tf32") no_tf32 = true;
    else if (args[i] == "--engine") engine = value();
    else if (args[i] == "--deterministic") deterministic = true;
    else if (args[i] == "--steps") steps = int_flag("--steps", value(), 1);
    else throw Error(ErrorKind::usage, "segtrain demo: unknown option '" + args[i] + "'").hint("see segtrain demo --help");
  }
  if (threads > 0) set_num_threads(threads);
  if (data_dir.empty()) data_dir = smoke ? "data-gen/smoke" : "data-gen/synth";
  if (out_dir.empty()) out_dir = smoke ? "runs/demo-smoke" : "runs/demo";
  const auto t_start = std::chrono::steady_clock::now();
  CommonFlags flags;
  flags.cfg_path = config_path();
  flags.device = device;
  flags.no_tf32 = no_tf32;
  flags.engine = engine;  // load_run_config turns these into TRAIN.engine and TRAIN.deterministic
  flags.deterministic = deterministic;
  const Device dev = resolve_device(flags);  // before generating data: a missing GPU fails at once

  // 1. Data.
  data::SynthOptions so;
  so.out_dir = data_dir;
  if (smoke) {
    so.num_train = 48;
    so.num_val = 12;
    so.min_long_side = 96;
    so.max_long_side = 128;
  }
  if (data::synthetic_dataset_complete(so)) {
    std::printf("[1/4] dataset: %s (already there)\n", data_dir.c_str());
  } else {
    std::printf("[1/4] dataset: generating %lld training and %lld validation images in %s ...\n",
                static_cast<long long>(so.num_train), static_cast<long long>(so.num_val), data_dir.c_str());
    const data::SynthReport rep = data::generate_synthetic_dataset(so);
    std::printf("      %lld images in %.1f s\n", static_cast<long long>(rep.images), rep.seconds);
  }

  // 2. Train.
  flags.overrides = {"DIR", out_dir, "DATASET.root_dataset", data_dir, "DATASET.list_train", data_dir + "/training.odgt",
                     "DATASET.list_val", data_dir + "/validation.odgt"};
  if (smoke)
    flags.overrides.insert(flags.overrides.end(), {"TRAIN.num_epoch", "3", "TRAIN.epoch_iters", "25", "TRAIN.disp_iter", "5",
                                                   "DATASET.imgSizes", "(96,)", "DATASET.imgMaxSize", "128",
                                                   "TRAIN.batch_size_per_gpu", "4"});
  if (steps > 0)
    flags.overrides.insert(flags.overrides.end(), {"TRAIN.num_epoch", "1", "TRAIN.epoch_iters", std::to_string(steps),
                                                   "TRAIN.disp_iter", std::to_string(std::max<int64_t>(1, steps / 2))});
  Config cfg = load_run_config(flags);
  const std::string where = dev.is_cpu() ? "the CPU, " + std::to_string(num_threads()) + " threads" : dev.str();
  std::printf("[2/4] training %s + %s for %lld steps of %lld images (%s) on %s ...\n",
              cfg.MODEL.arch_encoder.c_str(), cfg.MODEL.arch_decoder.c_str(),
              static_cast<long long>(cfg.TRAIN.num_epoch * cfg.TRAIN.epoch_iters),
              static_cast<long long>(cfg.TRAIN.batch_size_per_gpu), config_path().c_str(), where.c_str());
  std::fflush(stdout);
  TrainRunOptions topt;
  const TrainSummary ts = run_training(cfg, flags, topt);
  if (ts.interrupted) {
    std::printf("demo interrupted; resume the training with: segtrain train --cfg %s --resume DIR %s\n",
                config_path().c_str(), out_dir.c_str());
    return 130;
  }

  // 3. Evaluate the last epoch (upstream's convention: VAL.checkpoint = the final epoch).
  std::printf("[3/4] evaluating on %s ...\n", cfg.DATASET.list_val.c_str());
  const std::string last = "epoch_" + std::to_string(cfg.TRAIN.num_epoch) + ".pth";
  auto model = load_model_for_inference(cfg, CheckpointChoice{last, "", "", true}, last, true, dev);
  data::DatasetOptions dopt = dataset_options(cfg, flags);
  data::ValDataset val(dopt);
  const ClassTable classes = load_class_table(cfg);
  EvalOptions eo;
  eo.amp = amp_config(cfg);
  eo.visualize_dir = out_dir + "/result";
  const EvalResult r = evaluate(*model, val, classes, eo);
  std::printf("%s", format_eval_report(r, classes).c_str());

  // 4. Summary (predictions: the eval visualizations are image | ground truth | prediction).
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  std::printf("[4/4] done in %s\n", Progress::format_duration(secs).c_str());
  std::printf("  training loss %.3f -> %.3f, %lld steps in %s\n", ts.first_loss, ts.last_loss,
              static_cast<long long>(ts.steps), Progress::format_duration(ts.seconds).c_str());
  std::printf("  checkpoints   %s/encoder_%s, %s/decoder_%s\n", out_dir.c_str(), checkpoint_file(last, "x").substr(2).c_str(),
              out_dir.c_str(), checkpoint_file(last, "x").substr(2).c_str());
  std::printf("  plot          %s/history.svg (and history.csv)\n", out_dir.c_str());
  std::printf("  predictions   %s/result/ (image | ground truth | prediction)\n", out_dir.c_str());
  std::printf("  mIoU %.4f, pixel accuracy %.2f%% on %lld validation images\n", r.mean_iou, 100.0 * r.pixel_accuracy,
              static_cast<long long>(r.images));
  return 0;
}

}  // namespace seg::cli
