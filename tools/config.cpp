#include "tools/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <variant>

#include "core/error.h"
#include "core/fileio.h"
#include "core/numbers.h"

namespace seg::cli {

namespace {

using Field = std::variant<std::string*, int64_t*, double*, bool*, std::vector<int64_t>*>;

struct Entry {
  const char* key;
  Field field;
  const char* help;  // one line for --help-keys
};

// The schema: every user key and the Config field behind it.
std::vector<Entry> schema(Config& c) {
  return {
      {"DIR", &c.DIR, "run folder: checkpoints, train state, config dump, history"},
      {"DATASET.root_dataset", &c.DATASET.root_dataset, "prefix joined to the paths in the odgt lists"},
      {"DATASET.list_train", &c.DATASET.list_train, "training list (.odgt, one JSON object per line)"},
      {"DATASET.list_val", &c.DATASET.list_val, "validation list (.odgt)"},
      {"DATASET.num_class", &c.DATASET.num_class, "number of classes (label values 1..num_class; 0 = unlabeled)"},
      {"DATASET.imgSizes", &c.DATASET.imgSizes, "training: one random short side per batch; eval: every size (multi-scale)"},
      {"DATASET.imgMaxSize", &c.DATASET.imgMaxSize, "cap on the long side"},
      {"DATASET.padding_constant", &c.DATASET.padding_constant, "network input height and width are rounded up to a multiple of this"},
      {"DATASET.segm_downsampling_rate", &c.DATASET.segm_downsampling_rate, "label downsampling factor in training"},
      {"DATASET.random_flip", &c.DATASET.random_flip, "mirror training samples with probability 0.5"},
      {"MODEL.arch_encoder", &c.MODEL.arch_encoder, "encoder name (docs/models.md lists them)"},
      {"MODEL.arch_decoder", &c.MODEL.arch_decoder, "decoder name; a name ending in _deepsup adds the deep-supervision loss"},
      {"MODEL.weights_encoder", &c.MODEL.weights_encoder, "encoder weights to start from (.safetensors; empty = random initialisation)"},
      {"MODEL.weights_decoder", &c.MODEL.weights_decoder, "decoder weights to start from (.safetensors; empty = random initialisation)"},
      {"MODEL.fc_dim", &c.MODEL.fc_dim, "decoder input channels (the encoder's output width)"},
      {"MODEL.bn_momentum", &c.MODEL.bn_momentum, "BatchNorm running-statistics momentum (ours; upstream's SyncBN value)"},
      {"TRAIN.batch_size_per_gpu", &c.TRAIN.batch_size_per_gpu, "images per batch"},
      {"TRAIN.num_epoch", &c.TRAIN.num_epoch, "epochs to train (may be raised on --resume to extend a run)"},
      {"TRAIN.start_epoch", &c.TRAIN.start_epoch, "upstream's resume: start from DIR/*_epoch_N with fresh optimizers"},
      {"TRAIN.epoch_iters", &c.TRAIN.epoch_iters, "optimizer steps per epoch (independent of the dataset size)"},
      {"TRAIN.optim", &c.TRAIN.optim, "optimizer; only SGD exists (as upstream)"},
      {"TRAIN.lr_encoder", &c.TRAIN.lr_encoder, "encoder base learning rate (poly schedule)"},
      {"TRAIN.lr_decoder", &c.TRAIN.lr_decoder, "decoder base learning rate (poly schedule)"},
      {"TRAIN.lr_pow", &c.TRAIN.lr_pow, "power of the poly learning-rate schedule"},
      {"TRAIN.beta1", &c.TRAIN.beta1, "SGD momentum"},
      {"TRAIN.weight_decay", &c.TRAIN.weight_decay, "weight decay (conv weights only, as upstream)"},
      {"TRAIN.deep_sup_scale", &c.TRAIN.deep_sup_scale, "weight of the deep-supervision loss"},
      {"TRAIN.fix_bn", &c.TRAIN.fix_bn, "keep BatchNorm in eval mode while training"},
      {"TRAIN.workers", &c.TRAIN.workers, "data loader threads (0 = decode on the training thread)"},
      {"TRAIN.disp_iter", &c.TRAIN.disp_iter, "log every N steps"},
      {"TRAIN.seed", &c.TRAIN.seed, "seed of initialisation, data order and augmentation"},
      {"TRAIN.accum_steps", &c.TRAIN.accum_steps, "gradient accumulation: batches per optimizer step (ours)"},
      {"TRAIN.amp", &c.TRAIN.amp, "mixed precision level O0..O3 (ours; --amp)"},
      {"TRAIN.amp_dtype", &c.TRAIN.amp_dtype, "half dtype f16 or bf16 (ours; --amp-dtype)"},
      {"TRAIN.loss_scale", &c.TRAIN.loss_scale, "'' = the level's default, dynamic, none or a number (ours; --loss-scale)"},
      {"TRAIN.eval_every", &c.TRAIN.eval_every, "validate every N epochs, 0 = never (ours)"},
      {"TRAIN.bn_recalibrate_iters", &c.TRAIN.bn_recalibrate_iters, "re-estimate BatchNorm statistics over N batches before validation (ours)"},
      {"TRAIN.detect_anomaly", &c.TRAIN.detect_anomaly, "name the first op whose output or gradient is inf/NaN (ours; --detect-anomaly)"},
      {"TRAIN.sub_batches_per_rank", &c.TRAIN.sub_batches_per_rank, "sub-batches (of batch_size_per_gpu images) each rank runs per step, their gradients averaged: one process reproduces N GPUs' batch (ours)"},
      {"TRAIN.sync_bn", &c.TRAIN.sync_bn, "with several ranks, BatchNorm statistics over all ranks' sub-batches, as upstream's SyncBN; false = per rank (ours)"},
      {"TRAIN.allreduce_dtype", &c.TRAIN.allreduce_dtype, "with several ranks, gradients travel in their storage dtype (storage: f16/bf16 for half models, half the bytes) or widened to f32 (ours)"},
      {"TRAIN.bucket_mb", &c.TRAIN.bucket_mb, "with several ranks, gradients are all-reduced in buckets of this many MB, during backward (ours)"},
      {"TRAIN.engine", &c.TRAIN.engine, "on CUDA devices, who runs convolutions and GEMMs: own (the project's kernels), cublaslt, cudnn or auto; no effect on the CPU (ours; --engine)"},
      {"TRAIN.deterministic", &c.TRAIN.deterministic, "on CUDA devices, cuDNN/cuBLASLt choose deterministic algorithms only (the own kernels always are); no effect on the CPU (ours; --deterministic)"},
      {"VAL.batch_size", &c.VAL.batch_size, "evaluation batch size (1, as upstream)"},
      {"VAL.visualize", &c.VAL.visualize, "write image | ground truth | prediction PNGs to DIR/result"},
      {"VAL.checkpoint", &c.VAL.checkpoint, "checkpoint eval loads: epoch_N.pth = DIR/encoder_epoch_N.safetensors + decoder"},
      {"VAL.max_images", &c.VAL.max_images, "evaluate only the first N images, 0 = all (ours)"},
      {"TEST.batch_size", &c.TEST.batch_size, "prediction batch size"},
      {"TEST.checkpoint", &c.TEST.checkpoint, "checkpoint predict loads (as VAL.checkpoint)"},
      {"TEST.result", &c.TEST.result, "output folder of predict"},
  };
}

Entry* find(std::vector<Entry>& s, const std::string& key) {
  for (auto& e : s)
    if (key == e.key) return &e;
  return nullptr;
}

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

[[noreturn]] void bad_value(const std::string& key, const std::string& value, const std::string& origin,
                            const char* expected) {
  throw Error(ErrorKind::usage, str("config key ", key, ": '", value, "' is not ", expected))
      .key(key)
      .with("from", origin);
}

bool parse_int(const std::string& text, int64_t& out) {
  const std::optional<int64_t> v = parse_int64(trim(text));
  if (v) out = *v;
  return v.has_value();
}

bool parse_double(const std::string& text, double& out) {
  const std::optional<double> v = parse_finite_double(trim(text));
  if (v) out = *v;
  return v.has_value();
}

// Well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, at most U+10FFFF). Every config is
// written out as JSON (config.json, the train state), and JSON text must be UTF-8: a value that is not
// would make that write fail after training started (found by the config fuzz targets).
bool is_utf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t len = 0;
    uint32_t cp = 0;
    if (c < 0x80) len = 1, cp = c;
    else if ((c & 0xE0) == 0xC0) len = 2, cp = c & 0x1F;
    else if ((c & 0xF0) == 0xE0) len = 3, cp = c & 0x0F;
    else if ((c & 0xF8) == 0xF0) len = 4, cp = c & 0x07;
    else return false;
    if (i + len > s.size()) return false;
    for (size_t k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    static constexpr uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

// `exact`: a JSON string, taken as it is; otherwise text from an override or a YAML scalar, which
// yacs would literal_eval (surrounding blanks dropped, "'abc'" and "\"abc\"" mean abc).
void assign(const Entry& e, const std::string& raw, const std::string& origin, bool exact = false) {
  std::string value = exact ? raw : trim(raw);
  if (!exact && value.size() >= 2 && (value.front() == '"' || value.front() == '\'') && value.back() == value.front())
    value = value.substr(1, value.size() - 2);
  std::visit(
      [&](auto* field) {
        using F = std::remove_pointer_t<decltype(field)>;
        if constexpr (std::is_same_v<F, std::string>) {
          if (!is_utf8(value))
            throw Error(ErrorKind::usage, str("config key ", e.key, ": the value is not UTF-8 text"))
                .key(e.key)
                .with("from", origin)
                .hint("config values are recorded as JSON (config.json, the train state); rename the path or "
                      "pass it as UTF-8");
          *field = value;
        } else if constexpr (std::is_same_v<F, int64_t>) {
          if (!parse_int(value, *field)) bad_value(e.key, value, origin, "an integer");
        } else if constexpr (std::is_same_v<F, double>) {
          if (!parse_double(value, *field)) bad_value(e.key, value, origin, "a number");
        } else if constexpr (std::is_same_v<F, bool>) {
          if (value == "True" || value == "true" || value == "1") *field = true;
          else if (value == "False" || value == "false" || value == "0") *field = false;
          else bad_value(e.key, value, origin, "a boolean (True/False)");
        } else {
          // "(300, 375)", "[300,375]", "300,375" or a single "300".
          std::string inner = value;
          if (!inner.empty() && (inner.front() == '(' || inner.front() == '[')) inner = inner.substr(1);
          if (!inner.empty() && (inner.back() == ')' || inner.back() == ']')) inner.pop_back();
          std::vector<int64_t> list;
          std::stringstream ss(inner);
          std::string item;
          while (std::getline(ss, item, ',')) {
            if (trim(item).empty()) continue;
            int64_t v = 0;
            if (!parse_int(item, v)) bad_value(e.key, value, origin, "a list of integers like (300, 375)");
            list.push_back(v);
          }
          if (list.empty()) bad_value(e.key, value, origin, "a non-empty list of integers");
          *field = list;
        }
      },
      e.field);
}

std::string render(const Entry& e) {
  return std::visit(
      [](auto* field) -> std::string {
        using F = std::remove_pointer_t<decltype(field)>;
        if constexpr (std::is_same_v<F, std::string>) return *field;
        else if constexpr (std::is_same_v<F, int64_t>) return std::to_string(*field);
        else if constexpr (std::is_same_v<F, double>) return format_double(*field);
        else if constexpr (std::is_same_v<F, bool>) return *field ? "True" : "False";
        else {
          std::string s = "(";
          for (size_t i = 0; i < field->size(); ++i) s += (i ? ", " : "") + std::to_string((*field)[i]);
          return s + ")";
        }
      },
      e.field);
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) == std::tolower(static_cast<unsigned char>(b[j - 1]));
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (same ? 0 : 1)});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

[[noreturn]] void unknown_key(const std::string& key, const std::string& origin) {
  throw Error(ErrorKind::usage, str("unknown config key '", key, "'"))
      .key(key)
      .with("from", origin)
      .hint("did you mean " + closest_key(key) + "? (segtrain train --help-keys lists every key)");
}

// True when some key starts with "section." (the tree is two levels deep: a nested object under
// anything else is an unknown key, reported before recursing into it).
bool is_section(const std::string& section) {
  for (const std::string& k : Config::keys())
    if (k.size() > section.size() && k.compare(0, section.size(), section) == 0 && k[section.size()] == '.') return true;
  return false;
}

// Flattens a JSON tree into dotted keys.
void apply_json(Config& cfg, const nlohmann::json& j, const std::string& prefix, const std::string& origin) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string key = prefix.empty() ? it.key() : prefix + "." + it.key();
    if (it->is_object()) {
      if (!is_section(key)) unknown_key(key, origin);
      apply_json(cfg, *it, key, origin);
      continue;
    }
    std::string text;
    if (it->is_string()) {
      cfg.set_exact(key, it->get<std::string>(), origin);
      continue;
    } else if (it->is_boolean()) text = it->get<bool>() ? "True" : "False";
    else if (it->is_array()) {
      text = "(";
      for (const auto& v : *it) {
        if (!v.is_number_integer()) throw Error(ErrorKind::usage, str("config key ", key, " must hold integers")).key(key).with("from", origin);
        text += v.dump() + ",";
      }
      text += ")";
    } else if (it->is_number()) {
      // nlohmann prints integers exactly and doubles as the shortest text that reads back the same
      // value, so a 3.7 in the file is echoed as 3.7 in messages.
      text = it->dump();
    } else if (it->is_null()) text = "";
    cfg.set(key, text, origin);
  }
}

