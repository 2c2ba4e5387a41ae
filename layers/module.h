// Module: a named tree of parameters, buffers and child modules, like torch.nn.Module.
//
// Names are the upstream state_dict keys: a parameter registered as "weight" in a child registered as
// "conv1" of a child "layer1.0" is "layer1.0.conv1.weight". Checkpoints and the optimizer's
// parameter groups are built from these names.
//
// A module registers pointers to its own Tensor fields, so code that replaces a field (loading a
// checkpoint, casting the model to half for AMP O2) is seen through the registry too. Modules are
// therefore not copyable; hold them by shared_ptr.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace seg {

struct NamedTensor {
  std::string name;
  Tensor* tensor;
};

// Parameter and buffer names are dotted paths, as in upstream's state_dict: "layer1.0.bn1.weight"
// has the module path "layer1.0.bn1" ("" for a top-level tensor) and the leaf name "weight".
std::string module_path_of(const std::string& name);
std::string leaf_name_of(const std::string& name);

class Module;
// The paths of the BatchNorm modules in m's tree: the modules that own a running_mean buffer.
std::set<std::string> batch_norm_modules(const Module& m);

class Module {
 public:
  Module() = default;
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // Recursively, in registration order, with dotted names.
  std::vector<NamedTensor> named_parameters(const std::string& prefix = "") const;
  std::vector<NamedTensor> named_buffers(const std::string& prefix = "") const;
  std::vector<Tensor> parameters() const;
  int64_t num_parameters() const;  // total elements of all parameters

  // Train/eval mode (BatchNorm and Dropout behave differently); applies to the whole subtree.
  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  void zero_grad();  // drops every parameter's gradient

  // Moves every parameter and buffer of the tree to `device`, in place (the Tensor handles stay the
  // same, so an optimizer built before, or the autocast cache, sees the moved tensors). Host buffers
  // (registered with host = true: counters like BatchNorm's num_batches_tracked) stay on the CPU.
  void to(Device device);
  // The device of the parameters (the CPU for a module without any).
  Device device() const;

  // Calls fn on this module and every descendant, parents first.
  void visit(const std::function<void(Module&)>& fn);

 protected:
  // Registers a field as a parameter: marks it requires_grad and gives it its full name lazily.
  void register_parameter(const std::string& name, Tensor* field);
  // host: the buffer always lives on the CPU (the host updates it; Module::to leaves it there).
  void register_buffer(const std::string& name, Tensor* field, bool host = false);
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    children_.emplace_back(name, module);
    return module;
  }
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& children() const { return children_; }

 private:
  std::vector<std::pair<std::string, Tensor*>> params_;
  std::vector<std::pair<std::string, Tensor*>> buffers_;
  std::vector<const Tensor*> host_buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

// A module with one input and one output: the building block of Sequential.
class UnaryModule : public Module {
 public:
  virtual Tensor forward(const Tensor& x) = 0;
};

// Children named "0", "1", ... applied in order (upstream nn.Sequential).
class Sequential : public UnaryModule {
 public:
  Sequential() = default;
  explicit Sequential(std::vector<std::shared_ptr<UnaryModule>> layers);
  void append(std::shared_ptr<UnaryModule> layer);
  Tensor forward(const Tensor& x) override;
  size_t size() const { return layers_.size(); }

 private:
  std::vector<std::shared_ptr<UnaryModule>> layers_;
};

}  // namespace seg
