// The closed-form model weights of tools/golden/closed_form.py (see there for the formula), computed
// bit-identically in C++: golden files hold only inputs and outputs, and both sides derive every
// weight and BN statistic from the state_dict name and the element index.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "core/safetensors.h"
#include "layers/module.h"
#include "models/checkpoint.h"
#include "models/init.h"

namespace seg::test {

// u in [-1, 1) for element i of the tensor named `name`.
inline double closed_form_uniform(uint64_t key, uint64_t i) {
  uint64_t z = (i + 1) * 0x9E3779B97F4A7C15ull + key;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1p-52 - 1.0;
}

// The value of a state_dict entry in PyTorch layout; returns false for entries the formula leaves alone.
inline bool closed_form_tensor(const std::string& name, const Shape& shape, Tensor& out) {
  const std::string leaf = name.substr(name.rfind('.') + 1);
  double a = 0, b = 0;  // value = b + a * u
  if (shape.size() == 4) {
    a = std::sqrt(6.0 / static_cast<double>(shape[1] * shape[2] * shape[3]));
  } else if (leaf == "running_mean") {
    a = 0.1;
  } else if (leaf == "running_var") {
    a = 0.3, b = 1.0;
  } else if (leaf == "weight" && shape.size() == 1) {
    a = 0.2, b = 1.0;
  } else if (leaf == "bias" && shape.size() == 1) {
    a = 0.1;
  } else {
    return false;
  }
  const uint64_t key = model_init::fnv1a64(name);
  out = Tensor::empty(shape, DType::f32, Device::cpu());
  float* p = out.data<float>();
  for (int64_t i = 0; i < out.numel(); ++i) p[i] = static_cast<float>(b + a * closed_form_uniform(key, static_cast<uint64_t>(i)));
  return true;
}

// Sets every floating tensor of `m` to the closed-form values, through the checkpoint loader (so the
// OIHW conversion of conv weights is exercised on the way).
inline void fill_closed_form(Module& m) {
  SafetensorsFile file;
  for (const auto& [name, t] : upstream_state_dict(m)) {
    Tensor v;
    if (closed_form_tensor(name, t.shape(), v)) file.tensors.emplace_back(name, v);
  }
  load_state_dict(m, file, "<closed form>");
}

}  // namespace seg::test