void apply_yaml(Config& cfg, const YAML::Node& node, const std::string& prefix, const std::string& origin) {
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string name = it->first.as<std::string>();
    const std::string key = prefix.empty() ? name : prefix + "." + name;
    const YAML::Node value = it->second;
    if (value.IsMap()) {
      if (!is_section(key)) unknown_key(key, origin);
      apply_yaml(cfg, value, key, origin);
    } else if (value.IsSequence()) {
      std::string text = "(";
      for (std::size_t i = 0; i < value.size(); ++i) text += value[i].as<std::string>() + ",";
      cfg.set(key, text + ")", origin);
    } else if (value.IsNull()) {
      cfg.set(key, "", origin);
    } else {
      cfg.set(key, value.as<std::string>(), origin);
    }
  }
}

}  // namespace

std::vector<std::string> Config::keys() {
  Config c;
  std::vector<std::string> out;
  for (const auto& e : schema(c)) out.emplace_back(e.key);
  return out;
}

void Config::set(const std::string& key, const std::string& value, const std::string& origin) {
  auto s = schema(*this);
  Entry* e = find(s, key);
  if (!e) unknown_key(key, origin);
  assign(*e, value, origin);
}

void Config::set_exact(const std::string& key, const std::string& value, const std::string& origin) {
  auto s = schema(*this);
  Entry* e = find(s, key);
  if (!e) unknown_key(key, origin);
  assign(*e, value, origin, true);
}

