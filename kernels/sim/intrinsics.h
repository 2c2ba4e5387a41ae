// Math and bit intrinsics of CUDA device code, for simulated kernels.
//
// The standard math functions (expf, sqrtf, fminf, ...) come from the C library, in the global
// namespace as in CUDA. The fast-math intrinsics (__expf, __logf, __sinf, __fdividef, rsqrtf, ...)
// are computed with the accurate functions: results are closer to exact than the GPU's, so tests
// compare with tolerances. Exceptions that follow the GPU rule exactly: __fdividef (returns 0 for
// 2^126 < |y| < 2^128), __saturatef, the saturating float-to-int conversions, and the bit
// intrinsics. Only round-to-nearest variants of the arithmetic intrinsics (_rn) are provided.
// Cache-hinted loads and stores (__ldg, __ldcs, __stcs, ...) are plain loads and stores.
#pragma once

#include <math.h>

#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

// ---- min / max: CUDA offers them unqualified for the arithmetic types ----------------------------
#define SEG_SIM_MINMAX(T)                          \
  inline T min(T a, T b) { return b < a ? b : a; } \
  inline T max(T a, T b) { return a < b ? b : a; }
SEG_SIM_MINMAX(int)
SEG_SIM_MINMAX(unsigned int)
SEG_SIM_MINMAX(long)
SEG_SIM_MINMAX(unsigned long)
SEG_SIM_MINMAX(long long)
SEG_SIM_MINMAX(unsigned long long)
#undef SEG_SIM_MINMAX
inline float min(float a, float b) { return fminf(a, b); }
inline float max(float a, float b) { return fmaxf(a, b); }
inline double min(double a, double b) { return fmin(a, b); }
inline double max(double a, double b) { return fmax(a, b); }
inline double min(float a, double b) { return fmin(a, b); }
inline double min(double a, float b) { return fmin(a, b); }
inline double max(float a, double b) { return fmax(a, b); }
inline double max(double a, float b) { return fmax(a, b); }
inline unsigned int min(int a, unsigned int b) { return min(static_cast<unsigned>(a), b); }
inline unsigned int min(unsigned int a, int b) { return min(a, static_cast<unsigned>(b)); }
inline unsigned int max(int a, unsigned int b) { return max(static_cast<unsigned>(a), b); }
inline unsigned int max(unsigned int a, int b) { return max(a, static_cast<unsigned>(b)); }

