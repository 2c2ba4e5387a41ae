#include "tests/cuda/step_replay.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "core/autograd.h"

namespace seg::test {

namespace {
constexpr double kF32Eps = 0x1p-24;
// With a reference: cuda:0's error may be this many times the CPU's own largest error on the same
// output. The CPU's convolutions accumulate in GEMM blocks, the CUDA kernels along K in one f32
// register each: measured over the seven configs' O0 steps, cuda:0's error reached 3.2x the CPU's.
constexpr double kTimesCpuError = 8;
// ... plus this many f32 roundings (2^-24) of the element's term scale (term_scales below): the
// CPU sums some reductions in f64 (BatchNorm's moments) where a CUDA kernel may use f32 partials
// (Welford per thread, kernels/cuda/batchnorm.cu), so its statistics, and every output through
// them, may be a few f32 roundings off where the CPU's are exact.
constexpr double kRoundingsOfTerms = 8;

Tensor host_copy(const Tensor& t) { return t.defined() ? t.to(Device::cpu()).clone() : Tensor(); }

std::vector<Tensor> host_copies(const std::vector<Tensor>& ts) {
  std::vector<Tensor> out;
  out.reserve(ts.size());
  for (const Tensor& t : ts) out.push_back(host_copy(t));
  return out;
}

std::string first_defined(const std::vector<Tensor>& ts) {
  for (const Tensor& t : ts)
    if (t.defined()) return t.str();
  return "-";
}

// The same values, bit for bit up to NaN payloads: ±0 differ, any two NaNs agree (the f16 steps'
// overflowing gradients are NaN on both devices, with different payloads). The f64 replay's inputs
// are the f32 ones widened, so the comparison is of values.
bool same_input(const Tensor& got, const Tensor& want) {
  if (got.defined() != want.defined()) return false;
  if (!got.defined()) return true;
  if (got.shape() != want.shape()) return false;
  if (!is_floating(got.dtype()) || !is_floating(want.dtype())) {
    if (got.dtype() != want.dtype()) return false;
    const Tensor g = got.to(Device::cpu()).contiguous();
    return std::memcmp(g.data_ptr(), want.data_ptr(), want.nbytes()) == 0;
  }
  const std::vector<double> g = got.to(Device::cpu()).to(DType::f64).to_vector<double>(),
                            w = want.to(DType::f64).to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(g[i]) && std::isnan(w[i])) continue;
    if (!(g[i] == w[i]) || std::signbit(g[i]) != std::signbit(w[i])) return false;
  }
  return true;
}

std::string where(const char* phase, size_t index, const OpRecord& r) {
  std::ostringstream os;
  os << phase << " #" << index << " " << r.name << " (" << r.what << ")";
  return os.str();
}

std::vector<double> as_f64(const Tensor& t) { return t.to(Device::cpu()).to(DType::f64).to_vector<double>(); }

// compare() with a bound per element (|got_i - want_i| <= atol_i + rtol |want_i|): compare.h's rule
// element by element, gathered into one report.
// Elements with skip[i] set are not compared (and not counted).
Comparison compare_elementwise(const std::vector<double>& got, const std::vector<double>& want,
                               const std::vector<double>& atol, double rtol, const std::vector<char>& skip) {
  Comparison all;
  all.count = static_cast<int64_t>(got.size());
  all.tol = {atol.empty() ? 0.0 : *std::max_element(atol.begin(), atol.end()), rtol};
  double diff2 = 0, want2 = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (skip[i]) {
      --all.count;
      continue;
    }
    const Comparison c = compare(&got[i], &want[i], 1, Tolerance{atol[i], rtol});
    all.mismatches += c.mismatches;
    all.nonfinite_mismatches += c.nonfinite_mismatches;
    all.max_abs = std::max(all.max_abs, c.max_abs);
    all.max_rel = std::max(all.max_rel, c.max_rel);
    if (c.mismatches && all.first_bad < 0) {
      all.first_bad = static_cast<int64_t>(i);
      all.first_got = got[i];
      all.first_want = want[i];
    }
    if (std::isfinite(got[i]) && std::isfinite(want[i])) {
      diff2 += (got[i] - want[i]) * (got[i] - want[i]);
      want2 += want[i] * want[i];
    }
  }
  all.rel_l2 = all.nonfinite_mismatches ? INFINITY : diff2 > 0 ? (want2 > 0 ? std::sqrt(diff2 / want2) : INFINITY) : 0;
  return all;
}

