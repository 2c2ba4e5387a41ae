#include "tools/cli.h"

#include <cstdio>

#include "core/error.h"

namespace seg::cli {

const std::vector<Command>& commands() {
  static const std::vector<Command> list = {
      {"train", "train a model (upstream's train.py, plus AMP, resume, accumulation)", cmd_train},
      {"eval", "evaluate a checkpoint: per-class IoU, mIoU, pixel accuracy (eval.py)", cmd_eval},
      {"predict", "segment images: coloured and class-index PNGs, class ratios (test.py)", cmd_predict},
      {"bench", "time training steps of a model with a per-op table", cmd_bench},
      {"export", "write a model as one ONNX file, checked (encoder + decoder + softmax)", cmd_export},
      {"data", "check a dataset list, generate the synthetic dataset", cmd_data},
      {"demo", "train a small model on generated data, evaluate it, write predictions", cmd_demo},
      {"info", "build configuration, devices, CPU features", cmd_info},
  };
  return list;
}

bool wants_help(const Args& args) {
  for (const auto& a : args)
    if (a == "-h" || a == "--help") return true;
  return false;
}

namespace {
void print_usage() {
  std::printf("segtrain: train, evaluate and run ADE20K semantic-segmentation models\n\n");
  std::printf("usage: segtrain <command> [options]   (segtrain <command> --help for details)\n\n");
  std::printf("commands:\n");
  for (const auto& c : commands()) std::printf("  %-8s %s\n", c.name, c.summary);
}
}  // namespace

int run(const Args& args) {
  if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    print_usage();
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "--version") {
    std::printf("segtrain %s\n", SEG_VERSION);
    return 0;
  }
  for (const auto& c : commands())
    if (args[0] == c.name) return c.run(Args(args.begin() + 1, args.end()));
  std::string names;
  for (const auto& c : commands()) names += std::string(names.empty() ? "" : ", ") + c.name;
  throw Error(ErrorKind::usage, "unknown command '" + args[0] + "'").hint("use one of: " + names);
}

}  // namespace seg::cli
