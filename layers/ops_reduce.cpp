// sum and mean over all elements.
#include "core/autograd.h"
#include "core/dispatch.h"
#include "kernels/cpu/elementwise.h"
#ifdef SEG_WITH_CUDA
#include "kernels/cuda/elementwise.h"
#endif
#include "layers/autocast.h"
#include "layers/ops.h"

namespace seg::ops {

namespace {
// The CPU kernel returns the f64 sum to the host; the CUDA one writes sum * factor into a device
// element (a deterministic two-pass reduction), so neither direction reads back from the device.
Tensor reduce_all(const char* op, const Tensor& x_in, double factor) {
  SEG_PROFILE(op, "forward", {{"x", prof_tensor(x_in)}});
  const Tensor x = x_in.contiguous();
  Tensor out = x.new_empty(Shape{});
  SEG_DISPATCH_DEVICE(op, x, SEG_CPU_FLOAT_DTYPES, SEG_CUDA_FLOAT_DTYPES, [&](auto dev, auto tag) {
    using T = SEG_TYPE(tag);
    SEG_CUDA_ONLY(if constexpr (on_cuda(dev)) {
      const Tensor workspace = x.new_empty({static_cast<int64_t>(cuda::sum_workspace_bytes(x.numel()))}, DType::u8);
      SEG_CUDA_KERNEL(dev, sum<T>)(x.data<T>(), x.numel(), factor, out.data<T>(), workspace.data_ptr());
    } else)
    {
      out.fill_(cpu::sum<T>(x.data<T>(), x.numel()) * factor);
    }
  });
  record(op, {x_in}, {out}, [op, shape = x.shape(), dtype = x.dtype(), factor](const std::vector<Tensor>& g) {
    SEG_PROFILE(op, "backward", {{"x", {{"shape", shape.vec()}, {"dtype", dtype_name(dtype)}}}});
    const Tensor dy = g[0].to(dtype).contiguous();
    Tensor dx = dy.new_empty(shape);
    SEG_DISPATCH_DEVICE(op, dx, SEG_CPU_FLOAT_DTYPES, SEG_CUDA_FLOAT_DTYPES, [&](auto dev, auto tag) {
      using T [[maybe_unused]] = SEG_TYPE(tag);  // used by the CUDA branch only
      SEG_CUDA_ONLY(if constexpr (on_cuda(dev)) {
        SEG_CUDA_KERNEL(dev, fill_from_device_scalar<T>)(dy.data<T>(), factor, dx.data<T>(), dx.numel());
      } else)
      {
        dx.fill_(dy.item() * factor);
      }
    });
    return std::vector<Tensor>{dx};
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