std::string Config::get(const std::string& key) const {
  auto s = schema(const_cast<Config&>(*this));
  const Entry* e = find(s, key);
  if (!e) unknown_key(key, "get");
  return render(*e);
}

nlohmann::json Config::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& e : schema(const_cast<Config&>(*this))) {
    const std::string key = e.key;
    nlohmann::json* node = &j;
    size_t start = 0, dot;
    while ((dot = key.find('.', start)) != std::string::npos) {
      node = &(*node)[key.substr(start, dot - start)];
      start = dot + 1;
    }
    nlohmann::json& leaf = (*node)[key.substr(start)];
    std::visit([&](auto* f) { leaf = *f; }, e.field);
  }
  return j;
}

std::string closest_key(const std::string& typed) {
  // Edit distance costs |typed| x |known key| per key: a 140 kB key made the config fuzz target spend
  // 27 s here (CI's fuzz stage, a libFuzzer timeout). No key is longer than kLongest characters, so
  // beyond twice that nothing is a typo of one; the suggestion compares only that much.
  static const size_t kLongest = [] {
    size_t n = 0;
    for (const std::string& k : Config::keys()) n = std::max(n, k.size());
    return n;
  }();
  const std::string key = typed.substr(0, 2 * kLongest);
  auto split = [](const std::string& k) {
    const size_t dot = k.rfind('.');
    return dot == std::string::npos ? std::make_pair(std::string(), k) : std::make_pair(k.substr(0, dot), k.substr(dot + 1));
  };
  const auto [section, name] = split(key);
  std::string best;
  size_t best_score = SIZE_MAX;
  for (const std::string& k : Config::keys()) {
    const auto [ksection, kname] = split(k);
    const bool same_section = edit_distance(section, ksection) == 0;
    // A name cut short in the right section ("TRAIN.batch_size") is the likeliest slip; then a typo
    // anywhere in the key; then the right name in the wrong section.
    size_t score = edit_distance(key, k) * 2;
    if (same_section && (kname.rfind(name, 0) == 0 || name.rfind(kname, 0) == 0)) score = std::min<size_t>(score, 1);
    score = std::min(score, edit_distance(name, kname) * 2 + (same_section ? 0 : 5));
    if (score < best_score) {
      best_score = score;
      best = k;
    }
  }
  return best;
}

