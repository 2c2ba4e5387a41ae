#include "models/init.h"

#include <cmath>
#include <map>
#include <set>

#include "core/autograd.h"
#include "core/rng.h"
#include "layers/init.h"

namespace seg::model_init {

uint64_t fnv1a64(const std::string& s) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

namespace {
struct Rule {
  // conv weight std from the weight shape [O, KH, KW, I/g]
  bool fan_out;
  bool default_conv_bias;  // PyTorch's U(+-1/sqrt(fan_in)), else 0
  double bn_bias;
};

void initialize(Module& m, uint64_t seed, const std::string& component, const Rule& rule) {
  NoGradGuard no_grad;
  const std::set<std::string> batch_norms = batch_norm_modules(m);
  std::map<std::string, int64_t> conv_fan_in;  // module name -> fan_in of its weight
  const auto params = m.named_parameters();
  for (const auto& p : params)
    if (p.tensor->dim() == 4) {
      const Tensor& w = *p.tensor;
      conv_fan_in[module_path_of(p.name)] = w.size(1) * w.size(2) * w.size(3);
    }

  for (const auto& p : params) {
    Tensor& t = *p.tensor;
    const std::string parent = module_path_of(p.name), leaf = leaf_name_of(p.name);
    PhiloxStream rng(seed, RngPurpose::init, fnv1a64(component + "." + p.name));
    if (batch_norms.count(parent)) {
      SEG_ASSERT(leaf == "weight" || leaf == "bias", p.name);
      t.fill_(leaf == "weight" ? 1.0 : rule.bn_bias);
    } else if (t.dim() == 4) {
      const int64_t fan = rule.fan_out ? t.size(0) * t.size(1) * t.size(2) : conv_fan_in.at(parent);
      init::normal_(t, std::sqrt(2.0 / static_cast<double>(fan)), rng);
    } else if (leaf == "bias" && conv_fan_in.count(parent)) {
      if (rule.default_conv_bias)
        init::uniform_(t, 1.0 / std::sqrt(static_cast<double>(conv_fan_in.at(parent))), rng);
      else
        t.zero_();
    } else {
      SEG_FAIL(runtime, "model_init: no rule for parameter '", p.name, "' of shape ", t.shape().str());
    }
  }
}

}  // namespace

void upstream_decoder(Module& m, uint64_t seed, const std::string& component) {
  initialize(m, seed, component, Rule{false, true, 1e-4});
}

void he_encoder(Module& m, uint64_t seed, const std::string& component) {
  initialize(m, seed, component, Rule{true, false, 0.0});
}

}  // namespace seg::model_init
