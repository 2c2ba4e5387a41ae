// segtrain export: a trained model as one ONNX file (tools/onnx_export.h; docs/export.md).
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "core/error.h"
#include "tools/cli.h"
#include "tools/model_setup.h"
#include "tools/run_setup.h"
#ifdef SEG_WITH_ONNX
#include "tools/onnx_export.h"
#endif

namespace seg::cli {

namespace {

const char* kUsage =
    "usage: segtrain export --cfg FILE [--checkpoint NAME | --encoder F --decoder F] --onnx OUT.onnx\n"
    "                       --size HxW [--dynamic-batch] [--opset N] [--half] [--no-fold-bn] [--non-strict]\n"
    "                       [KEY VALUE ...]\n"
    "\n"
    "Writes the model of the config (encoder, decoder and inference head joined) as one ONNX file:\n"
    "  input  'image'          f32 [1, 3, H, W] (NCHW, RGB), normalised as upstream: (x/255 - mean) / std\n"
    "  output 'probabilities'  f32 [1, num_class, H, W]: softmax class probabilities at the input size,\n"
    "                          the same values `segtrain predict --npy` writes for one scale\n"
    "Weights come from the checkpoint (TEST.checkpoint unless --checkpoint/--encoder/--decoder say\n"
    "otherwise), under upstream's parameter names. The file is checked with the ONNX checker.\n"
    "\n"
    "  --size HxW        input size (or one number for a square); a multiple of DATASET.padding_constant.\n"
    "                    PPM's adaptive pooling is written as fixed ops for this size, exactly\n"
    "  --dynamic-batch   the batch dimension is a symbol 'N' instead of 1\n"
    "  --opset N         ONNX opset, 13 to 17 (default 17)\n"
    "  --half            f16 weights and arithmetic inside; input and output stay f32\n"
    "  --no-fold-bn      keep BatchNormalization nodes (default: folded into the preceding Conv)\n"
    "\n"
    "Example:\n"
    "  segtrain export --cfg configs/ade20k-resnet50dilated-ppm_deepsup.json --checkpoint epoch_20.pth \\\n"
    "      --onnx r50-ppm.onnx --size 512x512\n";

int64_t parse_positive(const std::string& flag, const std::string& text) {
  size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || v <= 0)
    throw Error(ErrorKind::usage, str(flag, ": '", text, "' is not a positive integer")).hint("see segtrain export --help");
  return v;
}

// "512x384" -> {512, 384} (height x width); "512" -> {512, 512}.
std::pair<int64_t, int64_t> parse_size(const std::string& text) {
  const size_t x = text.find_first_of("xX");
  if (x == std::string::npos) {
    const int64_t s = parse_positive("--size", text);
    return {s, s};
  }
  return {parse_positive("--size", text.substr(0, x)), parse_positive("--size", text.substr(x + 1))};
}

// The output must be creatable: checked before the (slow) trace, so a bad path costs nothing.
void check_output_path(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path p(path);
  if (path.empty() || fs::is_directory(p))
    throw Error(ErrorKind::usage, str("--onnx: '", path, "' is not a file name")).file(path);
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  if (!fs::is_directory(dir))
    throw Error(ErrorKind::usage, str("--onnx: the folder ", dir.string(), " does not exist")).file(path).hint("create it first");
  if (::access(dir.c_str(), W_OK) != 0)
    throw Error(ErrorKind::usage, str("--onnx: the folder ", dir.string(), " is not writable")).file(path);
}

}  // namespace

