#include "tools/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <variant>

#include "core/error.h"
#include "core/fileio.h"

namespace seg::cli {

namespace {

using Field = std::variant<std::string*, int64_t*, double*, bool*, std::vector<int64_t>*>;

struct Entry {
  const char* key;
  Field field;
};

// The schema: every user key and the Config field behind it.
std::vector<Entry> schema(Config& c) {
  return {
      {"DIR", &c.DIR},
      {"DATASET.root_dataset", &c.DATASET.root_dataset},
      {"DATASET.list_train", &c.DATASET.list_train},
      {"DATASET.list_val", &c.DATASET.list_val},
      {"DATASET.num_class", &c.DATASET.num_class},
      {"DATASET.imgSizes", &c.DATASET.imgSizes},
      {"DATASET.imgMaxSize", &c.DATASET.imgMaxSize},
      {"DATASET.padding_constant", &c.DATASET.padding_constant},
      {"DATASET.segm_downsampling_rate", &c.DATASET.segm_downsampling_rate},
      {"DATASET.random_flip", &c.DATASET.random_flip},
      {"MODEL.arch_encoder", &c.MODEL.arch_encoder},
      {"MODEL.arch_decoder", &c.MODEL.arch_decoder},
      {"MODEL.weights_encoder", &c.MODEL.weights_encoder},
      {"MODEL.weights_decoder", &c.MODEL.weights_decoder},
      {"MODEL.fc_dim", &c.MODEL.fc_dim},
      {"MODEL.bn_momentum", &c.MODEL.bn_momentum},
      {"TRAIN.batch_size_per_gpu", &c.TRAIN.batch_size_per_gpu},
      {"TRAIN.num_epoch", &c.TRAIN.num_epoch},
      {"TRAIN.start_epoch", &c.TRAIN.start_epoch},
      {"TRAIN.epoch_iters", &c.TRAIN.epoch_iters},
      {"TRAIN.optim", &c.TRAIN.optim},
      {"TRAIN.lr_encoder", &c.TRAIN.lr_encoder},
      {"TRAIN.lr_decoder", &c.TRAIN.lr_decoder},
      {"TRAIN.lr_pow", &c.TRAIN.lr_pow},
      {"TRAIN.beta1", &c.TRAIN.beta1},
      {"TRAIN.weight_decay", &c.TRAIN.weight_decay},
      {"TRAIN.deep_sup_scale", &c.TRAIN.deep_sup_scale},
      {"TRAIN.fix_bn", &c.TRAIN.fix_bn},
      {"TRAIN.workers", &c.TRAIN.workers},
      {"TRAIN.disp_iter", &c.TRAIN.disp_iter},
      {"TRAIN.seed", &c.TRAIN.seed},
      {"TRAIN.accum_steps", &c.TRAIN.accum_steps},
      {"TRAIN.amp", &c.TRAIN.amp},
      {"TRAIN.amp_dtype", &c.TRAIN.amp_dtype},
      {"TRAIN.loss_scale", &c.TRAIN.loss_scale},
      {"TRAIN.eval_every", &c.TRAIN.eval_every},
      {"TRAIN.bn_recalibrate_iters", &c.TRAIN.bn_recalibrate_iters},
      {"TRAIN.detect_anomaly", &c.TRAIN.detect_anomaly},
      {"VAL.batch_size", &c.VAL.batch_size},
      {"VAL.visualize", &c.VAL.visualize},
      {"VAL.checkpoint", &c.VAL.checkpoint},
      {"VAL.max_images", &c.VAL.max_images},
      {"TEST.batch_size", &c.TEST.batch_size},
      {"TEST.checkpoint", &c.TEST.checkpoint},
      {"TEST.result", &c.TEST.result},
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
  const std::string t = trim(text);
  if (t.empty()) return false;
  char* end = nullptr;
  const long long v = std::strtoll(t.c_str(), &end, 10);
  if (*end) return false;
  out = v;
  return true;
}

bool parse_double(const std::string& text, double& out) {
  const std::string t = trim(text);
  if (t.empty()) return false;
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (*end || !std::isfinite(v)) return false;
  out = v;
  return true;
}

void assign(const Entry& e, const std::string& raw, const std::string& origin) {
  std::string value = trim(raw);
  // yacs literal_eval strings: "'abc'" or "\"abc\"" -> abc
  if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') && value.back() == value.front())
    value = value.substr(1, value.size() - 2);
  std::visit(
      [&](auto* field) {
        using F = std::remove_pointer_t<decltype(field)>;
        if constexpr (std::is_same_v<F, std::string>) {
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
        else if constexpr (std::is_same_v<F, double>) {
          std::ostringstream os;
          os << *field;
          return os.str();
        } else if constexpr (std::is_same_v<F, bool>) return *field ? "True" : "False";
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
      .hint("did you mean " + closest_key(key) + "? (segtrain train --help lists the keys)");
}

// Flattens a JSON tree into dotted keys.
void apply_json(Config& cfg, const nlohmann::json& j, const std::string& prefix, const std::string& origin) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string key = prefix.empty() ? it.key() : prefix + "." + it.key();
    if (it->is_object()) {
      apply_json(cfg, *it, key, origin);
      continue;
    }
    std::string text;
    if (it->is_string()) text = it->get<std::string>();
    else if (it->is_boolean()) text = it->get<bool>() ? "True" : "False";
    else if (it->is_array()) {
      text = "(";
      for (const auto& v : *it) {
        if (!v.is_number_integer()) throw Error(ErrorKind::usage, str("config key ", key, " must hold integers")).key(key).with("from", origin);
        text += std::to_string(v.get<int64_t>()) + ",";
      }
      text += ")";
    } else if (it->is_number_integer()) text = std::to_string(it->get<int64_t>());
    else if (it->is_number()) {
      std::ostringstream os;
      os.precision(17);
      os << it->get<double>();
      text = os.str();
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

std::string closest_key(const std::string& key) {
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

Config load_config(const std::string& path, const std::vector<std::string>& overrides) {
  Config cfg;
  if (!path.empty()) {
    if (!file_exists(path))
      throw Error(ErrorKind::usage, "config file not found: " + path).file(path).hint("pass --cfg with an existing .json or .yaml file");
    const bool yaml = path.size() > 5 && (path.substr(path.size() - 5) == ".yaml" || path.substr(path.size() - 4) == ".yml");
    if (yaml) {
      YAML::Node root;
      try {
        root = YAML::LoadFile(path);
      } catch (const YAML::Exception& e) {
        throw Error(ErrorKind::usage, str("cannot parse YAML: ", e.what())).file(path, e.mark.line + 1);
      }
      if (root.IsMap()) apply_yaml(cfg, root, "", path);
    } else {
      const std::vector<char> bytes = read_file(path);
      nlohmann::json j;
      try {
        j = nlohmann::json::parse(bytes.begin(), bytes.end());
      } catch (const nlohmann::json::parse_error& e) {
        throw Error(ErrorKind::usage, str("cannot parse JSON: ", e.what())).file(path);
      }
      if (!j.is_object()) throw Error(ErrorKind::usage, "config must be a JSON object").file(path);
      apply_json(cfg, j, "", path);
    }
  }
  if (overrides.size() % 2 != 0)
    throw Error(ErrorKind::usage, str("overrides come in KEY VALUE pairs; '", overrides.back(), "' has no value"))
        .key(overrides.back());
  for (size_t i = 0; i < overrides.size(); i += 2) cfg.set(overrides[i], overrides[i + 1], "command line");
  return cfg;
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
