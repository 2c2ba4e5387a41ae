// __half / __nv_bfloat16 functions that CUDA's headers define for device code only.
//
// The types and most of their arithmetic come from CUDA's own cuda_fp16.h / cuda_bf16.h, which
// work on the host. These are the missing ones kernels use. Each rounds once, to nearest even,
// like the hardware: fma is exact in double before the single rounding; the transcendental
// functions are computed in float and rounded, which can differ from the GPU's approximations in
// the last bit.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>

inline __half __hfma(__half a, __half b, __half c) {
  return __double2half(static_cast<double>(__half2float(a)) * __half2float(b) + __half2float(c));
}
inline __nv_bfloat16 __hfma(__nv_bfloat16 a, __nv_bfloat16 b, __nv_bfloat16 c) {
  return __double2bfloat16(static_cast<double>(__bfloat162float(a)) * __bfloat162float(b) + __bfloat162float(c));
}
inline __half __hfma_relu(__half a, __half b, __half c) {
  const __half r = __hfma(a, b, c);
  return __hisnan(r) ? r : (__half2float(r) < 0.0f ? __float2half(0.0f) : r);
}
inline __half2 __hfma2(__half2 a, __half2 b, __half2 c) {
  return __halves2half2(__hfma(__low2half(a), __low2half(b), __low2half(c)),
                        __hfma(__high2half(a), __high2half(b), __high2half(c)));
}
inline __nv_bfloat162 __hfma2(__nv_bfloat162 a, __nv_bfloat162 b, __nv_bfloat162 c) {
  return __halves2bfloat162(__hfma(__low2bfloat16(a), __low2bfloat16(b), __low2bfloat16(c)),
                            __hfma(__high2bfloat16(a), __high2bfloat16(b), __high2bfloat16(c)));
}

#define SEG_SIM_HALF_UNARY(name, expr)         \
  inline __half name(__half h) {               \
    const float x = __half2float(h);           \
    return __float2half(expr);                 \
  }                                            \
  inline __nv_bfloat16 name(__nv_bfloat16 h) { \
    const float x = __bfloat162float(h);       \
    return __float2bfloat16(expr);             \
  }
SEG_SIM_HALF_UNARY(hexp, std::exp(x))
SEG_SIM_HALF_UNARY(hexp2, std::exp2(x))
SEG_SIM_HALF_UNARY(hlog, std::log(x))
SEG_SIM_HALF_UNARY(hlog2, std::log2(x))
SEG_SIM_HALF_UNARY(hsqrt, std::sqrt(x))
SEG_SIM_HALF_UNARY(hrsqrt, 1.0f / std::sqrt(x))
SEG_SIM_HALF_UNARY(hrcp, 1.0f / x)
SEG_SIM_HALF_UNARY(hsin, std::sin(x))
SEG_SIM_HALF_UNARY(hcos, std::cos(x))
SEG_SIM_HALF_UNARY(htanh, std::tanh(x))
#undef SEG_SIM_HALF_UNARY

inline __half2 h2exp(__half2 h) { return __halves2half2(hexp(__low2half(h)), hexp(__high2half(h))); }
inline __half2 h2sqrt(__half2 h) { return __halves2half2(hsqrt(__low2half(h)), hsqrt(__high2half(h))); }

inline int __half2int_rn(__half h) {
  const float x = __half2float(h);
  return std::isnan(x) ? 0 : static_cast<int>(std::nearbyint(x));
}
inline unsigned __half2uint_rn(__half h) {
  const float x = __half2float(h);
  return (std::isnan(x) || x <= 0.0f) ? 0u : static_cast<unsigned>(std::nearbyint(x));
}
inline int __bfloat162int_rn(__nv_bfloat16 h) {
  const float x = __bfloat162float(h);
  if (std::isnan(x)) return 0;
  if (x >= 2147483647.0f) return 2147483647;
  if (x <= -2147483648.0f) return -2147483647 - 1;
  return static_cast<int>(std::nearbyint(x));
}
