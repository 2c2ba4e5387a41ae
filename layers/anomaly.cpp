#include "layers/anomaly.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/autograd.h"

namespace seg {

namespace {

// The smallest normal magnitude of each floating dtype: below it (and above 0) a value is subnormal.
double smallest_normal(DType dt) {
  switch (dt) {
    case DType::f16: return 6.103515625e-05;  // 2^-14
    case DType::f64: return std::numeric_limits<double>::min();
    default: return std::numeric_limits<float>::min();  // f32 and bf16 (same exponent range)
  }
}

Tensor on_host(const Tensor& t) { return (t.device().is_cpu() ? t : t.to(Device::cpu())).contiguous(); }

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

// Loss scales are powers of two up to 2^24: printed whole (65536, not 6.554e+04).
std::string fmt_scale(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

std::string describe(const std::string& role, const std::string& name, const Tensor& t) {
  if (!t.defined()) return "  " + role + " (none)\n";
  const TensorRange r = tensor_range(t);
  char line[512];
  std::snprintf(line, sizeof line, "  %-10s %-5s %-22s min %-10s max %-10s mean|x| %-10s inf %lld  nan %lld  subnormal %lld%s%s\n",
                role.c_str(), dtype_name(t.dtype()), t.shape().str().c_str(), fmt(r.min).c_str(), fmt(r.max).c_str(),
                fmt(r.mean_abs).c_str(), static_cast<long long>(r.inf), static_cast<long long>(r.nan),
                static_cast<long long>(r.subnormal), name.empty() ? "" : "  ", name.c_str());
  return line;
}

std::string module_of(const std::string& param) {
  const size_t dot = param.rfind('.');
  return dot == std::string::npos ? param : param.substr(0, dot);
}

}  // namespace

bool all_finite(const Tensor& t_in) {
  if (!t_in.defined() || !is_floating(t_in.dtype())) return true;
  const Tensor t = on_host(t_in);
  const int64_t n = t.numel();
  switch (t.dtype()) {
    case DType::f32: {
      const float* p = t.data<float>();
      for (int64_t i = 0; i < n; ++i)
        if (!std::isfinite(p[i])) return false;
      return true;
    }
    case DType::f64: {
      const double* p = t.data<double>();
      for (int64_t i = 0; i < n; ++i)
        if (!std::isfinite(p[i])) return false;
      return true;
    }
    case DType::f16: {  // exponent bits all ones: inf or NaN
      const f16* p = t.data<f16>();
      for (int64_t i = 0; i < n; ++i)
        if ((p[i].bits & 0x7C00u) == 0x7C00u) return false;
      return true;
    }
    case DType::bf16: {
      const bf16* p = t.data<bf16>();
      for (int64_t i = 0; i < n; ++i)
        if ((p[i].bits & 0x7F80u) == 0x7F80u) return false;
      return true;
    }
    default: return true;
  }
}

TensorRange tensor_range(const Tensor& t_in) {
  TensorRange r;
  if (!t_in.defined()) return r;
  const Tensor t = on_host(t_in).to(DType::f64);
  const double* p = t.data<double>();
  const double tiny = smallest_normal(t_in.dtype());
  r.numel = t.numel();
  double sum_abs = 0;
  int64_t finite = 0;
  r.min = std::numeric_limits<double>::infinity();
  r.max = -std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < r.numel; ++i) {
    const double v = p[i];
    if (std::isnan(v)) {
      ++r.nan;
      continue;
    }
    if (std::isinf(v)) {
      ++r.inf;
      continue;
    }
    if (v != 0 && std::abs(v) < tiny) ++r.subnormal;
    r.min = std::min(r.min, v);
    r.max = std::max(r.max, v);
    sum_abs += std::abs(v);
    ++finite;
  }
  if (finite == 0) r.min = r.max = std::numeric_limits<double>::quiet_NaN();
  r.mean_abs = finite ? sum_abs / static_cast<double>(finite) : std::numeric_limits<double>::quiet_NaN();
  return r;
}

AnomalyDetector::AnomalyDetector(const Module& model) {
  for (const NamedTensor& p : model.named_parameters()) names_[p.tensor->impl()] = p.name;
  for (const NamedTensor& b : model.named_buffers()) names_[b.tensor->impl()] = b.name;
}

void AnomalyDetector::begin_step(double loss_scale, bool dynamic_scaling) {
  scale_ = loss_scale;
  dynamic_ = dynamic_scaling;
  backward_.reset();
  nodes_.clear();
  held_.clear();
  last_module_.clear();
}

std::string AnomalyDetector::name_of(const Tensor& t) const {
  if (!t.defined()) return "";
  auto it = names_.find(t.impl());
  return it == names_.end() ? "" : it->second;
}

std::string AnomalyDetector::module_for(const std::vector<Tensor>& inputs) {
  for (const Tensor& t : inputs) {
    const std::string n = name_of(t);
    if (!n.empty()) return last_module_ = module_of(n);
  }
  return last_module_.empty() ? "before the first module" : "after " + last_module_;
}

void AnomalyDetector::stop(const Anomaly& a) const {
  throw Error(ErrorKind::runtime, a.report)
      .op(a.op)
      .with("module", a.module)
      .hint(a.direction == "forward"
                ? "an f16 overflow: keep this op in f32 (the AMP table, docs/mixed-precision.md), use --amp-dtype bf16 "
                  "(f32's range), or find why its inputs grew; a NaN/inf from finite inputs in f32: check the data and "
                  "the learning rate"
                : "lower the loss scale (--loss-scale dynamic, or a smaller N), keep this op in f32, or use --amp-dtype bf16");
}

void AnomalyDetector::on_forward(const OpEvent& e) {
  const std::string module = module_for(e.inputs);
  // An autocast copy of a parameter keeps the parameter's name (O1 casts weights per op).
  if (std::string(e.op) == "cast" && !e.inputs.empty() && !e.outputs.empty()) {
    const std::string n = name_of(e.inputs[0]);
    if (!n.empty()) {
      names_[e.outputs[0].impl()] = n;
      held_.push_back(e.outputs[0]);
    }
  }
  std::vector<std::string> input_desc;
  for (size_t i = 0; i < e.inputs.size(); ++i) {
    const std::string n = name_of(e.inputs[i]);
    input_desc.push_back(n.empty() ? "input " + std::to_string(i) : n);
  }
  if (!e.outputs.empty() && e.outputs[0].grad_fn())
    nodes_[e.outputs[0].grad_fn().get()] = NodeInfo{e.op, module, input_desc};

  for (size_t o = 0; o < e.outputs.size(); ++o) {
    if (all_finite(e.outputs[o])) continue;
    Anomaly a;
    a.direction = "forward";
    a.op = e.op;
    a.module = module;
    const TensorRange r = tensor_range(e.outputs[o]);
    a.one_line = "forward " + a.op + " (" + module + ") made " + std::to_string(r.inf) + " inf and " +
                 std::to_string(r.nan) + " NaN values";
    a.report = "anomaly: " + a.one_line + " from " +
               (std::all_of(e.inputs.begin(), e.inputs.end(), [](const Tensor& t) { return all_finite(t); })
                    ? std::string("finite inputs")
                    : std::string("inputs that already held inf/NaN (a tensor no op produced)")) +
               "; loss scale " + fmt_scale(scale_) + "\n";
    for (size_t i = 0; i < e.inputs.size(); ++i) a.report += describe("input " + std::to_string(i), name_of(e.inputs[i]), e.inputs[i]);
    for (size_t k = 0; k < e.outputs.size(); ++k) a.report += describe("output " + std::to_string(k), "", e.outputs[k]);
    stop(a);
  }
}

void AnomalyDetector::on_backward(const BackwardEvent& e) {
  if (backward_) return;  // under dynamic scaling only the first one of the step is reported
  for (size_t i = 0; i < e.grads_in.size(); ++i) {
    if (all_finite(e.grads_in[i])) continue;
    auto it = nodes_.find(&e.node);
    const NodeInfo info = it != nodes_.end() ? it->second : NodeInfo{e.node.name(), "unknown module", {}};
    const std::string input = i < info.inputs.size() ? info.inputs[i] : "input " + std::to_string(i);
    Anomaly a;
    a.direction = "backward";
    a.op = info.op;
    a.module = info.module;
    const TensorRange r = tensor_range(e.grads_in[i]);
    a.one_line = "backward " + a.op + " (" + a.module + ") made the first inf/NaN gradient (of " + input + ": " +
                 std::to_string(r.inf) + " inf, " + std::to_string(r.nan) + " NaN) at loss scale " + fmt_scale(scale_);
    a.report = "anomaly: " + a.one_line + "\n";
    for (size_t k = 0; k < e.grads_out.size(); ++k)
      a.report += describe("grad out " + std::to_string(k), "(received)", e.grads_out[k]);
    for (size_t k = 0; k < e.grads_in.size(); ++k)
      a.report += describe("grad in " + std::to_string(k),
                           k < info.inputs.size() && info.inputs[k].rfind("input ", 0) != 0 ? info.inputs[k] : "", e.grads_in[k]);
    if (dynamic_) {
      backward_ = a;  // expected under dynamic scaling: the scaler skips the step
      return;
    }
    stop(a);
  }
}

}  // namespace seg
