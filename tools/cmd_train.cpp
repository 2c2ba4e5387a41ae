// segtrain train: argument parsing and the summary; the loop is tools/trainer.cpp.
#include <cstdio>

#include "core/error.h"
#include "core/numbers.h"
#include "tools/cli.h"
#include "tools/console.h"
#include "core/comm.h"
#include "tools/trainer.h"

namespace seg::cli {

namespace {
const char* kUsage =
    "usage: segtrain train --cfg FILE [--gpus LIST | --device D] [--no-tf32] [--engine NAME] [--deterministic] [--amp O0|O1|O2|O3] [--amp-dtype f16|bf16]\n"
    "                      [--loss-scale dynamic|none|N] [--resume [--force]] [--amp-stats] [--detect-anomaly]\n"
    "                      [--threads N] [--skip-bad | --on-bad-sample fail|skip] [--comm-timeout S]\n"
    "                      [--profile-steps A-B]\n"
    "                      [--help-keys] [KEY VALUE ...]\n"
    "       segtrain train --cfg FILE --gpus 0-3 ...   (a thread per GPU, NCCL)\n"
    "       mpirun -np N segtrain train --cfg FILE --threads T ...   (N CPU ranks: docs/distributed.md)\n"
    "\n"
    "Trains an upstream model (MODEL.arch_encoder + MODEL.arch_decoder) as upstream's train.py does:\n"
    "two SGD optimizers (encoder, decoder) with momentum TRAIN.beta1, weight decay on conv weights only,\n"
    "the poly learning rate, deep supervision, TRAIN.fix_bn. Every TRAIN.disp_iter steps it logs\n"
    "upstream's fields plus images/s, data-wait share, peak memory and the loss scale; after each epoch\n"
    "it writes DIR/encoder_epoch_N.safetensors, DIR/decoder_epoch_N.safetensors, a resumable\n"
    "DIR/train_state.safetensors and DIR/history.{csv,json,svg}.\n"
    "\n"
    "options:\n"
    "  --cfg FILE          a JSON config (configs/) or an upstream YAML config, used as it is\n"
    "  --gpus LIST         upstream's forms (0, 0-3, 0,2, gpu0); several GPUs train data parallel, one\n"
    "                      thread each, gradients all-reduced by NCCL, BatchNorm synchronised (TRAIN.sync_bn)\n"
    "  --device D          cpu (default) or cuda:N\n"
    "  --comm-timeout S    several ranks: one waiting longer than S seconds in one collective stops\n"
    "                      the job, naming it (default 300)\n"
    "  --no-tf32           strict f32 convolutions and GEMMs on CUDA (default: TF32 tensor cores for f32,\n"
    "                      as PyTorch; the CPU's f32 is always strict)\n"
    "  --engine NAME       on CUDA, who runs convolutions and GEMMs: own (default: the project's kernels),\n"
    "                      cublaslt, cudnn or auto (the faster per shape) (TRAIN.engine; no effect on the CPU)\n"
    "  --deterministic     on CUDA, cuDNN/cuBLASLt pick deterministic algorithms only (TRAIN.deterministic)\n"
    "  --amp LEVEL         mixed precision, Apex semantics (docs/mixed-precision.md); --apex = O1,\n"
    "                      --apex-opt-level LEVEL as upstream's pull request\n"
    "  --amp-dtype T       f16 (default) or bf16\n"
    "  --loss-scale S      dynamic, none or a static value (default: the level's)\n"
    "  --resume            continue exactly from DIR/train_state.safetensors (same numbers as an\n"
    "                      uninterrupted run on the CPU); TRAIN.start_epoch N resumes as upstream does.\n"
    "                      A larger TRAIN.num_epoch extends a finished run. A config that changes the\n"
    "                      run (model, batch size, learning rates, image sizes, AMP) is refused,\n"
    "                      naming each difference\n"
    "  --force             with --resume: continue with the changed values anyway, warning per key\n"
    "  --amp-stats         print, per parameter, how many gradient values would flush to zero or\n"
    "                      overflow in fp16, with and without the loss scale\n"
    "  --detect-anomaly    check every op's outputs and gradients for inf/NaN and name the first op\n"
    "                      that makes one, with its module and ranges (TRAIN.detect_anomaly); a\n"
    "                      forward one stops training (exit 1), a backward one under dynamic loss\n"
    "                      scaling is reported in one line per skipped step\n"
    "  --stop-after N      stop after N steps, saving a resumable state (as Ctrl-C does)\n"
    "  --profile-steps A-B on CUDA, call cudaProfilerStart before step A and cudaProfilerStop after step B\n"
    "                      (steps of the whole run counted from 1, as history.csv's iteration; N = N-N),\n"
    "                      so `nsys profile --capture-range=cudaProfilerApi` or\n"
    "                      `ncu --profile-from-start off` capture only those steps; the stop waits for\n"
    "                      the GPU. On the CPU it does nothing and says so\n"
    "  --threads N         CPU threads (default: all cores)\n"
    "  --on-bad-sample P   fail (default) or skip unreadable samples and count them; before the first\n"
    "                      step every list entry's files are checked (as segtrain data check does)\n"
    "                      and a bad one stops the run unless skipping\n"
    "  --skip-bad          the same as --on-bad-sample skip\n"
    "  KEY VALUE           config overrides, e.g. TRAIN.num_epoch 5 (unknown keys are errors)\n"
    "  --help-keys         list every config key with its type, default and meaning\n"
    "\n"
    "Ctrl-C or SIGTERM stops at the end of the current step and saves a resumable state.\n"
    "\n"
    "examples:\n"
    "  segtrain train --cfg configs/synth-mobilenetv2dilated-c1_deepsup.json\n"
    "  segtrain train --cfg configs/ade20k-resnet50dilated-ppm_deepsup.json --amp O2 TRAIN.accum_steps 8\n"
    "  segtrain train --cfg config/ade20k-hrnetv2.yaml --device cpu TRAIN.num_epoch 1\n"
    "  segtrain train --cfg configs/synth-mobilenetv2dilated-c1_deepsup.json --resume\n"
    "  mpirun -np 2 segtrain train --cfg configs/synth-mobilenetv2dilated-c1_deepsup.json --threads 1\n";
}  // namespace

int cmd_train(const Args& args) {
  for (const auto& a : args)
    if (a == "--help-keys") {
      std::printf("%s", format_config_keys().c_str());
      return 0;
    }
  if (wants_help(args)) {
    std::printf("%s", kUsage);
    return 0;
  }
  const CommonFlags flags = parse_common_flags(args, {"--resume", "--force", "--amp-stats", "--detect-anomaly"},
                                               {"--stop-after", "--profile-steps"});
  TrainRunOptions opt;
  for (size_t i = 0; i < flags.rest.size(); ++i) {
    if (flags.rest[i] == "--resume") opt.resume = true;
    else if (flags.rest[i] == "--force") opt.force = true;
    else if (flags.rest[i] == "--amp-stats") opt.amp_stats = true;
    else if (flags.rest[i] == "--detect-anomaly") opt.detect_anomaly = true;
    else if (flags.rest[i] == "--stop-after") opt.stop_after = int_flag("--stop-after", flags.rest[++i], 1);
    else if (flags.rest[i] == "--profile-steps") opt.profile_steps = parse_profile_steps(flags.rest[++i]);
  }
  if (flags.cfg_path.empty()) throw Error(ErrorKind::usage, "segtrain train needs --cfg FILE").hint("see segtrain train --help");
  const Config cfg = load_run_config(flags);
  if (opt.force && !opt.resume) throw Error(ErrorKind::usage, "--force only goes with --resume").key("--force");
  const TrainSummary s = run_training(cfg, flags, opt);
  const bool speaks = world().rank() == 0;  // under mpirun, rank 0 reports for all
  if (s.steps_this_run == 0) {
    if (speaks)
    std::printf("nothing to train: the run in %s is at step %lld of %lld (raise TRAIN.num_epoch to train on)\n",
                cfg.DIR.c_str(), static_cast<long long>(s.steps), static_cast<long long>(s.max_steps));
    return 0;
  }
  if (speaks)
    std::printf("trained %lld steps (steps %lld-%lld of %lld) in %s (%lld skipped by the loss scaler); loss %.4f -> %.4f; "
              "run folder %s\n",
              static_cast<long long>(s.steps_this_run), static_cast<long long>(s.start_step + 1),
              static_cast<long long>(s.steps), static_cast<long long>(s.max_steps),
              Progress::format_duration(s.seconds).c_str(), static_cast<long long>(s.skipped_steps), s.first_loss,
              s.last_loss, cfg.DIR.c_str());
  if (s.interrupted) return stop_requested() ? 128 + (std::string(stop_signal_name()).find("SIGTERM") == 0 ? 15 : 2) : 0;
  return 0;
}

}  // namespace seg::cli
