// softmax, log_softmax and argmax over channels (kernels/cpu/softmax.h, kernels/cuda/softmax.h).
#include "core/autograd.h"
#include "core/dispatch.h"
#include "kernels/cpu/softmax.h"
#ifdef SEG_WITH_CUDA
#include "kernels/cuda/softmax.h"
#endif
#include "layers/autocast.h"
#include "layers/ops.h"

namespace seg::ops {

namespace {
Tensor softmax_impl(const char* op, const Tensor& x_in, bool log) {
  SEG_CHECK(x_in.dim() >= 1 && x_in.numel() > 0, runtime, op, ": empty input ", x_in.str());
  const int64_t C = x_in.size(-1), P = x_in.numel() / C;
  const Tensor x = x_in.contiguous();
  SEG_PROFILE(op, "forward", {{"x", prof_tensor(x)}});
  Tensor y = x.new_empty(x.shape());
  SEG_DISPATCH_DEVICE(op, x, SEG_CPU_FLOAT_DTYPES, SEG_CUDA_FLOAT_DTYPES, [&](auto dev, auto tag) {
    using T = SEG_TYPE(tag);
    SEG_KERNEL(dev, softmax_forward<T>)(x.data<T>(), P, C, y.data<T>(), log);
  });
  record(op, {x_in}, {y}, [op, y = y.detach(), P, C, log](const std::vector<Tensor>& g) {
    SEG_PROFILE(op, "backward", {{"x", prof_tensor(y)}});
    const Tensor dy = g[0].contiguous();
    check_same_device(op, {&y, &dy});
    Tensor dx = y.new_empty(y.shape());
    SEG_DISPATCH_DEVICE(op, y, SEG_CPU_FLOAT_DTYPES, SEG_CUDA_FLOAT_DTYPES, [&](auto dev, auto tag) {
      using T = SEG_TYPE(tag);
      SEG_KERNEL(dev, softmax_backward<T>)(y.data<T>(), dy.data<T>(), P, C, dx.data<T>(), log);
    });
    return std::vector<Tensor>{dx};
  });
  return y;
}
}  // namespace

Tensor softmax(const Tensor& x) { return softmax_impl("softmax", autocast(OpClass::softmax, x), false); }
Tensor log_softmax(const Tensor& x) { return softmax_impl("log_softmax", autocast(OpClass::softmax, x), true); }

Tensor argmax_channels(const Tensor& x_in) {
  const char* op = "argmax_channels";
  SEG_CHECK(x_in.dim() >= 1 && x_in.numel() > 0, runtime, op, ": empty input ", x_in.str());
  const int64_t C = x_in.size(-1), P = x_in.numel() / C;
  Shape out_shape;
  for (int d = 0; d < x_in.dim() - 1; ++d) out_shape.push_back(x_in.size(d));
  const Tensor x = x_in.contiguous();
  SEG_PROFILE(op, "forward", {{"x", prof_tensor(x)}});
  Tensor out = x.new_empty(out_shape, DType::i32);
  SEG_DISPATCH_DEVICE(op, x, SEG_CPU_FLOAT_DTYPES, SEG_CUDA_FLOAT_DTYPES, [&](auto dev, auto tag) {
    using T = SEG_TYPE(tag);
    SEG_KERNEL(dev, argmax_channels<T>)(x.data<T>(), P, C, out.data<int32_t>());
  });
  return out;
}

}  // namespace seg::ops
