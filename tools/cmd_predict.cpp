// segtrain predict: upstream's test.py, plus class-index PNGs and optional probability maps.
#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "core/comm.h"
#include "core/error.h"
#include "core/fileio.h"
#include "core/npy.h"
#include "data/image.h"
#include "data/image_codec.h"
#include "layers/ops.h"
#include "tools/cli.h"
#include "tools/console.h"
#include "tools/evaluate.h"
#include "tools/model_setup.h"
#include "tools/ranks.h"

namespace seg::cli {

namespace {
const char* kUsage =
    "usage: segtrain predict --cfg FILE --imgs PATH [--out DIR] [--checkpoint NAME | --encoder F --decoder F]\n"
    "                        [--npy] [--scales LIST] [--non-strict] [--amp LEVEL] [--device D | --gpus LIST] [--no-tf32]\n"
    "                        [--engine NAME] [--deterministic]\n"
    "                        [--threads N] [KEY VALUE ...]\n"
    "\n"
    "Segments an image, or every .jpg/.jpeg/.png in a folder, with multi-scale averaging as eval does.\n"
    "For each image it writes, in DIR (default TEST.result):\n"
    "  NAME.png          the image and the coloured prediction side by side (upstream's test.py)\n"
    "  NAME_labels.png   8-bit class indices in ADE20K's annotation format (class k -> value k+1)\n"
    "  NAME_probs.npy    with --npy: f32 probabilities [1, num_class, H, W] (NCHW, for other tools)\n"
    "and prints the classes covering more than 0.1% of the pixels, as test.py does.\n"
    "\n"
    "options:\n"
    "  --checkpoint NAME  like TEST.checkpoint (default): epoch_20.pth -> DIR/encoder_epoch_20.safetensors ...\n"
    "  --scales LIST      short sides (default: DATASET.imgSizes)\n"
    "  --non-strict       load checkpoints like upstream's strict=False (skip missing/unexpected tensors)\n"
    "  --gpus LIST        GPUs, e.g. 0-3: a thread per GPU, each predicting every N-th image (lines still\n"
    "                     printed in the list's order)\n"
    "  --engine NAME      on CUDA, who runs convolutions and GEMMs: own (default: the project's kernels),\n"
    "                     cublaslt, cudnn or auto (the faster per shape) (TRAIN.engine)\n"
    "  --deterministic    on CUDA, cuDNN/cuBLASLt pick deterministic algorithms only (TRAIN.deterministic)\n"
    "\n"
    "examples:\n"
    "  segtrain predict --cfg configs/synth-mobilenetv2dilated-c1_deepsup.json --imgs data-gen/synth/images/validation --out preds\n"
    "  segtrain predict --cfg configs/ade20k-resnet50dilated-ppm_deepsup.json --imgs photo.jpg --npy\n";

std::vector<std::string> collect_images(const std::string& path) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  if (!fs::exists(path)) throw Error(ErrorKind::usage, "--imgs: no such file or folder: " + path).file(path);
  if (fs::is_directory(path)) {
    for (const auto& e : fs::directory_iterator(path)) {
      std::string ext = e.path().extension().string();
      std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      if (ext == ".jpg" || ext == ".jpeg" || ext == ".png") out.push_back(e.path().string());
    }
    std::sort(out.begin(), out.end());
    if (out.empty()) throw Error(ErrorKind::usage, "--imgs: no .jpg/.jpeg/.png files in " + path).file(path);
  } else {
    out.push_back(path);
  }
  return out;
}

std::string stem(const std::string& path) { return std::filesystem::path(path).stem().string(); }

// Predicts one image, writes its files into `out`, and returns the lines test.py prints for it.
std::string predict_image(SegmentationModule& model, const data::EvalSample& sample, const AmpConfig& amp,
                          const ClassTable& classes, const std::string& out, bool npy) {
  const int64_t K = static_cast<int64_t>(classes.names.size());
  const Tensor probs_dev = multiscale_probabilities(model, sample, amp);  // [H, W, K] on the device
  const Tensor pred = ops::argmax_channels(probs_dev).to(Device::cpu());  // i32 [H, W]
  const Tensor probs = npy ? probs_dev.to(Device::cpu()) : Tensor();
  const int H = static_cast<int>(pred.size(0)), W = static_cast<int>(pred.size(1));
  const int32_t* p = pred.data<int32_t>();
  data::Image labels(W, H, 1), color(W, H, 3);
  std::vector<int64_t> counts(static_cast<size_t>(K), 0);
  for (int64_t i = 0; i < pred.numel(); ++i) {
    labels.pixels[i] = static_cast<uint8_t>(std::min<int32_t>(p[i] + 1, 255));
    const data::Rgb c = classes.palette[static_cast<size_t>(p[i])];
    color.pixels[i * 3] = c.r, color.pixels[i * 3 + 1] = c.g, color.pixels[i * 3 + 2] = c.b;
    ++counts[static_cast<size_t>(p[i])];
  }
  const data::Image img = data::tensor_to_image(sample.img_ori);
  data::Image panel(2 * W, H, 3);
  data::paste(panel, img, 0, 0);
  data::paste(panel, color, W, 0);
  const std::string base = out + "/" + stem(sample.info);
  data::save_png(base + ".png", panel);
  data::save_png(base + "_labels.png", labels);
  // NCHW for other tools: [H, W, K] -> [1, K, H, W].
  if (npy) write_npy(base + "_probs.npy", probs.permute({2, 0, 1}).contiguous().view({1, K, H, W}));
  std::string text = "Predictions in [" + sample.info + "]:\n";
  std::vector<int64_t> order(static_cast<size_t>(K));
  for (int64_t k = 0; k < K; ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return counts[a] > counts[b]; });
  for (int64_t k : order) {
    const double ratio = 100.0 * static_cast<double>(counts[k]) / static_cast<double>(pred.numel());
    if (ratio > 0.1) {
      char percent[32];
      std::snprintf(percent, sizeof percent, "%.2f%%", ratio);
      text += "  " + classes.names[k] + ": " + percent + "\n";
    }
  }
  return text;
}
}  // namespace