// The size of the terms whose f32 rounding each element of an output carries (the scale of the
// bound's absolute part). By default the output's largest element. BatchNorm's parameter
// gradients are per-channel sums over every pixel, dbeta = sum dy and dgamma = sum dy * xhat, that
// cancel (a BatchNorm followed by a convolution and another BatchNorm has dbeta = 0 exactly), and
// the device's xhat carries its own statistics' rounding: their scale is sum |dy| (1 + |xhat|).
std::vector<double> term_scales(const OpRecord& want, const OpRecord* forward, size_t output, const std::vector<double>& v) {
  double largest = 0;
  for (double x : v)
    if (std::isfinite(x)) largest = std::max(largest, std::abs(x));
  std::vector<double> terms(v.size(), largest);
  const bool bn_param_grad = want.name.rfind("batch_norm", 0) == 0 && (output == 1 || output == 2);
  if (!bn_param_grad || !forward || forward->inputs.empty() || want.inputs.empty() || !want.inputs[0].defined()) return terms;
  const std::vector<double> dy = as_f64(want.inputs[0]), x = as_f64(forward->inputs[0]);
  const size_t C = v.size();
  if (C == 0 || dy.size() != x.size() || dy.size() % C != 0) return terms;
  const size_t P = dy.size() / C;
  std::vector<double> mean(C, 0.0), var(C, 0.0);
  for (size_t p = 0; p < P; ++p)
    for (size_t c = 0; c < C; ++c) mean[c] += x[p * C + c] / static_cast<double>(P);
  for (size_t p = 0; p < P; ++p)
    for (size_t c = 0; c < C; ++c) var[c] += (x[p * C + c] - mean[c]) * (x[p * C + c] - mean[c]) / static_cast<double>(P);
  std::fill(terms.begin(), terms.end(), 0.0);
  for (size_t p = 0; p < P; ++p)
    for (size_t c = 0; c < C; ++c) {
      const double xhat = var[c] > 0 ? (x[p * C + c] - mean[c]) / std::sqrt(var[c]) : 0.0;
      terms[c] += std::abs(dy[p * C + c]) * (1 + std::abs(xhat));
    }
  return terms;
}

// The number of m16n8k16 steps (K / 16, rounded up) that accumulate each element of a convolution's
// output: forward y (K = KH*KW*Cg), backward dx (K = O*KH*KW, an upper bound for strided and grouped
// ones) and dw (K = N*Ho*Wo); 0 for every other op and output (the bias gradient is a plain f32
// column sum). The weight is the forward's second input, [O, KH, KW, Cg] (DESIGN 1).
int64_t tensor_core_steps(const OpRecord& want, const OpRecord* forward, size_t output) {
  if (want.name.rfind("conv2d", 0) != 0) return 0;
  const OpRecord& f = forward ? *forward : want;
  if (f.inputs.size() < 2 || !f.inputs[1].defined() || f.inputs[1].dim() != 4) return 0;
  const Tensor& w = f.inputs[1];
  int64_t K = 0;
  if (!forward && output == 0) K = w.numel() / w.size(0);
  else if (forward && output == 0) K = w.numel() / w.size(3);
  else if (forward && output == 1 && !want.inputs.empty() && want.inputs[0].defined()) K = want.inputs[0].numel() / w.size(0);
  return (K + 15) / 16;
}

