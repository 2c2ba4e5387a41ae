// conv2d: forward and backward through kernels/cpu/conv2d.h (CPU) and kernels/cuda/conv2d.h (CUDA).
#include <type_traits>

#include "core/autograd.h"
#include "core/dispatch.h"
#include "kernels/cpu/conv2d.h"
#include "kernels/cpu/copy.h"
#ifdef SEG_WITH_CUDA
#include "kernels/cuda/conv2d.h"
#endif
#include "layers/autocast.h"
#include "layers/ops.h"

namespace seg::ops {

namespace {
cpu::ConvShape conv_shape(const Tensor& x, const Tensor& w, const Conv2dOptions& o) {
  const char* op = "conv2d";
  SEG_CHECK(x.dim() == 4, runtime, op, ": input must be [N,H,W,C], got ", x.str());
  SEG_CHECK(w.dim() == 4, runtime, op, ": weight must be [O,KH,KW,C/groups], got ", w.str());
  SEG_CHECK(o.groups >= 1 && x.size(3) % o.groups == 0 && w.size(0) % o.groups == 0, runtime, op, ": groups ",
            o.groups, " must divide input channels ", x.size(3), " and output channels ", w.size(0));
  SEG_CHECK(w.size(3) * o.groups == x.size(3), runtime, op, ": weight ", w.str(), " expects ", w.size(3) * o.groups,
            " input channels, input has ", x.size(3));
  SEG_CHECK(o.stride_h >= 1 && o.stride_w >= 1 && o.dil_h >= 1 && o.dil_w >= 1 && o.pad_h >= 0 && o.pad_w >= 0,
            runtime, op, ": stride and dilation must be >= 1 and padding >= 0");
  cpu::ConvShape s;
  s.N = x.size(0);
  s.H = x.size(1);
  s.W = x.size(2);
  s.C = x.size(3);
  s.O = w.size(0);
  s.KH = w.size(1);
  s.KW = w.size(2);
  s.stride_h = o.stride_h;
  s.stride_w = o.stride_w;
  s.pad_h = o.pad_h;
  s.pad_w = o.pad_w;
  s.dil_h = o.dil_h;
  s.dil_w = o.dil_w;
  s.groups = o.groups;
  SEG_CHECK(s.Ho() >= 1 && s.Wo() >= 1, runtime, op, ": input ", x.str(), " is smaller than the kernel window");
  return s;
}

// The computation for one dtype, on the tensors' device. CPU: f32 and f64 run the same paths
// (kernels/cpu/conv2d_dispatch.cpp: implicit GEMM or depthwise; f64 with a plain double GEMM), so
// the f64 gradient checks test the production index logic; f32 also runs Winograd F(2x2) on 3x3
// stride-1 dense layers, which f64 never does; f16/bf16 are widened to f32 for the arithmetic with
// the result rounded once to the storage type (a CPU has no faster half arithmetic). A GPU runs half
// natively (seg::cuda::conv2d_* pick their kernel per shape); that difference is the `if constexpr`
// in these dispatch lambdas, not a second op body.
Tensor conv_forward(const cpu::ConvShape& s, const Tensor& x, const Tensor& w, const Tensor& b) {
  Tensor y = x.new_empty({s.N, s.Ho(), s.Wo(), s.O});
  SEG_DISPATCH_DEVICE("conv2d", x, SEG_CPU_FLOAT_DTYPES, SEG_CUDA_FLOAT_DTYPES, [&](auto dev, auto tag) {
    using T = SEG_TYPE(tag);
    if constexpr (!on_cuda(dev) && cpu::is_half16<T>::value) {
      y.copy_(conv_forward(s, x.to(DType::f32), w.to(DType::f32), b.defined() ? b.to(DType::f32) : Tensor()));
    } else {
      const T* bias = b.defined() ? b.data<T>() : nullptr;
      SEG_KERNEL(dev, conv2d_forward<T>)(s, x.data<T>(), w.data<T>(), bias, y.data<T>());
    }
  });
  return y;
}

Tensor conv_backward_data(const cpu::ConvShape& s, const Tensor& w, const Tensor& dy) {
  Tensor dx = dy.new_empty({s.N, s.H, s.W, s.C}, w.dtype());
  SEG_DISPATCH_DEVICE("conv2d", w, SEG_CPU_FLOAT_DTYPES, SEG_CUDA_FLOAT_DTYPES, [&](auto dev, auto tag) {
    using T = SEG_TYPE(tag);
    if constexpr (!on_cuda(dev) && cpu::is_half16<T>::value) {
      dx.copy_(conv_backward_data(s, w.to(DType::f32), dy.to(DType::f32)));
    } else {
      SEG_KERNEL(dev, conv2d_backward_data<T>)(s, w.data<T>(), dy.data<T>(), dx.data<T>());
    }
  });
  return dx;
}

// Returns dw; writes db when has_bias. The CUDA launcher takes its scratch space from the caller.
Tensor conv_backward_weight(const cpu::ConvShape& s, const Tensor& x, const Tensor& dy, bool has_bias, Tensor& db) {
  Tensor dw = x.new_empty({s.O, s.KH, s.KW, s.Cg()});
  if (has_bias) db = x.new_empty({s.O});
  SEG_DISPATCH_DEVICE("conv2d", x, SEG_CPU_FLOAT_DTYPES, SEG_CUDA_FLOAT_DTYPES, [&](auto dev, auto tag) {
    using T = SEG_TYPE(tag);
    if constexpr (!on_cuda(dev) && cpu::is_half16<T>::value) {
      Tensor db32;
      dw.copy_(conv_backward_weight(s, x.to(DType::f32), dy.to(DType::f32), has_bias, db32));
      if (has_bias) db.copy_(db32);
    } else {
      T* dbias = has_bias ? db.data<T>() : nullptr;
      Tensor workspace;
      SEG_CUDA_ONLY(if constexpr (on_cuda(dev)) workspace = x.new_empty(
                        {static_cast<int64_t>(cuda::conv2d_backward_weight_workspace_bytes(s))}, DType::u8);)
      SEG_KERNEL_WS(dev, workspace.data_ptr(), conv2d_backward_weight<T>)(s, x.data<T>(), dy.data<T>(), dw.data<T>(),
                                                                          dbias);
    }
  });
  return dw;
}

}  // namespace

Tensor conv2d_impl(const Tensor& x_in, const Tensor& w_in, const Tensor& b_in, const Conv2dOptions& opt);

// Under O1 autocast the input, weight and bias are cast to half first (cached per step for weights).
Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dOptions& opt) {
  prof::note_parameter(w.name());  // names the NVTX ranges after the layer (before autocast's copy)
  if (!Autocast::active()) return conv2d_impl(x, w, b, opt);
  return conv2d_impl(autocast(OpClass::conv, x), autocast(OpClass::conv, w), autocast(OpClass::conv, b), opt);
}