int cmd_predict(const Args& args) {
  if (wants_help(args)) {
    std::printf("%s", kUsage);
    return 0;
  }
  const CommonFlags flags = parse_common_flags(args, {"--npy", "--non-strict"},
                                               {"--imgs", "--out", "--checkpoint", "--encoder", "--decoder", "--scales"});
  CheckpointChoice choice;
  std::string imgs, out, scales;
  bool npy = false;
  for (size_t i = 0; i < flags.rest.size(); ++i) {
    const std::string& a = flags.rest[i];
    if (a == "--npy") npy = true;
    else if (a == "--non-strict") choice.strict = false;
    else if (a == "--imgs") imgs = flags.rest[++i];
    else if (a == "--out") out = flags.rest[++i];
    else if (a == "--checkpoint") choice.checkpoint = flags.rest[++i];
    else if (a == "--encoder") choice.encoder = flags.rest[++i];
    else if (a == "--decoder") choice.decoder = flags.rest[++i];
    else if (a == "--scales") scales = scales_override(a, flags.rest[++i]);
  }
  if (flags.cfg_path.empty() || imgs.empty())
    throw Error(ErrorKind::usage, "segtrain predict needs --cfg FILE and --imgs PATH").hint("see segtrain predict --help");
  CommonFlags f = flags;
  if (!scales.empty()) f.overrides.insert(f.overrides.end(), {"DATASET.imgSizes", scales});
  const Config cfg = load_run_config(f);
  const std::vector<std::string> paths = collect_images(imgs);
  if (out.empty()) out = cfg.TEST.result;
  make_dirs(out);
  // Several ranks (mpirun, or --gpus 0-1: a thread per GPU; tools/ranks.h): rank r predicts
  // images r, r + size, ... (each writes its own files); only rank 0 prints: what it loaded (every
  // rank loads the same files), and every image's lines, gathered round by round (round k: images
  // k*size .. k*size + size-1, one per rank) so they come in the list's order, as one process
  // prints them.
  run_ranks(cfg, f, [&](const RankContext& rank) {
    Communicator& comm = rank.comm;
    auto model = load_model_for_inference(cfg, choice, cfg.TEST.checkpoint, comm.rank() != 0, rank.device);
    const ClassTable classes = load_class_table(cfg);
    const AmpConfig amp = amp_config(cfg);
    data::TestDataset dataset(dataset_options(cfg, rank.flags), paths);
    data::EvalLoader loader(dataset, comm.rank(), comm.size());
    const int64_t ranks = comm.size(), rounds = (static_cast<int64_t>(paths.size()) + ranks - 1) / ranks;
    for (int64_t round = 0; round < rounds; ++round) {
      // A rank whose images are done (fewer in its share, or unreadable ones skipped) sends nothing.
      std::optional<data::EvalSample> sample = loader.next();
      const std::string text = sample ? predict_image(*model, *sample, amp, classes, out, npy) : std::string();
      if (ranks == 1) std::fputs(text.c_str(), stdout);
      else {
        const std::vector<std::string> texts = comm.allgather_string(text);
        if (comm.rank() == 0)
          for (const std::string& t : texts) std::fputs(t.c_str(), stdout);
      }
    }
    double skipped = static_cast<double>(loader.skipped());
    comm.allreduce_sum(&skipped, 1);
    comm.barrier();  // every rank's files are written
    if (comm.rank() == 0) {
      if (skipped > 0) std::printf("skipped %lld unreadable image(s)\n", static_cast<long long>(skipped));
      std::printf("results in %s\n", out.c_str());
    }
  });
  return 0;
}

}  // namespace seg::cli