// The fused BatchNorm+ReLU(6) backward decides its mask from v = (x - mean)*scale + beta with the
// device's own statistics (kernels/common/batchnorm_math.h): the two devices' v differ by the
// rounding of those statistics (f64 sums on the CPU, f32 Welford partials on CUDA), so an element
// whose v lies that close to a kink may pass on one device and not on the other, and the channel's
// dx, dgamma and dbeta then differ by that element's gradient: a kink flip inside one op, which
// feeding the CPU's inputs cannot remove. The channels where that is possible are found from the
// CPU's forward record (v in f64 from x, gamma and beta; eps 1e-5, every model's BatchNorm) and
// left out of the comparison: an element within 2^-16 of its terms' size (256x the f32 rounding
// of the statistics) of a kink, 0 or 6 where the storage type's rounding puts them
// (bn_pass_bounds). Returns one flag per channel (empty: not such a node).
std::vector<char> kink_channels(const OpRecord& node, const OpRecord* forward) {
  const bool relu6 = node.name == "batch_norm_relu6";
  if ((!relu6 && node.name != "batch_norm_relu") || !forward || forward->inputs.size() < 3) return {};
  const Tensor& xt = forward->inputs[0];
  if (!xt.defined() || xt.dim() < 2 || !forward->inputs[1].defined() || !forward->inputs[2].defined()) return {};
  const std::vector<double> x = as_f64(xt), gamma = as_f64(forward->inputs[1]), beta = as_f64(forward->inputs[2]);
  const size_t C = static_cast<size_t>(xt.size(-1)), P = x.size() / C;
  if (gamma.size() != C || beta.size() != C || P == 0) return {};
  double lo = 0, hi = 6;  // bn_pass_bounds
  if (xt.dtype() == DType::f16) lo = 0x1p-25, hi = 6 - 0x1p-9;
  if (xt.dtype() == DType::bf16) lo = 0x1p-134, hi = 6 - 0x1p-6;
  std::vector<char> flagged(C, 0);
  for (size_t c = 0; c < C; ++c) {
    double mean = 0, var = 0;
    for (size_t p = 0; p < P; ++p) mean += x[p * C + c];
    mean /= static_cast<double>(P);
    for (size_t p = 0; p < P; ++p) var += (x[p * C + c] - mean) * (x[p * C + c] - mean);
    var /= static_cast<double>(P);
    const double scale = gamma[c] / std::sqrt(var + 1e-5);
    for (size_t p = 0; p < P && !flagged[c]; ++p) {
      const double v = (x[p * C + c] - mean) * scale + beta[c];
      const double near = 0x1p-16 * (std::abs(v) + std::abs(beta[c]) + (std::abs(mean) + std::sqrt(var)) * std::abs(scale));
      if (std::abs(v - lo) <= near || (relu6 && std::abs(v - hi) <= near)) flagged[c] = 1;
    }
  }
  return flagged;
}
}  // namespace

double ReplayTolerance::rounding(DType dt) {
  if (!is_floating(dt)) return 0;  // integers: exact
  return dt == DType::f16 ? 0x1p-10 : dt == DType::bf16 ? 0x1p-7 : 0x1p-23;
}

double ReplayTolerance::floor(DType dt) { return dt == DType::f16 ? 0x1p-24 : 0; }

void StepRecorder::on_forward(const OpEvent& e) {
  if (!e.outputs.empty() && e.outputs[0].defined())
    if (const auto node = e.outputs[0].grad_fn()) forward_of_[node.get()] = static_cast<int64_t>(record.forward.size());
  record.forward.push_back({e.op, first_defined(e.inputs), host_copies(e.inputs), host_copies(e.outputs)});
}

void StepRecorder::on_backward(const BackwardEvent& e) {
  const auto it = forward_of_.find(&e.node);
  record.backward.push_back({e.node.name(), first_defined(e.grads_out), host_copies(e.grads_out), host_copies(e.grads_in),
                             it == forward_of_.end() ? -1 : it->second});
}

