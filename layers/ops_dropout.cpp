// dropout2d (kernels/cpu/dropout.h, kernels/cuda/dropout.h). The mask is drawn on the tensor's own
// device (Philox is counter-based, so both devices draw the same mask for the same stream).
#include "core/autograd.h"
#include "core/dispatch.h"
#include "core/rng.h"
#include "kernels/cpu/dropout.h"
#ifdef SEG_WITH_CUDA
#include "kernels/cuda/dropout.h"
#endif
#include "layers/ops.h"

namespace seg::ops {

namespace {
void apply_mask(const Tensor& in, const Tensor& mask, double scale, int64_t N, int64_t HW, int64_t C, Tensor& out) {
  check_same_device("dropout2d", {&in, &mask});
  SEG_DISPATCH_DEVICE("dropout2d", in, SEG_CPU_FLOAT_DTYPES, SEG_CUDA_FLOAT_DTYPES, [&](auto dev, auto tag) {
    using T = SEG_TYPE(tag);
    SEG_KERNEL(dev, dropout2d_apply<T>)(in.data<T>(), mask.data<uint8_t>(), scale, N, HW, C, out.data<T>());
  });
}
}  // namespace

Tensor dropout2d(const Tensor& x_in, double p, bool training) {
  const char* op = "dropout2d";
  SEG_CHECK(p >= 0.0 && p < 1.0, runtime, op, ": probability ", p, " must be in [0, 1)");
  if (!training || p == 0.0) return x_in;
  SEG_CHECK(x_in.dim() == 4, runtime, op, ": input must be [N,H,W,C], got ", x_in.str());
  const int64_t N = x_in.size(0), HW = x_in.size(1) * x_in.size(2), C = x_in.size(3);
  SEG_PROFILE(op, "forward", {{"x", prof_tensor(x_in)}, {"p", p}});
  const Tensor x = x_in.contiguous();
  Tensor mask = x.new_empty({N, C}, DType::u8);
  const PhiloxKey key = global_key(RngPurpose::dropout);
  const uint64_t stream = next_stream(RngPurpose::dropout);
  SEG_DISPATCH_DEVICE(op, mask, (DType::u8), (DType::u8), [&](auto dev, auto) {
    SEG_KERNEL(dev, dropout2d_mask)(key, stream, N, C, p, mask.data<uint8_t>());
  });
  const double scale = 1.0 / (1.0 - p);
  Tensor y = x.new_empty(x.shape());
  apply_mask(x, mask, scale, N, HW, C, y);
  record(op, {x_in}, {y}, [mask, scale, N, HW, C, p](const std::vector<Tensor>& g) {
    SEG_PROFILE("dropout2d", "backward", {{"x", prof_tensor(g[0])}, {"p", p}});
    const Tensor dy = g[0].contiguous();
    Tensor dx = dy.new_empty(dy.shape());
    apply_mask(dy, mask, scale, N, HW, C, dx);
    return std::vector<Tensor>{dx};
  });
  return y;
}

}  // namespace seg::ops
