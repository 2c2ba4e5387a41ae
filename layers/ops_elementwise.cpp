// add, mul, scale, relu, relu6: forward kernels in kernels/cpu/elementwise.h (and kernels/cuda/
// elementwise.h); backward rules below. Kernel calls go through the device seam (core/dispatch.h).
#include "core/autograd.h"
#include "core/dispatch.h"
#include "kernels/cpu/elementwise.h"
#ifdef SEG_WITH_CUDA
#include "kernels/cuda/elementwise.h"
#endif
#include "layers/autocast.h"
#include "layers/ops.h"

namespace seg::ops {

nlohmann::json prof_tensor(const Tensor& t) {
  return t.defined() ? nlohmann::json{{"shape", t.shape().vec()}, {"dtype", dtype_name(t.dtype())}} : nlohmann::json();
}

void require_same_shape(const char* op, const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype())
    throw Error(ErrorKind::runtime, str(op, ": operands differ: ", a.str(), " and ", b.str())).op(op);
  check_same_device(op, {&a, &b});
}

namespace {
enum class BinaryKind { add, mul };

// out = a (+|*) b for two same-shape tensors on one device.
Tensor binary(const char* op, BinaryKind kind, const Tensor& a_in, const Tensor& b_in) {
  require_same_shape(op, a_in, b_in);
  const Tensor a = a_in.contiguous(), b = b_in.contiguous();
  Tensor out = a.new_empty(a.shape());
  SEG_DISPATCH_DEVICE(op, a, SEG_CPU_FLOAT_DTYPES, SEG_CUDA_FLOAT_DTYPES, [&](auto dev, auto tag) {
    using T = SEG_TYPE(tag);
    if (kind == BinaryKind::add) SEG_KERNEL(dev, add<T>)(a.data<T>(), b.data<T>(), out.data<T>(), a.numel());
    else SEG_KERNEL(dev, mul<T>)(a.data<T>(), b.data<T>(), out.data<T>(), a.numel());
  });
  return out;
}
}  // namespace

Tensor add(const Tensor& a_arg, const Tensor& b_arg) {
  std::vector<Tensor> in{a_arg, b_arg};
  autocast_all(OpClass::concat_add, in);
  const Tensor &a = in[0], &b = in[1];
  SEG_PROFILE("add", "forward", {{"x", prof_tensor(a)}});
  Tensor out = binary("add", BinaryKind::add, a, b);
  record("add", {a, b}, {out}, [](const std::vector<Tensor>& g) { return std::vector<Tensor>{g[0], g[0]}; });
  return out;
}

Tensor mul(const Tensor& a, const Tensor& b) {
  SEG_PROFILE("mul", "forward", {{"x", prof_tensor(a)}});
  Tensor out = binary("mul", BinaryKind::mul, a, b);
  const bool need_a = a.requires_grad(), need_b = b.requires_grad();
  record("mul", {a, b}, {out}, [a = need_b ? a.detach() : Tensor(), b = need_a ? b.detach() : Tensor()](
                                   const std::vector<Tensor>& g) {
    SEG_PROFILE("mul", "backward", {{"x", prof_tensor(g[0])}});
    return std::vector<Tensor>{b.defined() ? mul(g[0], b) : Tensor(), a.defined() ? mul(g[0], a) : Tensor()};
  });
  return out;
}

Tensor scale(const Tensor& a_in, double s) {
  SEG_PROFILE("scale", "forward", {{"x", prof_tensor(a_in)}});
  const Tensor a = a_in.contiguous();
  Tensor out = a.new_empty(a.shape());
  SEG_DISPATCH_DEVICE("scale", a, SEG_CPU_FLOAT_DTYPES, SEG_CUDA_FLOAT_DTYPES, [&](auto dev, auto tag) {
    using T = SEG_TYPE(tag);
    SEG_KERNEL(dev, scale<T>)(a.data<T>(), s, out.data<T>(), a.numel());
  });
  record("scale", {a_in}, {out}, [s](const std::vector<Tensor>& g) {
    SEG_PROFILE("scale", "backward", {{"x", prof_tensor(g[0])}});
    return std::vector<Tensor>{scale(g[0], s)};
  });
  return out;
}

namespace {
Tensor relu_impl(const char* op, const Tensor& x_in, bool six) {
  SEG_PROFILE(op, "forward", {{"x", prof_tensor(x_in)}});
  const Tensor x = x_in.contiguous();
  Tensor y = x.new_empty(x.shape());
  SEG_DISPATCH_DEVICE(op, x, SEG_CPU_FLOAT_DTYPES, SEG_CUDA_FLOAT_DTYPES, [&](auto dev, auto tag) {
    using T = SEG_TYPE(tag);
    SEG_KERNEL(dev, relu_forward<T>)(x.data<T>(), y.data<T>(), x.numel(), six);
  });
  // Backward needs only where the input was positive (and below 6): saved as the input itself.
  record(op, {x_in}, {y}, [op, x = x.detach(), six](const std::vector<Tensor>& g) {
    SEG_PROFILE(op, "backward", {{"x", prof_tensor(x)}});
    const Tensor dy = g[0].contiguous();
    check_same_device(op, {&x, &dy});
    Tensor dx = x.new_empty(x.shape());
    SEG_DISPATCH_DEVICE(op, x, SEG_CPU_FLOAT_DTYPES, SEG_CUDA_FLOAT_DTYPES, [&](auto dev, auto tag) {
      using T = SEG_TYPE(tag);
      SEG_KERNEL(dev, relu_backward<T>)(x.data<T>(), dy.data<T>(), dx.data<T>(), x.numel(), six);
    });
    return std::vector<Tensor>{dx};
  });
  return y;
}
}  // namespace

Tensor relu(const Tensor& x) { return relu_impl("relu", x, false); }
Tensor relu6(const Tensor& x) { return relu_impl("relu6", x, true); }

}  // namespace seg::ops