void StepReplayer::check_inputs(const char* phase, size_t index, const OpRecord& want, const std::vector<Tensor>& got) {
  if (got.size() != want.inputs.size()) {
    sequence_errors_.push_back(where(phase, index, want) + ": " + std::to_string(got.size()) + " inputs, the CPU's op had " +
                               std::to_string(want.inputs.size()));
    return;
  }
  for (size_t i = 0; i < got.size(); ++i)
    if (!same_input(got[i], want.inputs[i])) {
      input_diffs_.push_back(where(phase, index, want) + ": input " + std::to_string(i));
      if (got[i].defined() && want.inputs[i].defined() && got[i].shape() == want.inputs[i].shape()) {
        const std::vector<double> g = as_f64(got[i]), w = as_f64(want.inputs[i]);
        for (size_t k = 0; k < g.size(); ++k)
          if (!(g[k] == w[k]) && !(std::isnan(g[k]) && std::isnan(w[k]))) {
            char values[120];
            std::snprintf(values, sizeof values, ", first at [%zu]: %.9g here, %.9g on the CPU", k, g[k], w[k]);
            input_diffs_.back() += values;
            break;
          }
      }
    }
}

void StepReplayer::compare_and_overwrite(const char* phase, size_t index, const OpRecord& want, const OpRecord* ref,
                                         const std::vector<Tensor>& got, OpRecord& computed) {
  computed.name = want.name;
  computed.what = want.what;
  if (role_ == Role::reference) computed.outputs = host_copies(got);  // the reference record
  if (got.size() != want.outputs.size() || (ref && ref->outputs.size() != got.size())) {
    sequence_errors_.push_back(where(phase, index, want) + ": " + std::to_string(got.size()) + " outputs, the CPU's op had " +
                               std::to_string(want.outputs.size()));
    return;
  }
  for (size_t i = 0; i < got.size(); ++i) {
    const Tensor& w = want.outputs[i];
    if (!got[i].defined() && !w.defined()) continue;
    if (role_ == Role::reference) {  // recorded above; overwrite only
      if (got[i].defined() && w.defined() && got[i].shape() == w.shape()) {
        Tensor dst = got[i];
        dst.copy_(w);
      } else {
        sequence_errors_.push_back(where(phase, index, want) + " output " + std::to_string(i) + ": shape differs");
      }
      continue;
    }
    const std::string at = where(phase, index, want) + " output " + std::to_string(i);
    if (got[i].defined() != w.defined() || got[i].shape() != w.shape() || got[i].dtype() != w.dtype()) {
      sequence_errors_.push_back(at + ": " + (got[i].defined() ? got[i].str() : "undefined") + ", the CPU's " +
                                 (w.defined() ? w.str() : "undefined"));
      continue;
    }
    const std::vector<double> g = as_f64(got[i]), v = as_f64(w);
    const OpRecord* fwd = want.forward_index >= 0 ? &want_.forward[static_cast<size_t>(want.forward_index)] : nullptr;
    const std::vector<double> terms = term_scales(want, fwd, i, v);
    std::vector<double> target = v;  // what `got` is compared with
    std::vector<double> atol(v.size());
    double rtol = 0;
    if (ref) {
      if (!ref->outputs[i].defined() || ref->outputs[i].shape() != w.shape()) {
        sequence_errors_.push_back(at + ": the f64 reference has no such output");
        continue;
      }
      target = as_f64(ref->outputs[i]);
      double cpu_error = 0;
      for (size_t k = 0; k < v.size(); ++k)
        if (std::isfinite(v[k]) && std::isfinite(target[k])) cpu_error = std::max(cpu_error, std::abs(v[k] - target[k]));
      for (size_t k = 0; k < v.size(); ++k) atol[k] = kTimesCpuError * cpu_error + kRoundingsOfTerms * kF32Eps * terms[k];
      rtol = 2 * kF32Eps;
    } else {
      const double tc_ulps = tol_.truncating_tensor_cores ? static_cast<double>(tensor_core_steps(want, fwd, i)) : 0.0;
      for (size_t k = 0; k < v.size(); ++k)
        atol[k] = std::max(tol_.f32_eps_of_terms * kF32Eps * terms[k], ReplayTolerance::floor(w.dtype())) +
                  tc_ulps * 2 * kF32Eps * terms[k];
      rtol = ReplayTolerance::rounding(w.dtype());
    }
    if (!is_floating(w.dtype())) std::fill(atol.begin(), atol.end(), 0.0), rtol = 0;  // integers: exact
    std::vector<char> skip(v.size(), 0);
    if (const std::vector<char> kinks = kink_channels(want, fwd); !kinks.empty() && i <= 2) {
      const size_t C = kinks.size();
      for (size_t k = 0; k < v.size(); ++k) skip[k] = kinks[k % C];
      if (i == 0) kink_channels_ += static_cast<int64_t>(std::count(kinks.begin(), kinks.end(), 1));
    }
    const Comparison c = compare_elementwise(g, target, atol, rtol, skip);
    ++compared_;
    OpErrorStats& s = stats_[want.name + " (" + dtype_name(w.dtype()) + ")"];
    ++s.outputs;
    for (size_t k = 0; k < g.size(); ++k) {
      if (skip[k]) continue;
      const double bound = atol[k] + rtol * std::abs(target[k]), err = std::abs(g[k] - target[k]);
      const double ratio = bound > 0 ? err / bound : INFINITY;
      if (std::isfinite(err) && err > 0 && ratio > s.worst) {
        s.worst = ratio;
        s.worst_at = at + ", element " + std::to_string(k);
        char values[160];
        std::snprintf(values, sizeof values, ": got %.9g, CPU %.9g, reference %.12g, bound %.3g", g[k], v[k], target[k],
                      bound);
        s.worst_at += values;
      }
    }
    if (!c.ok()) mismatches_.push_back(at + ": " + c.str());
    // From here on this device computes with the CPU's values.
    Tensor dst = got[i];
    dst.copy_(w);
  }
}

