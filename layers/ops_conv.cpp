// conv2d: forward and backward on the CPU through kernels/cpu/conv2d.h.
#include <type_traits>

#include "core/autograd.h"
#include "kernels/cpu/conv2d.h"
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

// The computation for one dtype. f32 and f64 run the same paths (kernels/cpu/conv2d_dispatch.cpp:
// implicit GEMM or depthwise; f64 with a plain double GEMM), so the f64 gradient checks test the
// production index logic; f16/bf16 are widened to f32 for the arithmetic and the result is rounded
// once to the storage type (a CPU has no faster half arithmetic; the GPU path uses tensor cores).
Tensor conv_forward(const cpu::ConvShape& s, const Tensor& x, const Tensor& w, const Tensor& b) {
  if (is_half(x.dtype())) {
    return conv_forward(s, x.to(DType::f32), w.to(DType::f32), b.defined() ? b.to(DType::f32) : Tensor())
        .to(x.dtype());
  }
  Tensor y = Tensor::empty({s.N, s.Ho(), s.Wo(), s.O}, x.dtype(), x.device());
  SEG_DISPATCH("conv2d", x.dtype(), x.device(), (DType::f32, DType::f64), [&](auto tag) {
    using T = SEG_TYPE(tag);
    const T* bias = b.defined() ? b.data<T>() : nullptr;
    cpu::conv2d_forward<T>(s, x.data<T>(), w.data<T>(), bias, y.data<T>());
  });
  return y;
}

Tensor conv_backward_data(const cpu::ConvShape& s, const Tensor& w, const Tensor& dy) {
  if (is_half(w.dtype())) return conv_backward_data(s, w.to(DType::f32), dy.to(DType::f32)).to(w.dtype());
  Tensor dx = Tensor::empty({s.N, s.H, s.W, s.C}, w.dtype());
  SEG_DISPATCH("conv2d", w.dtype(), w.device(), (DType::f32, DType::f64), [&](auto tag) {
    using T = SEG_TYPE(tag);
    cpu::conv2d_backward_data<T>(s, w.data<T>(), dy.data<T>(), dx.data<T>());
  });
  return dx;
}

// Returns dw; writes db when has_bias.
Tensor conv_backward_weight(const cpu::ConvShape& s, const Tensor& x, const Tensor& dy, bool has_bias, Tensor& db) {
  if (is_half(x.dtype())) {
    Tensor db32;
    Tensor dw = conv_backward_weight(s, x.to(DType::f32), dy.to(DType::f32), has_bias, db32).to(x.dtype());
    if (has_bias) db = db32.to(x.dtype());
    return dw;
  }
  Tensor dw = Tensor::empty({s.O, s.KH, s.KW, s.Cg()}, x.dtype());
  if (has_bias) db = Tensor::empty({s.O}, x.dtype());
  SEG_DISPATCH("conv2d", x.dtype(), x.device(), (DType::f32, DType::f64), [&](auto tag) {
    using T = SEG_TYPE(tag);
    T* dbias = has_bias ? db.data<T>() : nullptr;
    cpu::conv2d_backward_weight<T>(s, x.data<T>(), dy.data<T>(), dw.data<T>(), dbias);
  });
  return dw;
}

}  // namespace

Tensor conv2d_impl(const Tensor& x_in, const Tensor& w_in, const Tensor& b_in, const Conv2dOptions& opt);

// Under O1 autocast the input, weight and bias are cast to half first (cached per step for weights).
Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dOptions& opt) {
  if (!Autocast::active()) return conv2d_impl(x, w, b, opt);
  return conv2d_impl(autocast(OpClass::conv, x), autocast(OpClass::conv, w), autocast(OpClass::conv, b), opt);
}

Tensor conv2d_impl(const Tensor& x_in, const Tensor& w_in, const Tensor& b_in, const Conv2dOptions& opt) {
  const char* op = "conv2d";
  require_cpu(op, x_in);
  check_same_device(x_in, w_in, op);
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
  SEG_DISPATCH(op, x.dtype(), x.device(), (DType::f32, DType::f64, DType::f16, DType::bf16), [](auto) {});
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