// ---- single precision ----------------------------------------------------------------------------
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float rcbrtf(float x) { return 1.0f / cbrtf(x); }
inline float __expf(float x) { return expf(x); }
inline float __exp10f(float x) { return exp10f(x); }
inline float __logf(float x) { return logf(x); }
inline float __log2f(float x) { return log2f(x); }
inline float __log10f(float x) { return log10f(x); }
inline float __powf(float x, float y) { return powf(x, y); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __tanf(float x) { return tanf(x); }
inline void __sincosf(float x, float* s, float* c) {
  *s = sinf(x);
  *c = cosf(x);
}
inline float __fdividef(float x, float y) {
  const float ay = fabsf(y);
  if (ay > 0x1p126f && ay < INFINITY) return isinf(x) ? NAN : 0.0f;
  return x / y;
}
inline float fdividef(float x, float y) { return __fdividef(x, y); }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fsqrt_rn(float x) { return sqrtf(x); }
inline float __frsqrt_rn(float x) { return 1.0f / sqrtf(x); }
// nvcc never fuses __fadd_rn/__fsub_rn/__fmul_rn into an fma; g++ would, after inlining (it
// contracts a*b+c under -march=x86-64-v3, in C++ even in ISO mode). The empty asm makes each
// operand and result opaque, so the simulator rounds exactly where the GPU does. (Before this, the
// optimizer steps' mul-then-add matched the CPU's contracted fmas here and were 1 ulp off on an
// H200: storage_access.cuh.)
template <class T> inline T seg_sim_opaque(T x) {  // float or double
#if defined(__x86_64__) || defined(__i386__)
  asm("" : "+x"(x));
#elif defined(__aarch64__)
  asm("" : "+w"(x));
#else
  volatile T v = x;
  x = v;
#endif
  return x;
}
inline float __fadd_rn(float a, float b) { return seg_sim_opaque(seg_sim_opaque(a) + seg_sim_opaque(b)); }
inline float __fsub_rn(float a, float b) { return seg_sim_opaque(seg_sim_opaque(a) - seg_sim_opaque(b)); }
inline float __fmul_rn(float a, float b) { return seg_sim_opaque(seg_sim_opaque(a) * seg_sim_opaque(b)); }
inline float __fdiv_rn(float a, float b) { return a / b; }
namespace seg::sim::detail {
void count_fp32_fma();  // the FP32 FMA counter (counter_hooks.h); nothing unless the launch is counted
}  // namespace seg::sim::detail
inline float __fmaf_rn(float a, float b, float c) {
  seg::sim::detail::count_fp32_fma();
  return fmaf(a, b, c);
}
inline double __dadd_rn(double a, double b) { return seg_sim_opaque(seg_sim_opaque(a) + seg_sim_opaque(b)); }
inline double __dmul_rn(double a, double b) { return seg_sim_opaque(seg_sim_opaque(a) * seg_sim_opaque(b)); }
inline double __fma_rn(double a, double b, double c) { return fma(a, b, c); }
inline float __saturatef(float x) { return x > 0.0f ? (x < 1.0f ? x : 1.0f) : 0.0f; }  // NaN -> 0

// ---- conversions (cvt saturates; NaN converts to 0) ------------------------------------------------
namespace seg::sim::detail {
template <class I>
I saturate_to(double r) {
  if (std::isnan(r)) return 0;
  if (r <= static_cast<double>(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
  if (r >= static_cast<double>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return static_cast<I>(r);
}
}  // namespace seg::sim::detail
inline int __float2int_rn(float x) { return seg::sim::detail::saturate_to<int>(nearbyint(x)); }
inline int __float2int_rz(float x) { return seg::sim::detail::saturate_to<int>(trunc(x)); }
inline int __float2int_rd(float x) { return seg::sim::detail::saturate_to<int>(floor(x)); }
inline int __float2int_ru(float x) { return seg::sim::detail::saturate_to<int>(ceil(x)); }
inline unsigned __float2uint_rn(float x) { return seg::sim::detail::saturate_to<unsigned>(nearbyint(x)); }
inline unsigned __float2uint_rz(float x) { return seg::sim::detail::saturate_to<unsigned>(trunc(x)); }
inline long long __float2ll_rn(float x) { return seg::sim::detail::saturate_to<long long>(nearbyint(x)); }
inline long long __float2ll_rz(float x) { return seg::sim::detail::saturate_to<long long>(trunc(x)); }
inline int __double2int_rn(double x) { return seg::sim::detail::saturate_to<int>(nearbyint(x)); }
inline float __int2float_rn(int x) { return static_cast<float>(x); }
inline float __uint2float_rn(unsigned x) { return static_cast<float>(x); }
inline float __ll2float_rn(long long x) { return static_cast<float>(x); }
inline float __double2float_rn(double x) { return static_cast<float>(x); }

// ---- reinterpretation ------------------------------------------------------------------------------
namespace seg::sim::detail {
template <class To, class From>
To bit_cast(From f) {
  static_assert(sizeof(To) == sizeof(From));
  To t;
  std::memcpy(&t, &f, sizeof t);
  return t;
}
}  // namespace seg::sim::detail
inline int __float_as_int(float x) { return seg::sim::detail::bit_cast<int>(x); }
inline unsigned __float_as_uint(float x) { return seg::sim::detail::bit_cast<unsigned>(x); }
inline float __int_as_float(int x) { return seg::sim::detail::bit_cast<float>(x); }
inline float __uint_as_float(unsigned x) { return seg::sim::detail::bit_cast<float>(x); }
inline long long __double_as_longlong(double x) { return seg::sim::detail::bit_cast<long long>(x); }
inline double __longlong_as_double(long long x) { return seg::sim::detail::bit_cast<double>(x); }

// ---- integer and bit intrinsics ---------------------------------------------------------------------
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(static_cast<unsigned>(x)); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll(static_cast<unsigned long long>(x)); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned __brev(unsigned x) {
  x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
  x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
  x = ((x >> 4) & 0x0F0F0F0Fu) | ((x & 0x0F0F0F0Fu) << 4);
  return __builtin_bswap32(x);
}
inline unsigned long long __brevll(unsigned long long x) {
  return (static_cast<unsigned long long>(__brev(static_cast<unsigned>(x))) << 32) |
         __brev(static_cast<unsigned>(x >> 32));
}
// Byte i of the result is byte (s >> 4i) & 7 of the 8-byte value {y, x} (x holds bytes 0-3).
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  const unsigned long long v = (static_cast<unsigned long long>(y) << 32) | x;
  unsigned r = 0;
  for (int i = 0; i < 4; ++i) r |= static_cast<unsigned>((v >> (8 * ((s >> (4 * i)) & 7u))) & 0xFFu) << (8 * i);
  return r;
}
inline unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned shift) {
  const unsigned long long v = (static_cast<unsigned long long>(hi) << 32) | lo;
  return static_cast<unsigned>((v << (shift & 31u)) >> 32);
}
inline unsigned __funnelshift_lc(unsigned lo, unsigned hi, unsigned shift) {
  const unsigned long long v = (static_cast<unsigned long long>(hi) << 32) | lo;
  return static_cast<unsigned>((v << (shift < 32 ? shift : 32)) >> 32);
}
inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned shift) {
  const unsigned long long v = (static_cast<unsigned long long>(hi) << 32) | lo;
  return static_cast<unsigned>(v >> (shift & 31u));
}
inline unsigned __funnelshift_rc(unsigned lo, unsigned hi, unsigned shift) {
  const unsigned long long v = (static_cast<unsigned long long>(hi) << 32) | lo;
  return static_cast<unsigned>(v >> (shift < 32 ? shift : 32));
}
inline int __mulhi(int a, int b) { return static_cast<int>((static_cast<long long>(a) * b) >> 32); }
inline unsigned __umulhi(unsigned a, unsigned b) {
  return static_cast<unsigned>((static_cast<unsigned long long>(a) * b) >> 32);
}
namespace seg::sim::detail {
__extension__ typedef __int128 int128;
__extension__ typedef unsigned __int128 uint128;
}  // namespace seg::sim::detail
inline long long __mul64hi(long long a, long long b) {
  return static_cast<long long>((static_cast<seg::sim::detail::int128>(a) * b) >> 64);
}
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
  return static_cast<unsigned long long>((static_cast<seg::sim::detail::uint128>(a) * b) >> 64);
}
inline int __mul24(int a, int b) { return (a << 8 >> 8) * (b << 8 >> 8); }
inline unsigned __umul24(unsigned a, unsigned b) { return (a & 0xFFFFFFu) * (b & 0xFFFFFFu); }
inline unsigned __sad(int a, int b, unsigned c) { return c + static_cast<unsigned>(a > b ? a - b : b - a); }
inline unsigned __usad(unsigned a, unsigned b, unsigned c) { return c + (a > b ? a - b : b - a); }

// ---- loads and stores with cache hints: plain accesses ----------------------------------------------
template <class T>
inline T __ldg(const T* p) {
  return *p;
}
template <class T>
inline T __ldcg(const T* p) {
  return *p;
}
template <class T>
inline T __ldca(const T* p) {
  return *p;
}
template <class T>
inline T __ldcs(const T* p) {
  return *p;
}
template <class T>
inline T __ldlu(const T* p) {
  return *p;
}
template <class T>
inline T __ldcv(const T* p) {
  return *p;
}
template <class T>
inline void __stwb(T* p, T v) {
  *p = v;
}
template <class T>
inline void __stcg(T* p, T v) {
  *p = v;
}
template <class T>
inline void __stcs(T* p, T v) {
  *p = v;
}
template <class T>
inline void __stwt(T* p, T v) {
  *p = v;
}
