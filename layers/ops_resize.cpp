// resize_bilinear (kernels/cpu/resize.h, kernels/cuda/resize.h): every upsampling in the upstream decoders.
#include "core/autograd.h"
#include "core/dispatch.h"
#include "kernels/cpu/resize.h"
#ifdef SEG_WITH_CUDA
#include "kernels/cuda/resize.h"
#endif
#include "layers/ops.h"

namespace seg::ops {

Tensor resize_bilinear(const Tensor& x_in, int64_t out_h, int64_t out_w) {
  const char* op = "resize_bilinear";
  SEG_CHECK(x_in.dim() == 4 && out_h >= 1 && out_w >= 1, runtime, op, ": input ", x_in.str(), " to ", out_h, "x",
            out_w);
  cpu::ResizeShape s;
  s.N = x_in.size(0), s.H = x_in.size(1), s.W = x_in.size(2), s.C = x_in.size(3), s.Ho = out_h, s.Wo = out_w;
  if (s.H == out_h && s.W == out_w) {
    // Same size: align_corners=False sampling is the identity. Return a copy so the result is a new
    // tensor (in-place users of the output never alias the input).
    Tensor y = x_in.contiguous().clone();
    record(op, {x_in}, {y}, [](const std::vector<Tensor>& g) { return std::vector<Tensor>{g[0]}; });
    return y;
  }
  const Tensor x = x_in.contiguous();
  SEG_PROFILE(op, "forward", {{"x", prof_tensor(x)}, {"out", {out_h, out_w}}});
  Tensor y = x.new_empty({s.N, out_h, out_w, s.C});
  SEG_DISPATCH_DEVICE(op, x, SEG_CPU_FLOAT_DTYPES, SEG_CUDA_FLOAT_DTYPES, [&](auto dev, auto tag) {
    using T = SEG_TYPE(tag);
    SEG_KERNEL(dev, resize_bilinear_forward<T>)(s, x.data<T>(), y.data<T>());
  });
  record(op, {x_in}, {y}, [s, dtype = x.dtype()](const std::vector<Tensor>& g) {
    SEG_PROFILE("resize_bilinear", "backward",
                {{"x", {{"shape", {s.N, s.H, s.W, s.C}}, {"dtype", dtype_name(dtype)}}}, {"out", {s.Ho, s.Wo}}});
    const Tensor dy = g[0].contiguous();
    Tensor dx = dy.new_empty({s.N, s.H, s.W, s.C}, dtype);
    SEG_DISPATCH_DEVICE("resize_bilinear", dx, SEG_CPU_FLOAT_DTYPES, SEG_CUDA_FLOAT_DTYPES, [&](auto dev, auto tag) {
      using T = SEG_TYPE(tag);
      SEG_KERNEL(dev, resize_bilinear_backward<T>)(s, dy.data<T>(), dx.data<T>());
    });
    return std::vector<Tensor>{dx};
  });
  return y;
}

}  // namespace seg::ops