Tensor conv2d_impl(const Tensor& x_in, const Tensor& w_in, const Tensor& b_in, const Conv2dOptions& opt) {
  const char* op = "conv2d";
  check_same_device(op, {&x_in, &w_in, &b_in});
  SEG_CHECK(x_in.dtype() == w_in.dtype(), runtime, op, ": input ", x_in.str(), " and weight ", w_in.str(),
            " differ in dtype");
  const cpu::ConvShape s = conv_shape(x_in, w_in, opt);
  if (b_in.defined())
    SEG_CHECK(b_in.dim() == 1 && b_in.size(0) == s.O && b_in.dtype() == x_in.dtype(), runtime, op, ": bias ",
              b_in.str(), " for ", s.O, " output channels");
  const Tensor x = x_in.contiguous(), w = w_in.contiguous(), b = b_in.defined() ? b_in.contiguous() : Tensor();
  const nlohmann::json args = {{"x", prof_tensor(x)}, {"w", w.shape().vec()}, {"stride", opt.stride_h},
                               {"pad", opt.pad_h}, {"dilation", opt.dil_h}, {"groups", opt.groups},
                               {"bias", b.defined()}};
  SEG_PROFILE(op, "forward", args);
  Tensor y = conv_forward(s, x, w, b);
  const bool need_dx = x_in.requires_grad(), need_dw = w_in.requires_grad() || (b_in.defined() && b_in.requires_grad());
  record(op, {x_in, w_in, b_in}, {y},
         [s, x = need_dw ? x.detach() : Tensor(), w = need_dx ? w.detach() : Tensor(), has_b = b_in.defined(), args](
             const std::vector<Tensor>& g) {
           SEG_PROFILE("conv2d", "backward", args);
           const Tensor dy = g[0].contiguous();
           Tensor dx, dw, db;
           if (w.defined()) dx = conv_backward_data(s, w, dy);
           if (x.defined()) dw = conv_backward_weight(s, x, dy, has_b, db);
           return std::vector<Tensor>{dx, dw, db};
         });
  return y;
}

}  // namespace seg::ops