Config load_config_text(const std::string& text, ConfigFormat format, const std::string& origin,
                        const std::vector<std::string>& overrides) {
  Config cfg;
  if (format == ConfigFormat::yaml) {
    YAML::Node root;
    try {
      root = YAML::Load(text);
    } catch (const YAML::Exception& e) {
      throw Error(ErrorKind::usage, str("cannot parse YAML: ", e.msg)).file(origin, e.mark.is_null() ? -1 : e.mark.line + 1);
    }
    if (root.IsMap()) {
      try {
        apply_yaml(cfg, root, "", origin);
      } catch (const YAML::Exception& e) {  // e.g. a map used as a key, a nested list
        throw Error(ErrorKind::usage, str("cannot read YAML config: ", e.msg)).file(origin, e.mark.is_null() ? -1 : e.mark.line + 1);
      }
    } else if (!root.IsNull()) {
      throw Error(ErrorKind::usage, "config must be a YAML mapping of keys").file(origin);
    }
  } else if (format == ConfigFormat::json) {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
      throw Error(ErrorKind::usage, str("cannot parse JSON: ", e.what())).file(origin);
    }
    if (!j.is_object()) throw Error(ErrorKind::usage, "config must be a JSON object").file(origin);
    apply_json(cfg, j, "", origin);
  }
  if (overrides.size() % 2 != 0)
    throw Error(ErrorKind::usage, str("overrides come in KEY VALUE pairs; '", overrides.back(), "' has no value"))
        .key(overrides.back());
  for (size_t i = 0; i < overrides.size(); i += 2) cfg.set(overrides[i], overrides[i + 1], "command line");
  return cfg;
}

