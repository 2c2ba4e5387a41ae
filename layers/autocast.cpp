#include "layers/autocast.h"

#include "layers/ops.h"

namespace seg {

namespace {
thread_local Autocast* t_active = nullptr;

int width(DType dt) { return dt == DType::f64 ? 3 : dt == DType::f32 ? 2 : 1; }
}  // namespace

Autocast::Autocast(const AmpConfig& config) : config_(config), previous_(t_active), installed_(config.autocast()) {
  if (installed_) t_active = this;
}

Autocast::~Autocast() {
  if (installed_) t_active = previous_;
}

Autocast* Autocast::active() { return t_active; }

Tensor Autocast::cast(const Tensor& t, DType dtype) {
  if (!t.defined() || t.dtype() == dtype || !is_floating(t.dtype())) return t;
  if (!t.is_leaf() || !t.requires_grad()) return ops::cast(t, dtype);  // only parameters are cached
  auto it = cache_.find(t.impl());
  if (it != cache_.end() && it->second.dtype() == dtype) return it->second;
  Tensor c = ops::cast(t, dtype);
  cache_[t.impl()] = c;
  return c;
}

Tensor autocast(OpClass op, const Tensor& t) {
  Autocast* ac = Autocast::active();
  if (!ac || !t.defined() || !is_floating(t.dtype()) || t.dtype() == DType::f64) return t;
  switch (ac->config().precision(op)) {
    case Precision::half: return ac->cast(t, ac->config().half_dtype);
    case Precision::fp32: return ac->cast(t, DType::f32);
    default: return t;
  }
}

void autocast_all(OpClass op, std::vector<Tensor>& ts) {
  Autocast* ac = Autocast::active();
  if (!ac) return;
  if (ac->config().precision(op) != Precision::widest) {
    for (Tensor& t : ts) t = autocast(op, t);
    return;
  }
  DType widest = DType::bf16;
  bool any = false;
  for (const Tensor& t : ts)
    if (t.defined() && is_floating(t.dtype()) && (!any || width(t.dtype()) > width(widest))) {
      widest = t.dtype();
      any = true;
    }
  if (!any) return;
  for (Tensor& t : ts)
    if (t.defined() && is_floating(t.dtype())) t = ac->cast(t, widest);
}

}  // namespace seg
