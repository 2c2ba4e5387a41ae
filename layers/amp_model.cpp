#include "layers/amp_model.h"

#include <unordered_set>

#include "layers/batchnorm.h"

namespace seg {

int cast_model_for_amp(Module& model, const AmpConfig& config) {
  if (!config.model_in_half()) return 0;
  // Collect BatchNorm tensors that must stay fp32.
  std::unordered_set<const Tensor*> keep;
  if (config.batchnorm_fp32()) {
    model.visit([&](Module& m) {
      if (auto* bn = dynamic_cast<BatchNorm2d*>(&m))
        for (const Tensor* t : {&bn->weight, &bn->bias, &bn->running_mean, &bn->running_var}) keep.insert(t);
    });
  }
  int converted = 0;
  for (const NamedTensor& p : model.named_parameters()) {
    if (keep.count(p.tensor) || p.tensor->dtype() == config.half_dtype) continue;
    const std::string name = p.tensor->name();
    Tensor half = p.tensor->to(config.half_dtype).clone();
    half.set_requires_grad(true);
    if (!name.empty()) half.set_name(name);
    *p.tensor = half;
    ++converted;
  }
  for (const NamedTensor& b : model.named_buffers()) {
    if (keep.count(b.tensor) || !is_floating(b.tensor->dtype()) || b.tensor->dtype() == config.half_dtype) continue;
    *b.tensor = b.tensor->to(config.half_dtype).clone();
    ++converted;
  }
  return converted;
}

DType amp_input_dtype(const AmpConfig& config) { return config.model_in_half() ? config.half_dtype : DType::f32; }

}  // namespace seg
