// segtrain data: dataset tools. `data check` validates a list, `data synth` writes the synthetic
// dataset. The work is done in data/ (data/dataset_check.h, data/synth_dataset.h); this file only
// parses arguments and prints.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/numbers.h"
#include "data/class_info.h"
#include "data/dataset_check.h"
#include "data/synth_dataset.h"
#include "tools/cli.h"

namespace seg::cli {

namespace {

const char* kDataUsage =
    "usage: segtrain data <check|synth> [options]\n"
    "\n"
    "  check LIST   validate a dataset list (.odgt) and print a class histogram\n"
    "  synth        write the synthetic dataset (ADE20K format, 10 classes)\n"
    "\n"
    "segtrain data check --help and segtrain data synth --help give the options.\n"
    "\n"
    "examples:\n"
    "  segtrain data synth --out data-gen/synth\n"
    "  segtrain data check data-gen/synth/validation.odgt --root data-gen/synth --num-class 10\n";

const char* kCheckUsage =
    "usage: segtrain data check LIST [--root DIR] [--num-class N] [--classes CSV] [--threads N]\n"
    "\n"
    "Checks every entry of the odgt list LIST: the image and label files exist and decode, the label\n"
    "is 8-bit single-channel with values 0..N (0 = unlabeled), image and label have the same size,\n"
    "and width/height in the list (when present) are the image's. Prints every problem with its list\n"
    "line, then the class histogram (pixel share and number of images per label value).\n"
    "\n"
    "options:\n"
    "  --root DIR       prefix for the paths in the list (DATASET.root_dataset; default: none)\n"
    "  --num-class N    highest valid label value (DATASET.num_class); default: not checked\n"
    "  --classes CSV    class names (object<N>_info.csv format) for the histogram; default: an\n"
    "                   object*_info.csv next to LIST, if there is one\n"
    "  --threads N      decoding threads (default: all cores)\n"
    "\n"
    "exit status: 0 when every entry is good, 3 when some are bad or the list is unreadable.\n"
    "\n"
    "examples:\n"
    "  segtrain data check data-gen/synth/validation.odgt --root data-gen/synth --num-class 10\n"
    "  segtrain data check ./data/training.odgt --root ./data/ --num-class 150 --classes data/ade20k/object150_info.csv\n";

const char* kSynthUsage =
    "usage: segtrain data synth [--out DIR] [--train N] [--val N] [--seed S] [--classes N]\n"
    "                           [--size MIN-MAX] [--aspect MIN-MAX] [--portrait F] [--quality Q] [--threads N]\n"
    "\n"
    "Writes a synthetic semantic-segmentation dataset in ADE20K's format: JPEG images, 8-bit label\n"
    "PNGs (0 = unlabeled), training.odgt and validation.odgt (paths relative to DIR, so use\n"
    "DATASET.root_dataset DIR), object<N>_info.csv and color<N>.csv. The same options always give the\n"
    "same files. Classes (told apart by shape and texture; colours overlap on purpose):\n"
    "%s"
    "\n"
    "options:\n"
    "  --out DIR        output directory (default: data-gen/synth)\n"
    "  --train N        training images (default: 2000)\n"
    "  --val N          validation images (default: 200)\n"
    "  --seed S         generator seed (default: 1)\n"
    "  --classes N      use the first N classes, 6..10 (default: 10; fewer object kinds = easier)\n"
    "  --size MIN-MAX   long side in pixels (default: 160-256)\n"
    "  --aspect MIN-MAX long side / short side (default: 1.1-1.6)\n"
    "  --portrait F     fraction of portrait images (default: 0.3)\n"
    "  --quality Q      JPEG quality (default: 90)\n"
    "  --threads N      threads (default: all cores)\n"
    "\n"
    "examples:\n"
    "  segtrain data synth --out data-gen/synth\n"
    "  segtrain data synth --out /tmp/tiny --train 64 --val 16 --size 96-128 --seed 7\n";

// --name value pairs and positional arguments; every option must be known.
struct Parsed {
  std::vector<std::string> positional;
  std::map<std::string, std::string> options;
};

Parsed parse(const Args& args, const std::vector<std::string>& known, const char* command) {
  Parsed p;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.rfind("--", 0) != 0) {
      p.positional.push_back(a);
      continue;
    }
    bool ok = false;
    for (const auto& k : known) ok = ok || k == a;
    if (!ok) throw Error(ErrorKind::usage, str("unknown option ", a, " for ", command)).hint(str("see ", command, " --help"));
    if (i + 1 >= args.size()) throw Error(ErrorKind::usage, str("option ", a, " needs a value")).key(a);
    p.options[a] = args[++i];
  }
  return p;
}

