#include "tools/train_state.h"

#include <charconv>

#include "core/error.h"
#include "core/fileio.h"
#include "core/numbers.h"
#include "core/rng.h"

namespace seg::cli {

namespace {
constexpr const char* kFormat1 = "segtrain train state 1";
constexpr const char* kFormat2 = "segtrain train state 2";

std::pair<const char*, SGD*> optimizer_parts(const char* name, SGD& sgd) { return {name, &sgd}; }
}  // namespace

FileDigest save_train_state(const std::string& path, const SegmentationModule& model, SGD& encoder, SGD& decoder,
                            const LossScaler& scaler, int64_t step, const Config& cfg, double best_miou,
                            const CheckpointSet& set, int64_t sub_batches, int64_t ranks) {
  NamedTensors tensors;
  for (const auto& p : model.named_parameters()) tensors.emplace_back("model." + p.name, *p.tensor);
  for (const auto& b : model.named_buffers()) tensors.emplace_back("model." + b.name, *b.tensor);
  for (const auto& [name, sgd] : {optimizer_parts("encoder", encoder), optimizer_parts("decoder", decoder)}) {
    const auto& states = sgd->state();
    for (size_t i = 0; i < states.size(); ++i) {
      const std::string prefix = std::string("optimizer.") + name + "." + std::to_string(i);
      if (states[i].momentum.defined()) tensors.emplace_back(prefix + ".momentum", states[i].momentum);
      if (states[i].master.defined()) tensors.emplace_back(prefix + ".master", states[i].master);
    }
  }
  const LossScaler::State s = scaler.state();
  std::string streams;
  for (uint64_t v : global_rng().next_stream) streams += std::to_string(v) + ",";
  const std::map<std::string, std::string> meta = {
      {"format", kFormat2},
      {"step", std::to_string(step)},
      {"config", cfg.to_json().dump()},
      {"checkpoint_set", set.to_json()},
      {"best_miou", format_double(best_miou)},
      {"arch_encoder", cfg.MODEL.arch_encoder},
      {"arch_decoder", cfg.MODEL.arch_decoder},
      {"num_class", std::to_string(cfg.DATASET.num_class)},
      {"amp", cfg.TRAIN.amp + "/" + cfg.TRAIN.amp_dtype},
      {"accum_steps", std::to_string(cfg.TRAIN.accum_steps)},
      {"sub_batches", std::to_string(sub_batches)},
      {"ranks", std::to_string(ranks)},
      {"loss_scale", format_double(s.scale)},  // exact: a static scale like 0.3 must come back as 0.3
      {"loss_scale_clean_steps", std::to_string(s.clean_steps)},
      {"loss_scale_skipped", std::to_string(s.skipped_total)},
      {"rng_seed", std::to_string(global_rng().seed)},
      {"rng_streams", streams},
  };
  return write_safetensors(path, tensors, meta);
}

SafetensorsFile read_train_state(const std::string& path) {
  if (!file_exists(path))
    throw Error(ErrorKind::usage, "--resume: no train state " + path)
        .file(path)
        .hint("train without --resume first, or check DIR");
  return read_safetensors(path);
}

namespace {
Error state_error(const std::string& path, const std::string& what) {
  Error e(ErrorKind::data, "train state: " + what);
  e.file(path).hint("the file is not a segtrain train state, or it is damaged; train again without --resume");
  return e;
}
const std::string& meta_value(const SafetensorsFile& f, const std::string& path, const std::string& key) {
  const auto it = f.metadata.find(key);
  if (it == f.metadata.end()) throw state_error(path, "it lacks '" + key + "'");
  return it->second;
}
int64_t meta_int(const SafetensorsFile& f, const std::string& path, const std::string& key) {
  const std::optional<int64_t> v = parse_int64(meta_value(f, path, key));
  if (!v) throw state_error(path, "'" + key + "' is not an integer: '" + meta_value(f, path, key) + "'");
  return *v;
}
std::optional<uint64_t> parse_u64(const std::string& text) {
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}
double meta_double(const SafetensorsFile& f, const std::string& path, const std::string& key) {
  const std::optional<double> v = parse_finite_double(meta_value(f, path, key));
  if (!v) throw state_error(path, "'" + key + "' is not a number: '" + meta_value(f, path, key) + "'");
  return *v;
}
}  // namespace

TrainStateMeta train_state_meta(const SafetensorsFile& f, const std::string& path) {
  TrainStateMeta m;
  m.metadata = f.metadata;
  const std::string& format = meta_value(f, path, "format");
  if (format == kFormat1) m.format = 1;
  else if (format == kFormat2) m.format = 2;
  else throw state_error(path, "unknown format '" + format + "'");
  m.step = meta_int(f, path, "step");
  if (m.step < 0) throw state_error(path, "negative step");
  if (m.format >= 2) {
    m.best_miou = meta_double(f, path, "best_miou");
    m.config = load_config_text(meta_value(f, path, "config"), ConfigFormat::json, path + " (the run's config)", {});
    m.set = CheckpointSet::from_json(meta_value(f, path, "checkpoint_set"), path);
  }
  return m;
}

void restore_train_state(const SafetensorsFile& f, const std::string& path, SegmentationModule& model, SGD& encoder,
                         SGD& decoder, LossScaler& scaler) {
  auto restore = [&](const std::string& name, Tensor& into) {
    const Tensor* t = f.find(name);
    if (!t) throw state_error(path, "it lacks tensor '" + name + "'");
    if (t->shape() != into.shape() || t->dtype() != into.dtype())
      throw state_error(path, "tensor '" + name + "' is " + t->str() + ", the model has " + into.str());
    into.copy_(*t);
  };
  for (const auto& p : model.named_parameters()) restore("model." + p.name, *p.tensor);
  for (const auto& b : model.named_buffers()) restore("model." + b.name, *b.tensor);
  for (const auto& [name, sgd] : {optimizer_parts("encoder", encoder), optimizer_parts("decoder", decoder)}) {
    auto& states = sgd->state();
    for (size_t i = 0; i < states.size(); ++i) {
      const std::string prefix = std::string("optimizer.") + name + "." + std::to_string(i);
      if (const Tensor* m = f.find(prefix + ".momentum")) {  // on the optimizer's device (cuda:0 or the CPU)
        states[i].momentum = Tensor::empty(m->shape(), m->dtype(), sgd->device());
        states[i].momentum.copy_(*m);
      }
      if (const Tensor* m = f.find(prefix + ".master")) {
        if (!states[i].master.defined()) throw state_error(path, "it has master weights the run does not use");
        if (m->shape() != states[i].master.shape() || m->dtype() != states[i].master.dtype())
          throw state_error(path, "tensor '" + prefix + ".master' is " + m->str() + ", the run has " + states[i].master.str());
        states[i].master.copy_(*m);
      }
    }
  }
  LossScaler::State s;
  s.scale = meta_double(f, path, "loss_scale");
  s.clean_steps = meta_int(f, path, "loss_scale_clean_steps");
  s.skipped_total = meta_int(f, path, "loss_scale_skipped");
  scaler.load_state(s);
  RngState& rng = global_rng();
  const std::optional<uint64_t> seed = parse_u64(meta_value(f, path, "rng_seed"));
  if (!seed) throw state_error(path, "'rng_seed' is not an integer");
  rng.seed = *seed;
  const std::string& streams = meta_value(f, path, "rng_streams");
  size_t pos = 0;
  for (uint64_t& v : rng.next_stream) {
    const size_t comma = streams.find(',', pos);
    if (comma == std::string::npos) break;
    const std::optional<uint64_t> n = parse_u64(streams.substr(pos, comma - pos));
    if (!n) throw state_error(path, "'rng_streams' is malformed");
    v = *n;
    pos = comma + 1;
  }
}

}  // namespace seg::cli
