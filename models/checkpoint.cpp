#include "models/checkpoint.h"

#include <map>
#include <set>

#include "core/autograd.h"
#include "models/segmentation_module.h"

namespace seg {

namespace {

// The SyncBN buffers upstream files carry in addition to PyTorch's BatchNorm state (DESIGN 12).
constexpr const char* kSyncBNExtras[] = {"_tmp_running_mean", "_tmp_running_var", "_running_iter"};

// A contiguous copy of t with its dimensions reordered: result dim i is t's dim perm[i].
Tensor permuted_copy(const Tensor& t_in, const int (&perm)[4]) {
  const Tensor t = t_in.to(Device::cpu());
  auto view = std::make_shared<TensorImpl>(*t.impl());
  view->autograd = nullptr;
  for (int i = 0; i < 4; ++i) {
    view->shape[i] = t.size(perm[i]);
    view->strides[i] = t.stride(perm[i]);
  }
  Tensor out = Tensor::empty(view->shape, t.dtype(), Device::cpu());
  out.copy_(Tensor(view));
  return out;
}
// Our conv weights [O, KH, KW, I/g] <-> PyTorch's [O, I/g, KH, KW].
Tensor ohwi_to_oihw(const Tensor& w) { return permuted_copy(w, {0, 3, 1, 2}); }
Tensor oihw_to_ohwi(const Tensor& w) { return permuted_copy(w, {0, 2, 3, 1}); }
Shape oihw_shape(const Shape& ohwi) { return Shape{ohwi[0], ohwi[3], ohwi[1], ohwi[2]}; }

// The names of the BatchNorm modules of m (those with a running_mean buffer).
std::string first_names(const std::vector<std::string>& names, size_t n = 3) {
  std::string s;
  for (size_t i = 0; i < names.size() && i < n; ++i) s += (i ? ", " : "") + names[i];
  if (names.size() > n) s += str(", ... (", names.size(), " in all)");
  return s;
}

Error checkpoint_error(const std::string& message, const std::string& path, const std::string& tensor) {
  Error e(ErrorKind::data, message);
  e.file(path);
  if (!tensor.empty()) e.with("tensor", tensor);
  return e;
}

}  // namespace

namespace {

// One entry of an upstream state_dict and where its value comes from.
struct StateEntry {
  enum Kind { tensor, conv_weight, copy, running_iter } kind;
  std::string name;
  const Tensor* source;  // null for running_iter
};

std::vector<StateEntry> state_entries(const Module& m) {
  const auto params = m.named_parameters();
  const auto buffers = m.named_buffers();
  const std::set<std::string> bns = batch_norm_modules(m);
  // PyTorch orders a state_dict module by module: a module's parameters, then its buffers, then its
  // children. Our parameters and buffers come from two traversals of the same tree, so merge them
  // per owning module.
  std::map<std::string, std::vector<NamedTensor>> buffers_of;
  for (const auto& b : buffers) buffers_of[module_path_of(b.name)].push_back(b);
  std::vector<StateEntry> out;
  std::set<std::string> emitted;
  auto emit_buffers = [&](const std::string& module) {
    if (!emitted.insert(module).second) return;
    const Tensor* rm = nullptr;
    const Tensor* rv = nullptr;
    for (const auto& b : buffers_of[module]) {
      out.push_back({StateEntry::tensor, b.name, b.tensor});
      if (leaf_name_of(b.name) == "running_mean") rm = b.tensor;
      if (leaf_name_of(b.name) == "running_var") rv = b.tensor;
    }
    if (bns.count(module)) {  // upstream SyncBN's extra buffers (DESIGN 12)
      const std::string p = module.empty() ? "" : module + ".";
      out.push_back({StateEntry::copy, p + "_tmp_running_mean", rm});
      out.push_back({StateEntry::copy, p + "_tmp_running_var", rv});
      out.push_back({StateEntry::running_iter, p + "_running_iter", nullptr});
    }
  };
  std::string current;
  bool any = false;
  for (const auto& p : params) {
    const std::string module = module_path_of(p.name);
    if (any && module != current) emit_buffers(current);
    current = module;
    any = true;
    out.push_back({p.tensor->dim() == 4 ? StateEntry::conv_weight : StateEntry::tensor, p.name, p.tensor});
  }
  if (any) emit_buffers(current);
  for (const auto& b : buffers) emit_buffers(module_path_of(b.name));  // modules with buffers only
  return out;
}

}  // namespace

std::vector<StateDictEntry> upstream_state_dict_layout(const Module& m) {
  std::vector<StateDictEntry> out;
  for (const StateEntry& e : state_entries(m)) {
    if (e.kind == StateEntry::running_iter)
      out.push_back({e.name, Shape{1}, DType::f32});
    else
      out.push_back({e.name, e.kind == StateEntry::conv_weight ? oihw_shape(e.source->shape()) : e.source->shape(),
                     e.source->dtype()});
  }
  return out;
}

NamedTensors upstream_state_dict(const Module& m) {
  NamedTensors out;
  for (const StateEntry& e : state_entries(m)) {
    switch (e.kind) {
      case StateEntry::tensor: out.emplace_back(e.name, e.source->detach().to(Device::cpu()).contiguous()); break;
      case StateEntry::conv_weight: out.emplace_back(e.name, ohwi_to_oihw(e.source->detach())); break;
      case StateEntry::copy: out.emplace_back(e.name, e.source->detach().to(Device::cpu()).clone()); break;
      case StateEntry::running_iter: out.emplace_back(e.name, Tensor::full({1}, 1.0, DType::f32, Device::cpu())); break;
    }
  }
  return out;
}

FileDigest save_checkpoint(const Module& m, const std::string& path, const std::map<std::string, std::string>& metadata) {
  std::map<std::string, std::string> meta = metadata;
  meta.emplace("format", "segtrain upstream state_dict; conv weights OIHW");
  return write_safetensors(path, upstream_state_dict(m), meta);
}

std::string LoadReport::summary() const {
  std::string s = str("loaded ", loaded, " tensors");
  if (!missing.empty()) s += str("; skipped ", missing.size(), " missing (", first_names(missing), ")");
  if (!unexpected.empty()) s += str("; skipped ", unexpected.size(), " unexpected (", first_names(unexpected), ")");
  return s;
}

LoadReport load_state_dict(Module& m, const SafetensorsFile& file, const std::string& path, const LoadOptions& opt) {
  struct Target {
    std::string name;
    Tensor* field;
    bool optional;
  };
  std::vector<Target> targets;
  for (const auto& p : m.named_parameters()) targets.push_back({p.name, p.tensor, false});
  for (const auto& b : m.named_buffers()) targets.push_back({b.name, b.tensor, leaf_name_of(b.name) == "num_batches_tracked"});
  std::set<std::string> known;
  for (const auto& t : targets) known.insert(t.name);
  for (const auto& bn : batch_norm_modules(m))
    for (const char* extra : kSyncBNExtras) known.insert((bn.empty() ? "" : bn + ".") + extra);

  std::map<std::string, const Tensor*> in_file;
  for (const auto& [name, t] : file.tensors) in_file[name] = &t;

  LoadReport report;
  for (const auto& t : targets)
    if (!in_file.count(t.name) && !t.optional) report.missing.push_back(t.name);
  for (const auto& [name, t] : file.tensors)
    if (!known.count(name)) report.unexpected.push_back(name);
  const std::string strict_hint =
      "the checkpoint was written for a different architecture (MODEL.arch_encoder / arch_decoder, fc_dim, "
      "num_class); to skip such tensors, as upstream's strict=False does, pass --non-strict to segtrain eval or predict";
  if (opt.strict && !report.missing.empty())
    throw checkpoint_error(str("checkpoint lacks tensor '", report.missing[0], "' that the model has (missing: ",
                               first_names(report.missing), ")"),
                           path, report.missing[0])
        .hint(strict_hint);
  if (opt.strict && !report.unexpected.empty())
    throw checkpoint_error(str("checkpoint has tensor '", report.unexpected[0], "' that the model lacks (unexpected: ",
                               first_names(report.unexpected), ")"),
                           path, report.unexpected[0])
        .hint(strict_hint);

  // Check every tensor before changing any, so a bad file leaves the model as it was.
  for (const auto& t : targets) {
    const auto it = in_file.find(t.name);
    if (it == in_file.end()) continue;
    const Tensor& f = *it->second;
    const bool conv = t.field->dim() == 4;
    const Shape want = conv ? oihw_shape(t.field->shape()) : t.field->shape();
    if (f.shape() != want)
      throw checkpoint_error(str("checkpoint tensor '", t.name, "' has shape ", f.shape().str(), ", the model expects ",
                                 want.str(), conv ? " (PyTorch OIHW)" : ""),
                             path, t.name)
          .hint("the checkpoint was written for a different architecture, fc_dim or num_class");
    if (is_floating(f.dtype()) != is_floating(t.field->dtype()))
      throw checkpoint_error(str("checkpoint tensor '", t.name, "' has dtype ", dtype_name(f.dtype()), ", the model needs ",
                                 is_floating(t.field->dtype()) ? "a floating dtype" : "an integer dtype"),
                             path, t.name);
  }
  NoGradGuard no_grad;
  for (const auto& t : targets) {
    const auto it = in_file.find(t.name);
    if (it == in_file.end()) continue;
    const Tensor& f = *it->second;
    t.field->copy_(t.field->dim() == 4 ? oihw_to_ohwi(f) : f);
    ++report.loaded;
  }
  return report;
}

LoadReport load_checkpoint(Module& m, const std::string& path, const LoadOptions& opt) {
  return load_state_dict(m, read_safetensors(path), path, opt);
}

CheckpointPaths checkpoint_paths(const std::string& dir, int64_t epoch) {
  const std::string d = dir.empty() ? "" : (dir.back() == '/' ? dir : dir + "/");
  return {str(d, "encoder_epoch_", epoch, ".safetensors"), str(d, "decoder_epoch_", epoch, ".safetensors")};
}

CheckpointPaths checkpoint_paths(const std::string& dir, const std::string& checkpoint_name) {
  std::string stem = checkpoint_name;
  for (const char* ext : {".safetensors", ".pth"}) {
    const std::string e = ext;
    if (stem.size() > e.size() && stem.compare(stem.size() - e.size(), e.size(), e) == 0) stem.resize(stem.size() - e.size());
  }
  const std::string prefix = "epoch_";
  const bool ok = stem.size() > prefix.size() && stem.compare(0, prefix.size(), prefix) == 0 &&
                  stem.find_first_not_of("0123456789", prefix.size()) == std::string::npos;
  if (!ok)
    throw Error(ErrorKind::usage, "checkpoint name '" + checkpoint_name + "' is not of the form epoch_N.pth")
        .hint("use e.g. VAL.checkpoint epoch_20.pth (meaning encoder_epoch_20.safetensors and decoder_epoch_20.safetensors)");
  return checkpoint_paths(dir, std::stoll(stem.substr(prefix.size())));
}

CheckpointDigests save_segmentation_checkpoint(const SegmentationModule& model, const CheckpointPaths& paths) {
  CheckpointDigests d;
  d.encoder = save_checkpoint(*model.encoder, paths.encoder, {{"component", "encoder"}, {"arch", model.encoder->arch()}});
  d.decoder = save_checkpoint(*model.decoder, paths.decoder,
                              {{"component", "decoder"}, {"arch", model.decoder->arch()},
                               {"fc_dim", std::to_string(model.decoder->fc_dim())},
                               {"num_class", std::to_string(model.decoder->num_class())}});
  return d;
}

SegmentationLoadReport load_segmentation_checkpoint(SegmentationModule& model, const CheckpointPaths& paths,
                                                    const LoadOptions& opt) {
  SegmentationLoadReport r;
  r.encoder = load_checkpoint(*model.encoder, paths.encoder, opt);
  r.decoder = load_checkpoint(*model.decoder, paths.decoder, opt);
  return r;
}

}  // namespace seg