long long to_int(const std::string& text, const std::string& option) { return int_flag(option, text); }

double to_double(const std::string& text, const std::string& option) { return number_flag(option, text); }

// "MIN-MAX" (or a single value for both).
std::pair<double, double> to_range(const std::string& text, const std::string& option) {
  const size_t dash = text.find('-', 1);
  if (dash == std::string::npos) {
    const double v = to_double(text, option);
    return {v, v};
  }
  return {to_double(text.substr(0, dash), option), to_double(text.substr(dash + 1), option)};
}

std::string find_class_csv(const std::string& list) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path dir = fs::path(list).parent_path().empty() ? fs::path(".") : fs::path(list).parent_path();
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("object", 0) == 0 && name.size() > 9 && name.substr(name.size() - 9) == "_info.csv")
      return entry.path().string();
  }
  return "";
}

int data_check(const Args& args) {
  if (wants_help(args)) {
    std::printf("%s", kCheckUsage);
    return 0;
  }
  const Parsed p = parse(args, {"--root", "--num-class", "--classes", "--threads"}, "segtrain data check");
  if (p.positional.size() != 1)
    throw Error(ErrorKind::usage, "segtrain data check needs exactly one LIST argument").hint(
        "e.g. segtrain data check data-gen/synth/validation.odgt --root data-gen/synth");
  data::DatasetCheckOptions o;
  o.list = p.positional[0];
  if (p.options.count("--root")) o.root = p.options.at("--root");
  if (p.options.count("--num-class")) {
    o.num_class = static_cast<int>(int_flag("--num-class", p.options.at("--num-class"), 1, 255));
  }
  if (p.options.count("--threads")) o.threads = static_cast<int>(int_flag("--threads", p.options.at("--threads"), 1, 4096));
  const std::string classes_csv = p.options.count("--classes") ? p.options.at("--classes") : find_class_csv(o.list);
  std::vector<data::ClassInfo> classes;
  if (!classes_csv.empty()) classes = data::read_class_info_csv(classes_csv);

  const data::DatasetCheckReport r = data::check_dataset(o);
  std::printf("checked %lld entries of %s in %.1f s: %lld good, %zu bad\n", static_cast<long long>(r.entries),
              o.list.c_str(), r.seconds, static_cast<long long>(r.good), r.problems.size());
  for (const auto& problem : r.problems) std::printf("\nline %d: %s\n", problem.line, problem.message.c_str());
  if (r.good > 0) {
    std::printf("\nimages: %lld landscape, %lld portrait; sides %d..%d px\n",
                static_cast<long long>(r.good - r.portrait), static_cast<long long>(r.portrait), r.min_side, r.max_side);
    int64_t total = 0;
    for (int64_t v : r.pixels) total += v;
    const int highest = std::max(r.max_label, o.num_class);
    std::printf("\nclass histogram%s:\n  %5s  %-24s %12s %8s %8s\n", classes_csv.empty() ? "" : str(" (names from ", classes_csv, ")").c_str(),
                "label", "class", "pixels", "share", "images");
    for (int v = 0; v <= highest; ++v) {
      const std::string name = v == 0 ? "(unlabeled)"
                               : v <= static_cast<int>(classes.size()) ? classes[v - 1].short_name()
                                                                        : "";
      std::printf("  %5d  %-24s %12lld %7.3f%% %8lld%s\n", v, name.c_str(), static_cast<long long>(r.pixels[v]),
                  100.0 * static_cast<double>(r.pixels[v]) / static_cast<double>(total),
                  static_cast<long long>(r.images[v]), v > 0 && r.images[v] == 0 ? "  (never appears)" : "");
    }
  }
  if (!r.problems.empty())
    throw Error(ErrorKind::data, str(r.problems.size(), " of ", r.entries, " entries are bad (listed above)"))
        .file(o.list)
        .hint("fix or remove them, or train with --on-bad-sample skip");
  return 0;
}

