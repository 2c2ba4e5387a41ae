// cast: the dtype conversion as an autograd op (mixed precision's basic move).
//   forward: y = round_to(dtype, x)      backward: dx = dy converted back to x's dtype
// so a gradient arriving in half precision reaches an fp32 parameter as fp32 (O1), and vice versa.
#include "core/autograd.h"
#include "layers/ops.h"

namespace seg::ops {

Tensor cast(const Tensor& x, DType dtype) {
  if (x.dtype() == dtype) return x;
  SEG_CHECK(is_floating(x.dtype()) && is_floating(dtype), runtime, "cast: ", x.str(), " to ", dtype_name(dtype),
            ": only floating-point casts are differentiable");
  Tensor y = x.to(dtype);
  record("cast", {x}, {y}, [from = x.dtype()](const std::vector<Tensor>& g) {
    return std::vector<Tensor>{g[0].to(from)};
  });
  return y;
}

}  // namespace seg::ops