int cmd_export(const Args& args) {
  if (wants_help(args)) {
    std::printf("%s", kUsage);
    return 0;
  }
  const CommonFlags flags = parse_common_flags(args, {"--dynamic-batch", "--half", "--no-fold-bn", "--non-strict"},
                                               {"--onnx", "--size", "--opset", "--checkpoint", "--encoder", "--decoder"});
  CheckpointChoice choice;
  std::string onnx_path, size_text;
  bool dynamic_batch = false, half = false, fold_bn = true;
  int opset = 17;
  for (size_t i = 0; i < flags.rest.size(); ++i) {
    const std::string& a = flags.rest[i];
    if (a == "--dynamic-batch") dynamic_batch = true;
    else if (a == "--half") half = true;
    else if (a == "--no-fold-bn") fold_bn = false;
    else if (a == "--non-strict") choice.strict = false;
    else if (a == "--onnx") onnx_path = flags.rest[++i];
    else if (a == "--size") size_text = flags.rest[++i];
    else if (a == "--opset") opset = static_cast<int>(parse_positive("--opset", flags.rest[++i]));
    else if (a == "--checkpoint") choice.checkpoint = flags.rest[++i];
    else if (a == "--encoder") choice.encoder = flags.rest[++i];
    else if (a == "--decoder") choice.decoder = flags.rest[++i];
  }
  if (flags.cfg_path.empty() || onnx_path.empty() || size_text.empty())
    throw Error(ErrorKind::usage, "segtrain export needs --cfg FILE, --onnx OUT.onnx and --size HxW")
        .hint("see segtrain export --help");
  const auto [height, width] = parse_size(size_text);
  if (opset < 13 || opset > 17)
    throw Error(ErrorKind::usage, str("--opset ", opset, " is not supported: use 13 to 17")).hint("the default is 17");
  check_output_path(onnx_path);
#ifndef SEG_WITH_ONNX
  (void)dynamic_batch, (void)half, (void)fold_bn, (void)height, (void)width;
  throw Error(ErrorKind::usage, "this segtrain was built without ONNX support")
      .hint("install Debian's libonnx-dev (tools/install-deps.sh does) and rebuild");
#else
  const Config cfg = load_run_config(flags);
  const int64_t pad = cfg.DATASET.padding_constant;
  if (height % pad != 0 || width % pad != 0)
    throw Error(ErrorKind::usage, str("--size ", height, "x", width, " is not a multiple of DATASET.padding_constant (",
                                      pad, ") of this config"))
        .key("DATASET.padding_constant")
        .hint(str("use e.g. ", (height + pad - 1) / pad * pad, "x", (width + pad - 1) / pad * pad,
                  ", the size `segtrain predict` would feed the model"));
  auto model = load_model_for_inference(cfg, choice, cfg.TEST.checkpoint);
  const ClassTable classes = load_class_table(cfg);
  OnnxExportOptions opt;
  opt.height = height;
  opt.width = width;
  opt.dynamic_batch = dynamic_batch;
  opt.opset = opset;
  opt.half = half;
  opt.fold_bn = fold_bn;
  opt.metadata = {
      {"segtrain.version", SEG_VERSION},
      {"segtrain.config", cfg.to_json().dump()},
      {"segtrain.class_names", nlohmann::json(classes.names).dump()},
      {"segtrain.mean", "[0.485, 0.456, 0.406]"},
      {"segtrain.std", "[0.229, 0.224, 0.225]"},
      {"segtrain.input", str("image: f32 [", dynamic_batch ? "N" : "1", ", 3, ", height, ", ", width,
                             "] RGB, (x / 255 - mean) / std per channel")},
      {"segtrain.output", str("probabilities: f32 [", dynamic_batch ? "N" : "1", ", ", classes.names.size(), ", ",
                              height, ", ", width, "] softmax over classes")},
  };
  const OnnxExportReport r = export_onnx(*model, opt, onnx_path);
  std::printf("exported %s + %s at %lldx%lld to %s (%.1f MB): %lld nodes, %lld initializers", model->encoder->arch().c_str(),
              model->decoder->arch().c_str(), static_cast<long long>(height), static_cast<long long>(width),
              onnx_path.c_str(), static_cast<double>(r.bytes) / 1e6, static_cast<long long>(r.nodes),
              static_cast<long long>(r.initializers));
  if (r.folded_bn) std::printf(", %lld BatchNorms folded into convolutions", static_cast<long long>(r.folded_bn));
  if (r.uneven_pools)
    std::printf(", %lld adaptive pools with uneven bins written per bin", static_cast<long long>(r.uneven_pools));
  std::printf("\nops:");
  for (const auto& [op, n] : r.op_counts) std::printf(" %s %lld", op.c_str(), static_cast<long long>(n));
  std::printf("\nchecked with onnx::checker (opset %d)\n", opset);
  return 0;
#endif
}

}  // namespace seg::cli
