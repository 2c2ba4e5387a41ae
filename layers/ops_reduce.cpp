// sum and mean over all elements.
#include "core/autograd.h"
#include "kernels/cpu/elementwise.h"
#include "layers/autocast.h"
#include "layers/ops.h"

namespace seg::ops {

namespace {
Tensor reduce_all(const char* op, const Tensor& x_in, double factor) {
  require_cpu(op, x_in);
  const Tensor x = x_in.contiguous();
  double total = 0;
  SEG_DISPATCH(op, x.dtype(), x.device(), (DType::f32, DType::f64, DType::f16, DType::bf16), [&](auto tag) {
    using T = SEG_TYPE(tag);
    total = cpu::sum(x.data<T>(), x.numel());
  });
  Tensor out = Tensor::full(Shape{}, total * factor, x.dtype(), x.device());
  record(op, {x_in}, {out}, [shape = x.shape(), dtype = x.dtype(), device = x.device(), factor](
                                const std::vector<Tensor>& g) {
    return std::vector<Tensor>{Tensor::full(shape, g[0].item() * factor, dtype, device)};
  });
  return out;
}
}  // namespace

Tensor sum(const Tensor& x) { return reduce_all("sum", autocast(OpClass::reduction, x), 1.0); }
Tensor mean(const Tensor& x) {
  SEG_CHECK(x.numel() > 0, runtime, "mean of an empty tensor ", x.str());
  return reduce_all("mean", autocast(OpClass::reduction, x), 1.0 / static_cast<double>(x.numel()));
}

}  // namespace seg::ops