int data_synth(const Args& args) {
  if (wants_help(args)) {
    std::string classes;
    const auto& list = data::synth::synth_classes();
    for (size_t k = 0; k < list.size(); ++k) {
      char row[256];
      std::snprintf(row, sizeof row, "  %3zu %-20s %s\n", k + 1, list[k].name, list[k].looks);
      classes += row;
    }
    std::printf(kSynthUsage, classes.c_str());
    return 0;
  }
  const Parsed p = parse(args,
                         {"--out", "--train", "--val", "--seed", "--classes", "--size", "--aspect", "--portrait", "--quality",
                          "--threads"},
                         "segtrain data synth");
  if (!p.positional.empty())
    throw Error(ErrorKind::usage, str("unexpected argument '", p.positional[0], "'")).hint("see segtrain data synth --help");
  data::SynthOptions o;
  auto get = [&](const char* name) { return p.options.count(name) ? p.options.at(name) : std::string(); };
  if (!get("--out").empty()) o.out_dir = get("--out");
  if (!get("--train").empty()) o.num_train = to_int(get("--train"), "--train");
  if (!get("--val").empty()) o.num_val = to_int(get("--val"), "--val");
  if (!get("--seed").empty()) o.seed = static_cast<uint64_t>(int_flag("--seed", get("--seed"), 0));
  if (!get("--classes").empty()) o.num_class = static_cast<int>(int_flag("--classes", get("--classes"), 6, 10));
  if (!get("--size").empty()) {
    const auto [lo, hi] = to_range(get("--size"), "--size");
    o.min_long_side = static_cast<int>(lo);
    o.max_long_side = static_cast<int>(hi);
  }
  if (!get("--aspect").empty()) std::tie(o.min_aspect, o.max_aspect) = to_range(get("--aspect"), "--aspect");
  if (!get("--portrait").empty()) o.portrait_fraction = to_double(get("--portrait"), "--portrait");
  if (!get("--quality").empty()) o.jpeg_quality = static_cast<int>(int_flag("--quality", get("--quality"), 1, 100));
  if (!get("--threads").empty()) o.threads = static_cast<int>(int_flag("--threads", get("--threads"), 1, 4096));
  o.validate();

  const data::SynthReport r = data::generate_synthetic_dataset(o);
  std::printf("wrote %lld images (%lld train, %lld val; %lld portrait) to %s in %.1f s (%.0f images/s)\n",
              static_cast<long long>(r.images), static_cast<long long>(o.num_train), static_cast<long long>(o.num_val),
              static_cast<long long>(r.portrait), r.out_dir.c_str(), r.seconds, r.images / std::max(r.seconds, 1e-9));
  std::printf("  lists:   %s, %s\n  classes: %s (%d classes), palette %s\n", r.list_train.c_str(), r.list_val.c_str(),
              r.class_info.c_str(), r.num_class, r.palette.c_str());
  std::printf("  train with: DATASET.root_dataset %s DATASET.list_train %s DATASET.list_val %s DATASET.num_class %d\n",
              r.out_dir.c_str(), r.list_train.c_str(), r.list_val.c_str(), r.num_class);
  return 0;
}

}  // namespace

int cmd_data(const Args& args) {
  if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    std::printf("%s", kDataUsage);
    return args.empty() ? 2 : 0;
  }
  const Args rest(args.begin() + 1, args.end());
  if (args[0] == "check") return data_check(rest);
  if (args[0] == "synth") return data_synth(rest);
  throw Error(ErrorKind::usage, str("unknown data command '", args[0], "'")).hint("use 'segtrain data check' or 'segtrain data synth'");
}

}  // namespace seg::cli
