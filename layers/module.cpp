#include "layers/module.h"

#include <algorithm>

#include "core/autograd.h"
#include "layers/batchnorm.h"
#include "layers/conv2d.h"

namespace seg {

std::string module_path_of(const std::string& name) {
  const size_t dot = name.rfind('.');
  return dot == std::string::npos ? "" : name.substr(0, dot);
}
std::string leaf_name_of(const std::string& name) {
  const size_t dot = name.rfind('.');
  return dot == std::string::npos ? name : name.substr(dot + 1);
}

std::set<std::string> batch_norm_modules(const Module& m) {
  std::set<std::string> out;
  for (const auto& b : m.named_buffers())
    if (leaf_name_of(b.name) == "running_mean") out.insert(module_path_of(b.name));
  return out;
}

namespace {
std::string join(const std::string& prefix, const std::string& name) { return prefix.empty() ? name : prefix + "." + name; }
}  // namespace

void Module::register_parameter(const std::string& name, Tensor* field) {
  SEG_ASSERT(field && field->defined(), "parameter ", name, " registered undefined");
  field->set_requires_grad(true);
  params_.emplace_back(name, field);
}

void Module::register_buffer(const std::string& name, Tensor* field, bool host) {
  SEG_ASSERT(field && field->defined(), "buffer ", name, " registered undefined");
  buffers_.emplace_back(name, field);
  if (host) host_buffers_.push_back(field);
}

void Module::to(Device device) {
  for (auto& [name, t] : params_) t->move_to_(device);
  for (auto& [name, t] : buffers_)
    if (std::find(host_buffers_.begin(), host_buffers_.end(), t) == host_buffers_.end()) t->move_to_(device);
  for (auto& [name, child] : children_) child->to(device);
}

Device Module::device() const {
  const auto params = named_parameters();
  return params.empty() ? Device::cpu() : params.front().tensor->device();
}

std::vector<NamedTensor> Module::named_parameters(const std::string& prefix) const {
  std::vector<NamedTensor> out;
  for (const auto& [name, t] : params_) out.push_back({join(prefix, name), t});
  for (const auto& [name, child] : children_) {
    auto sub = child->named_parameters(join(prefix, name));
    out.insert(out.end(), sub.begin(), sub.end());
  }
  return out;
}

std::vector<NamedTensor> Module::named_buffers(const std::string& prefix) const {
  std::vector<NamedTensor> out;
  for (const auto& [name, t] : buffers_) out.push_back({join(prefix, name), t});
  for (const auto& [name, child] : children_) {
    auto sub = child->named_buffers(join(prefix, name));
    out.insert(out.end(), sub.begin(), sub.end());
  }
  return out;
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (const auto& p : named_parameters()) out.push_back(*p.tensor);
  return out;
}

int64_t Module::num_parameters() const {
  int64_t n = 0;
  for (const auto& p : named_parameters()) n += p.tensor->numel();
  return n;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [name, child] : children_) child->train(on);
}

void Module::zero_grad() {
  for (const auto& p : named_parameters()) p.tensor->zero_grad();
}

void Module::visit(const std::function<void(Module&)>& fn) {
  fn(*this);
  for (auto& [name, child] : children_) child->visit(fn);
}

Sequential::Sequential(std::vector<std::shared_ptr<UnaryModule>> layers) {
  for (auto& l : layers) append(std::move(l));
}

void Sequential::append(std::shared_ptr<UnaryModule> layer) {
  register_module(std::to_string(layers_.size()), layer);
  layers_.push_back(std::move(layer));
}

Tensor Sequential::forward(const Tensor& x) {
  Tensor h = x;
  for (size_t i = 0; i < layers_.size(); ++i) {
    // A BatchNorm followed by a ReLU(6) (upstream's conv-BN-ReLU blocks) runs as one fused op; the
    // ReLU keeps its index, so the module tree and the state_dict names stay upstream's.
    auto* bn = dynamic_cast<BatchNorm2d*>(layers_[i].get());
    auto* act = i + 1 < layers_.size() ? dynamic_cast<ReLU*>(layers_[i + 1].get()) : nullptr;
    if (bn != nullptr && act != nullptr) {
      h = bn->forward_act(h, act->is_relu6() ? BnActivation::relu6 : BnActivation::relu);
      ++i;
      continue;
    }
    h = layers_[i]->forward(h);
  }
  return h;
}

}  // namespace seg
