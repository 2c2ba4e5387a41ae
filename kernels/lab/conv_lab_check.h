// What the convolution labs (lab_conv, lab_winograd) share to validate a float32 path: the float64
// implicit GEMM as the reference of each pass (itself checked against the naive reference in
// tests/kernels/test_conv_paths.cpp) and the normalised error against it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/cpu/conv2d.h"

namespace seg::lab {

// The labs number the passes 0 = forward (y), 1 = backward data (dx), 2 = backward weight (dw).
inline cpu::ConvPass conv_pass_of(int pass) {
  return pass == 0 ? cpu::ConvPass::forward : pass == 1 ? cpu::ConvPass::backward_data : cpu::ConvPass::backward_weight;
}
inline const char* conv_pass_label(int pass) { return cpu::conv_pass_name(conv_pass_of(pass)); }

// The pass's output element count.
inline int64_t conv_pass_numel(int pass, const cpu::ConvShape& s) {
  return pass == 0 ? s.y_numel() : pass == 1 ? s.x_numel() : s.w_numel();
}

// The pass computed in float64 from the float32 inputs.
inline std::vector<double> conv_reference_f64(int pass, const cpu::ConvShape& s, const std::vector<float>& x_in,
                                              const std::vector<float>& w_in, const std::vector<float>& dy_in) {
  const std::vector<double> x(x_in.begin(), x_in.end()), w(w_in.begin(), w_in.end()), dy(dy_in.begin(), dy_in.end());
  std::vector<double> out(static_cast<size_t>(conv_pass_numel(pass, s)));
  if (pass == 0) cpu::conv2d_forward_gemm<double>(s, x.data(), w.data(), nullptr, out.data());
  else if (pass == 1) cpu::conv2d_backward_data_gemm<double>(s, w.data(), dy.data(), out.data());
  else cpu::conv2d_backward_weight_gemm<double>(s, x.data(), dy.data(), out.data(), nullptr);
  return out;
}

// max |got - want| / max |want|; a NaN or inf in got is an infinite error.
inline double normalized_error(const std::vector<float>& got, const std::vector<double>& want) {
  double err = 0, scale = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    err = std::max(err, std::abs(static_cast<double>(got[i]) - want[i]));
    scale = std::max(scale, std::abs(want[i]));
  }
  return scale > 0 ? err / scale : err;
}

}  // namespace seg::lab
