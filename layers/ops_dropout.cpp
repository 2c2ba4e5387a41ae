// dropout2d (kernels/cpu/dropout.h).
#include "core/autograd.h"
#include "core/rng.h"
#include "kernels/cpu/dropout.h"
#include "layers/ops.h"

namespace seg::ops {

Tensor dropout2d(const Tensor& x_in, double p, bool training) {
  const char* op = "dropout2d";
  SEG_CHECK(p >= 0.0 && p < 1.0, runtime, op, ": probability ", p, " must be in [0, 1)");
  if (!training || p == 0.0) return x_in;
  require_cpu(op, x_in);
  SEG_CHECK(x_in.dim() == 4, runtime, op, ": input must be [N,H,W,C], got ", x_in.str());
  const int64_t N = x_in.size(0), HW = x_in.size(1) * x_in.size(2), C = x_in.size(3);
  SEG_PROFILE(op, "forward", {{"x", prof_tensor(x_in)}, {"p", p}});
  Tensor mask = Tensor::empty({N, C}, DType::u8);
  cpu::dropout2d_mask(global_key(RngPurpose::dropout), next_stream(RngPurpose::dropout), N, C, p,
                      mask.data<uint8_t>());
  const double scale = 1.0 / (1.0 - p);
  const Tensor x = x_in.contiguous();
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  auto apply = [scale](const Tensor& in, const Tensor& m, int64_t n, int64_t hw, int64_t c, Tensor& out) {
    SEG_DISPATCH("dropout2d", in.dtype(), in.device(), (DType::f32, DType::f64, DType::f16, DType::bf16),
                 [&](auto tag) {
                   using T = SEG_TYPE(tag);
                   cpu::dropout2d_apply<T>(in.data<T>(), m.data<uint8_t>(), scale, n, hw, c, out.data<T>());
                 });
  };
  apply(x, mask, N, HW, C, y);
  record(op, {x_in}, {y}, [mask, N, HW, C, apply](const std::vector<Tensor>& g) {
    const Tensor dy = g[0].contiguous();
    Tensor dx = Tensor::empty(dy.shape(), dy.dtype());
    apply(dy, mask, N, HW, C, dx);
    return std::vector<Tensor>{dx};
  });
  return y;
}

}  // namespace seg::ops