void StepReplayer::on_forward(const OpEvent& e) {
  const size_t index = fwd_++;
  if (index >= want_.forward.size())
    throw std::runtime_error("step replay: this device ran more forward ops than the CPU (#" + std::to_string(index) +
                             ": " + e.op + ")");
  const OpRecord& w = want_.forward[index];
  if (w.name != e.op)
    throw std::runtime_error("step replay: forward op #" + std::to_string(index) + " is " + e.op + " here but " + w.name +
                             " (" + w.what + ") on the CPU");
  const OpRecord* r = ref_ && index < ref_->forward.size() ? &ref_->forward[index] : nullptr;
  if (ref_ && !r) throw std::runtime_error("step replay: the f64 reference has fewer forward ops");
  check_inputs("forward", index, w, e.inputs);
  computed_.forward.emplace_back();
  compare_and_overwrite("forward", index, w, r, e.outputs, computed_.forward.back());
}

void StepReplayer::on_backward(const BackwardEvent& e) {
  const size_t index = bwd_++;
  if (index >= want_.backward.size())
    throw std::runtime_error("step replay: this device ran more backward nodes than the CPU (" + e.node.name() + ")");
  const OpRecord& w = want_.backward[index];
  if (w.name != e.node.name())
    throw std::runtime_error("step replay: backward node #" + std::to_string(index) + " is " + e.node.name() +
                             " here but " + w.name + " (" + w.what + ") on the CPU");
  const OpRecord* r = ref_ && index < ref_->backward.size() ? &ref_->backward[index] : nullptr;
  if (ref_ && !r) throw std::runtime_error("step replay: the f64 reference has fewer backward nodes");
  // The incoming gradients: sums of gradients this replay already overwrote, so the CPU's bits.
  if (role_ == Role::check) check_inputs("backward", index, w, e.grads_out);
  computed_.backward.emplace_back();
  compare_and_overwrite("backward", index, w, r, e.grads_in, computed_.backward.back());
}

std::string StepReplayer::stats_table() const {
  std::ostringstream os;
  os.precision(3);
  for (const auto& [name, s] : stats_)
    os << "  " << name << ": " << s.outputs << " outputs, worst error " << s.worst << " of the bound (" << s.worst_at
       << ")\n";
  return os.str();
}

}  // namespace seg::test
