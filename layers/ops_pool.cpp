// max_pool2d and adaptive_avg_pool2d (kernels/cpu/pool.h, kernels/cuda/pool.h).
#include "core/autograd.h"
#include "core/dispatch.h"
#include "kernels/cpu/pool.h"
#ifdef SEG_WITH_CUDA
#include "kernels/cuda/pool.h"
#endif
#include "layers/ops.h"

namespace seg::ops {

Tensor max_pool2d(const Tensor& x_in, int64_t kernel, int64_t stride, int64_t padding) {
  const char* op = "max_pool2d";
  SEG_CHECK(x_in.dim() == 4, runtime, op, ": input must be [N,H,W,C], got ", x_in.str());
  SEG_CHECK(kernel >= 1 && stride >= 1 && padding >= 0 && 2 * padding <= kernel, runtime, op,
            ": bad kernel/stride/padding ", kernel, "/", stride, "/", padding);
  cpu::PoolShape s;
  s.N = x_in.size(0), s.H = x_in.size(1), s.W = x_in.size(2), s.C = x_in.size(3);
  s.kernel = kernel, s.stride = stride, s.pad = padding;
  SEG_CHECK(s.Ho() >= 1 && s.Wo() >= 1, runtime, op, ": input ", x_in.str(), " smaller than the window");
  const Tensor x = x_in.contiguous();
  SEG_PROFILE(op, "forward", {{"x", prof_tensor(x)}, {"kernel", kernel}, {"stride", stride}, {"pad", padding}});
  Tensor y = x.new_empty({s.N, s.Ho(), s.Wo(), s.C});
  Tensor argmax = x.new_empty(y.shape(), DType::i32);
  SEG_DISPATCH_DEVICE(op, x, SEG_CPU_FLOAT_DTYPES, SEG_CUDA_FLOAT_DTYPES, [&](auto dev, auto tag) {
    using T = SEG_TYPE(tag);
    SEG_KERNEL(dev, maxpool2d_forward<T>)(s, x.data<T>(), y.data<T>(), argmax.data<int32_t>());
  });
  record(op, {x_in}, {y}, [s, argmax, dtype = x.dtype()](const std::vector<Tensor>& g) {
    SEG_PROFILE("max_pool2d", "backward",
                {{"x", {{"shape", {s.N, s.H, s.W, s.C}}, {"dtype", dtype_name(dtype)}}}, {"kernel", s.kernel},
                 {"stride", s.stride}, {"pad", s.pad}});
    const Tensor dy = g[0].contiguous();
    check_same_device("max_pool2d", {&dy, &argmax});
    Tensor dx = dy.new_empty({s.N, s.H, s.W, s.C}, dtype);
    SEG_DISPATCH_DEVICE("max_pool2d", dx, SEG_CPU_FLOAT_DTYPES, SEG_CUDA_FLOAT_DTYPES, [&](auto dev, auto tag) {
      using T = SEG_TYPE(tag);
      SEG_KERNEL(dev, maxpool2d_backward<T>)(s, dy.data<T>(), argmax.data<int32_t>(), dx.data<T>());
    });
    return std::vector<Tensor>{dx};
  });
  return y;
}

Tensor adaptive_avg_pool2d(const Tensor& x_in, int64_t out_h, int64_t out_w) {
  const char* op = "adaptive_avg_pool2d";
  SEG_CHECK(x_in.dim() == 4 && out_h >= 1 && out_w >= 1, runtime, op, ": input ", x_in.str(), " to ", out_h, "x",
            out_w);
  const int64_t N = x_in.size(0), H = x_in.size(1), W = x_in.size(2), C = x_in.size(3);
  const Tensor x = x_in.contiguous();
  SEG_PROFILE(op, "forward", {{"x", prof_tensor(x)}, {"out", {out_h, out_w}}});
  Tensor y = x.new_empty({N, out_h, out_w, C});
  SEG_DISPATCH_DEVICE(op, x, SEG_CPU_FLOAT_DTYPES, SEG_CUDA_FLOAT_DTYPES, [&](auto dev, auto tag) {
    using T = SEG_TYPE(tag);
    SEG_KERNEL(dev, adaptive_avgpool2d_forward<T>)(x.data<T>(), N, H, W, C, out_h, out_w, y.data<T>());
  });
  record(op, {x_in}, {y}, [N, H, W, C, out_h, out_w, dtype = x.dtype()](const std::vector<Tensor>& g) {
    SEG_PROFILE("adaptive_avg_pool2d", "backward",
                {{"x", {{"shape", {N, H, W, C}}, {"dtype", dtype_name(dtype)}}}, {"out", {out_h, out_w}}});
    const Tensor dy = g[0].contiguous();
    Tensor dx = dy.new_empty({N, H, W, C}, dtype);
    SEG_DISPATCH_DEVICE("adaptive_avg_pool2d", dx, SEG_CPU_FLOAT_DTYPES, SEG_CUDA_FLOAT_DTYPES, [&](auto dev, auto tag) {
      using T = SEG_TYPE(tag);
      SEG_KERNEL(dev, adaptive_avgpool2d_backward<T>)(dy.data<T>(), N, H, W, C, out_h, out_w, dx.data<T>());
    });
    return std::vector<Tensor>{dx};
  });
  return y;
}

}  // namespace seg::ops