Config load_config(const std::string& path, const std::vector<std::string>& overrides) {
  if (path.empty()) return load_config_text("", ConfigFormat::none, "", overrides);
  if (!file_exists(path))
    throw Error(ErrorKind::usage, "config file not found: " + path).file(path).hint("pass --cfg with an existing .json or .yaml file");
  const bool yaml = path.size() > 5 && (path.substr(path.size() - 5) == ".yaml" || path.substr(path.size() - 4) == ".yml");
  const std::vector<char> bytes = read_file(path);
  return load_config_text(std::string(bytes.begin(), bytes.end()), yaml ? ConfigFormat::yaml : ConfigFormat::json, path,
                          overrides);
}

std::vector<ConfigKeyInfo> config_key_table() {
  Config c;
  std::vector<ConfigKeyInfo> out;
  for (const auto& e : schema(c)) {
    const char* type = std::visit(
        [](auto* field) -> const char* {
          using F = std::remove_pointer_t<decltype(field)>;
          if constexpr (std::is_same_v<F, std::string>) return "string";
          else if constexpr (std::is_same_v<F, int64_t>) return "integer";
          else if constexpr (std::is_same_v<F, double>) return "number";
          else if constexpr (std::is_same_v<F, bool>) return "boolean";
          else return "integer list";
        },
        e.field);
    out.push_back({e.key, type, render(e), e.help});
  }
  return out;
}

std::string format_config_keys() {
  std::string out =
      "config keys (upstream's tree; ours marked 'ours'). Set them in the --cfg file or as trailing\n"
      "KEY VALUE overrides, e.g. TRAIN.num_epoch 5 or DATASET.imgSizes \"(300, 375)\".\n\n";
  char line[512];
  std::snprintf(line, sizeof line, "  %-32s %-13s %-40s %s\n", "key", "type", "default", "meaning");
  out += line;
  for (const ConfigKeyInfo& k : config_key_table()) {
    const std::string def = k.default_value.empty() ? "''" : k.default_value;
    std::snprintf(line, sizeof line, "  %-32s %-13s %-40s %s\n", k.key.c_str(), k.type.c_str(), def.c_str(), k.help.c_str());
    out += line;
  }
  return out;
}

void dump_config(const Config& cfg, const nlohmann::json& derived, const std::string& path) {
  nlohmann::json j = cfg.to_json();
  j["derived"] = derived;
  const std::string text = j.dump(2) + "\n";
  write_file_atomic(path, text.data(), text.size());
}

std::string checkpoint_file(const std::string& checkpoint, const std::string& part) {
  std::string stem = checkpoint;
  for (const char* ext : {".pth", ".safetensors"}) {
    const std::string e = ext;
    if (stem.size() > e.size() && stem.substr(stem.size() - e.size()) == e) stem = stem.substr(0, stem.size() - e.size());
  }
  return part + "_" + stem + ".safetensors";
}

}  // namespace seg::cli
