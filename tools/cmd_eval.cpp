// segtrain eval: upstream's eval.py (single- and multi-scale) with per-class IoU and names.
#include <algorithm>
#include <cstdio>

#include "core/comm.h"
#include "core/error.h"
#include "core/numbers.h"
#include "kernels/cpu/thread_pool.h"
#include "tools/cli.h"
#include "tools/console.h"
#include "tools/evaluate.h"
#include "tools/model_setup.h"
#include "tools/ranks.h"

namespace seg::cli {

namespace {
const char* kUsage =
    "usage: segtrain eval --cfg FILE [--checkpoint NAME | --encoder FILE --decoder FILE] [--scales LIST]\n"
    "                     [--visualize] [--amp LEVEL] [--amp-dtype T] [--max-images N] [--non-strict]\n"
    "                     [--device D | --gpus LIST] [--no-tf32] [--engine NAME] [--deterministic] [--threads N]\n"
    "                     [KEY VALUE ...]\n"
    "\n"
    "Evaluates on DATASET.list_val exactly as upstream's eval.py: for each image and each short side in\n"
    "DATASET.imgSizes (or --scales), softmax probabilities upsampled to the label size are averaged; the\n"
    "prediction is their argmax. Prints per-class IoU with class names, mean IoU, pixel accuracy and the\n"
    "inference time per image.\n"
    "\n"
    "options:\n"
    "  --checkpoint NAME  like VAL.checkpoint: epoch_20.pth means DIR/encoder_epoch_20.safetensors and\n"
    "                     DIR/decoder_epoch_20.safetensors (default: VAL.checkpoint); 'best' = *_best\n"
    "  --encoder/--decoder FILE   explicit checkpoint files\n"
    "  --scales LIST      short sides, e.g. 300 or 300,375,450 (default: DATASET.imgSizes)\n"
    "  --visualize        write image | ground truth | prediction PNGs to DIR/result/\n"
    "  --amp LEVEL        half-precision inference (O1 autocast, O2/O3 half model)\n"
    "  --max-images N     evaluate the first N images only\n"
    "  --gpus LIST        GPUs, e.g. 0-3: a thread per GPU, each evaluating every N-th image; the\n"
    "                     intersections and unions are summed over the GPUs (NCCL)\n"
    "  --non-strict       load checkpoints like upstream's strict=False (report skipped tensors)\n"
    "  --engine NAME      on CUDA, who runs convolutions and GEMMs: own (default: the project's kernels),\n"
    "                     cublaslt, cudnn or auto (the faster per shape) (TRAIN.engine)\n"
    "  --deterministic    on CUDA, cuDNN/cuBLASLt pick deterministic algorithms only (TRAIN.deterministic)\n"
    "\n"
    "examples:\n"
    "  segtrain eval --cfg configs/synth-mobilenetv2dilated-c1_deepsup.json --checkpoint epoch_10.pth\n"
    "  segtrain eval --cfg configs/ade20k-resnet50dilated-ppm_deepsup.json --scales 450 --visualize\n";
}  // namespace

int cmd_eval(const Args& args) {
  if (wants_help(args)) {
    std::printf("%s", kUsage);
    return 0;
  }
  const CommonFlags flags = parse_common_flags(args, {"--visualize", "--non-strict"},
                                               {"--checkpoint", "--encoder", "--decoder", "--scales", "--max-images"});
  CheckpointChoice choice;
  std::string scales;
  bool visualize = false;
  std::vector<std::string> extra;
  for (size_t i = 0; i < flags.rest.size(); ++i) {
    const std::string& a = flags.rest[i];
    if (a == "--visualize") visualize = true;
    else if (a == "--non-strict") choice.strict = false;
    else if (a == "--checkpoint") choice.checkpoint = flags.rest[++i];
    else if (a == "--encoder") choice.encoder = flags.rest[++i];
    else if (a == "--decoder") choice.decoder = flags.rest[++i];
    else if (a == "--scales") scales = scales_override(a, flags.rest[++i]);
    else if (a == "--max-images") extra.insert(extra.end(), {"VAL.max_images", std::to_string(int_flag(a, flags.rest[++i], 1))});
  }
  if (flags.cfg_path.empty()) throw Error(ErrorKind::usage, "segtrain eval needs --cfg FILE").hint("see segtrain eval --help");
  CommonFlags f = flags;
  if (!scales.empty()) f.overrides.insert(f.overrides.end(), {"DATASET.imgSizes", scales});
  f.overrides.insert(f.overrides.end(), extra.begin(), extra.end());
  if (visualize) f.overrides.insert(f.overrides.end(), {"VAL.visualize", "True"});
  const Config cfg = load_run_config(f);
  if (choice.checkpoint == "best") choice.encoder = cfg.DIR + "/encoder_best.safetensors", choice.decoder = cfg.DIR + "/decoder_best.safetensors";
  // Several ranks (mpirun, or --gpus 0-1: a thread per GPU; tools/ranks.h) split the list and sum
  // their counts (upstream's eval_multipro); rank 0 prints what it loaded (every rank loads the
  // same files) and the one report.
  run_ranks(cfg, f, [&](const RankContext& rank) {
    Communicator& comm = rank.comm;
    const bool speaks = comm.rank() == 0;
    auto model = load_model_for_inference(cfg, choice, cfg.VAL.checkpoint, !speaks, rank.device);
    data::ValDataset val(dataset_options(cfg, rank.flags));
    const ClassTable classes = load_class_table(cfg);
    EvalOptions eo;
    eo.amp = amp_config(cfg);
    eo.max_images = cfg.VAL.max_images;
    if (cfg.VAL.visualize) eo.visualize_dir = cfg.DIR + "/result";
    eo.comm = &comm;
    const int64_t images = eo.max_images > 0 ? std::min(eo.max_images, val.size()) : val.size();
    if (speaks)
      std::printf("evaluating %lld images of %s at scales %s, %s, %d threads\n", static_cast<long long>(images),
                  cfg.DATASET.list_val.c_str(), cfg.get("DATASET.imgSizes").c_str(), eo.amp.name().c_str(),
                  num_threads());
    if (speaks && comm.size() > 1) std::printf("%s: the ranks split the list\n", comm.describe().c_str());
    Progress progress("eval", images, speaks && comm.size() == 1 && stdout_is_terminal());
    const EvalResult r = evaluate(*model, val, classes, eo, [&](int64_t done, int64_t) { progress.update(done, ""); });
    progress.finish();
    if (speaks) {
      std::printf("%s", format_eval_report(r, classes).c_str());
      if (!eo.visualize_dir.empty()) std::printf("visualizations in %s\n", eo.visualize_dir.c_str());
    }
  });
  return 0;
}

}  // namespace seg::cli
