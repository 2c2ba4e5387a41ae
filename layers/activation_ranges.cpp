#include "layers/activation_ranges.h"

#include <cmath>
#include <cstdio>

#include "core/autograd.h"

namespace seg {

namespace {

void count(const Tensor& t, RangeCounts& c) {
  if (!t.defined() || !is_floating(t.dtype())) return;
  const Tensor f = (t.device().is_cpu() ? t : t.to(Device::cpu())).to(DType::f32).contiguous();
  const float* p = f.data<float>();
  const int64_t n = f.numel();
  c.values += n;
  for (int64_t i = 0; i < n; ++i) {
    const float a = std::fabs(p[i]);
    if (a == 0.0f) ++c.zero;
    else if (!(a <= 65504.0f)) ++c.overflow;  // NaN too
    else if (a < 0x1p-25f) ++c.flush;         // rounds to 0 in f16
  }
}

std::string pct(int64_t n, int64_t of) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.2f%%", of ? 100.0 * static_cast<double>(n) / static_cast<double>(of) : 0.0);
  return buf;
}

}  // namespace

void ActivationRanges::on_forward(const OpEvent& e) {
  for (const Tensor& t : e.outputs) count(t, forward[e.op]);
}

void ActivationRanges::on_backward(const BackwardEvent& e) {
  if (e.node.name() == "AccumulateGrad") return;
  for (const Tensor& t : e.grads_in) count(t, backward[e.node.name()]);
}

std::string ActivationRanges::table(double loss_scale) const {
  char head[160];
  std::snprintf(head, sizeof head,
                "f16 range of the activations (forward) and of their gradients (backward, at loss scale %.10g), per op:\n",
                loss_scale);
  std::string out = head;
  out += "  op                    forward values  flush to 0    inf   backward values  flush to 0    inf\n";
  std::map<std::string, int> ops;
  for (const auto& [op, c] : forward) ops[op] = 1;
  for (const auto& [op, c] : backward) ops[op] = 1;
  for (const auto& [op, _] : ops) {
    const auto f = forward.count(op) ? forward.at(op) : RangeCounts{};
    const auto b = backward.count(op) ? backward.at(op) : RangeCounts{};
    char line[256];
    std::snprintf(line, sizeof line, "  %-20s %15lld  %10s %6s  %15lld  %10s %6s\n", op.c_str(), static_cast<long long>(f.values),
                  pct(f.flush, f.values).c_str(), pct(f.overflow, f.values).c_str(), static_cast<long long>(b.values),
                  pct(b.flush, b.values).c_str(), pct(b.overflow, b.values).c_str());
    out += line;
  }
  return out;
}

}  // namespace seg
