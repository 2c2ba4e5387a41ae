// add, mul, scale, relu, relu6: forward kernels in kernels/cpu/elementwise.h; backward rules below.
#include "core/autograd.h"
#include "kernels/cpu/elementwise.h"
#include "layers/autocast.h"
#include "layers/ops.h"

namespace seg::ops {

#define SEG_FLOAT_DTYPES (DType::f32, DType::f64, DType::f16, DType::bf16)

void require_cpu(const char* op, const Tensor& t) {
  if (!t.device().is_cpu())
    throw Error(ErrorKind::device, str("op '", op, "' is not implemented on ", t.device().str(), " yet (", t.str(), ")"))
        .op(op)
        .with("device", t.device().str());
}

nlohmann::json prof_tensor(const Tensor& t) {
  return t.defined() ? nlohmann::json{{"shape", t.shape().vec()}, {"dtype", dtype_name(t.dtype())}} : nlohmann::json();
}

void require_same_shape(const char* op, const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype())
    throw Error(ErrorKind::runtime, str(op, ": operands differ: ", a.str(), " and ", b.str())).op(op);
}

namespace {
// out = f(a, b) for two same-shape tensors through a typed kernel.
template <class Kernel>
Tensor binary(const char* op, const Tensor& a_in, const Tensor& b_in, Kernel kernel) {
  require_same_shape(op, a_in, b_in);
  require_cpu(op, a_in);
  const Tensor a = a_in.contiguous(), b = b_in.contiguous();
  Tensor out = Tensor::empty(a.shape(), a.dtype(), a.device());
  SEG_DISPATCH(op, a.dtype(), a.device(), SEG_FLOAT_DTYPES, [&](auto tag) {
    using T = SEG_TYPE(tag);
    kernel(a.data<T>(), b.data<T>(), out.data<T>(), a.numel());
  });
  return out;
}
}  // namespace

Tensor add(const Tensor& a_arg, const Tensor& b_arg) {
  std::vector<Tensor> in{a_arg, b_arg};
  autocast_all(OpClass::concat_add, in);
  const Tensor &a = in[0], &b = in[1];
  SEG_PROFILE("add", "forward", {{"x", prof_tensor(a)}});
  Tensor out = binary("add", a, b, [](const auto* x, const auto* y, auto* o, int64_t n) { cpu::add(x, y, o, n); });
  record("add", {a, b}, {out}, [](const std::vector<Tensor>& g) { return std::vector<Tensor>{g[0], g[0]}; });
  return out;
}

Tensor mul(const Tensor& a, const Tensor& b) {
  Tensor out = binary("mul", a, b, [](const auto* x, const auto* y, auto* o, int64_t n) { cpu::mul(x, y, o, n); });
  const bool need_a = a.requires_grad(), need_b = b.requires_grad();
  record("mul", {a, b}, {out}, [a = need_b ? a.detach() : Tensor(), b = need_a ? b.detach() : Tensor()](
                                   const std::vector<Tensor>& g) {
    return std::vector<Tensor>{b.defined() ? mul(g[0], b) : Tensor(), a.defined() ? mul(g[0], a) : Tensor()};
  });
  return out;
}

Tensor scale(const Tensor& a_in, double s) {
  require_cpu("scale", a_in);
  const Tensor a = a_in.contiguous();
  Tensor out = Tensor::empty(a.shape(), a.dtype(), a.device());
  SEG_DISPATCH("scale", a.dtype(), a.device(), SEG_FLOAT_DTYPES, [&](auto tag) {
    using T = SEG_TYPE(tag);
    cpu::scale(a.data<T>(), s, out.data<T>(), a.numel());
  });
  record("scale", {a_in}, {out}, [s](const std::vector<Tensor>& g) { return std::vector<Tensor>{scale(g[0], s)}; });
  return out;
}

namespace {
Tensor relu_impl(const char* op, const Tensor& x_in, bool six) {
  require_cpu(op, x_in);
  SEG_PROFILE(op, "forward", {{"x", prof_tensor(x_in)}});
  const Tensor x = x_in.contiguous();
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  SEG_DISPATCH(op, x.dtype(), x.device(), SEG_FLOAT_DTYPES, [&](auto tag) {
    using T = SEG_TYPE(tag);
    cpu::relu_forward(x.data<T>(), y.data<T>(), x.numel(), six);
  });
  // Backward needs only where the input was positive (and below 6): saved as the input itself.
  record(op, {x_in}, {y}, [op, x = x.detach(), six](const std::vector<Tensor>& g) {
    SEG_PROFILE(op, "backward", {{"x", prof_tensor(x)}});
    const Tensor dy = g[0].contiguous();
    Tensor dx = Tensor::empty(x.shape(), x.dtype(), x.device());
    SEG_DISPATCH(op, x.dtype(), x.device(), SEG_FLOAT_DTYPES, [&](auto tag) {
      using T = SEG_TYPE(tag);
      cpu::relu_backward(x.data<T>(), dy.data<T>(), dx.data<T>(), x.numel(), six);
    });
    return std::vector<Tensor>{dx};
  });
  return y;
}
}  // namespace

Tensor relu(const Tensor& x) { return relu_impl("relu", x, false); }
Tensor relu6(const Tensor& x) { return relu_impl("relu6", x, true); }

}  // namespace seg::ops
