#include "layers/conv2d.h"

namespace seg {

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel, int64_t stride, int64_t padding,
               int64_t dilation, int64_t groups, bool with_bias, DType dtype)
    : options(ops::Conv2dOptions::square(stride, padding, dilation, groups)) {
  SEG_CHECK(in_channels % groups == 0 && out_channels % groups == 0, runtime, "Conv2d: groups ", groups,
            " must divide ", in_channels, " and ", out_channels);
  weight = Tensor::zeros({out_channels, kernel, kernel, in_channels / groups}, dtype, Device::cpu());
  register_parameter("weight", &weight);
  if (with_bias) {
    bias = Tensor::zeros({out_channels}, dtype, Device::cpu());
    register_parameter("bias", &bias);
  }
}

Tensor Conv2d::forward(const Tensor& x) { return ops::conv2d(x, weight, bias, options); }

}  // namespace seg
