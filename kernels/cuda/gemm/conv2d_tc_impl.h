// The definitions of kernels/cuda/conv2d_tc.h, instantiated per element type by
// conv2d_tc_{f16,bf16,tf32}.cu. Each direction builds its two operand sources
// (operand_source.h), checks which may take the 16-byte path, and hands them to dispatch_gemm.
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cuda/conv2d_tc.h"
#include "kernels/cuda/copy.h"
#include "kernels/cuda/gemm/device_launch.h"
#include "kernels/cuda/gemm/operand_source.h"

namespace seg::cuda::tc {

// db[o] = sum over p of dy[p, o], f32 sums in a fixed order. Pass 1: block (c, r) sums column group c
// (32 columns, one per lane: coalesced rows) over rows [r * rows_per_chunk, ...), its 8 warps taking
// every 8th row, then adds the 8 warp sums in warp order into out[r][o] (TOut: float partials, or
// db itself when there is a single chunk). Pass 2: db[o] = sum over r in order.
template <class TOut>
__device__ __forceinline__ void store_as(TOut* p, int64_t i, float v) {
  if constexpr (std::is_same_v<TOut, float>)
    p[i] = v;
  else if constexpr (std::is_same_v<TOut, __half>)
    p[i] = __float2half_rn(v);
  else
    p[i] = __float2bfloat16_rn(v);
}

template <class T, class TOut>
__global__ void __launch_bounds__(256)
    bias_grad_partial_kernel(const T* dy, int64_t ldy, int P, int O, int rows_per_chunk, TOut* out) {
  __shared__ float sums[8][32];
  const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
  const int o = static_cast<int>(blockIdx.x) * 32 + lane;
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * rows_per_chunk;
  const int64_t r1 = r0 + rows_per_chunk < P ? r0 + rows_per_chunk : P;
  float s = 0.0f;
  if (o < O)
    for (int64_t p = r0 + warp; p < r1; p += 8) s += load_as_float(dy, p * ldy + o, out_type<T>());
  sums[warp][lane] = s;
  __syncthreads();
  if (warp == 0 && o < O) {
    float t = 0.0f;
    for (int w = 0; w < 8; ++w) t += sums[w][lane];
    store_as(out, static_cast<int64_t>(blockIdx.y) * O + o, t);
  }
}

template <class T>
__global__ void __launch_bounds__(256) bias_grad_final_kernel(const float* partial, int chunks, int O, T* db) {
  const int o = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (o >= O) return;
  float t = 0.0f;
  for (int r = 0; r < chunks; ++r) t += partial[static_cast<int64_t>(r) * O + o];
  store_as(db, o, t);
}

constexpr int kBiasRowsPerChunk = 2048;

inline int bias_grad_chunks(int64_t P) { return static_cast<int>((P + kBiasRowsPerChunk - 1) / kBiasRowsPerChunk); }

struct ConvDims {
  ConvGeometry geo;
  int taps, Cg, Og, groups;
  int64_t P, NHW;  // output pixels, input pixels
};

inline ConvDims conv_dims(const ConvShape& s, const char* who) {
  auto fail = [&](const std::string& what) { throw std::invalid_argument(std::string(who) + ": " + what); };
  if (s.N < 1 || s.H < 1 || s.W < 1 || s.C < 1 || s.O < 1 || s.KH < 1 || s.KW < 1 || s.stride_h < 1 ||
      s.stride_w < 1 || s.dil_h < 1 || s.dil_w < 1 || s.pad_h < 0 || s.pad_w < 0 || s.groups < 1)
    fail("invalid convolution shape (sizes, strides and dilations must be >= 1, padding >= 0)");
  if (s.C % s.groups || s.O % s.groups) fail("C and O must be multiples of groups");
  if (s.Ho() < 1 || s.Wo() < 1) fail("the kernel does not fit the padded input (output would be empty)");
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  const int64_t P = s.N * s.Ho() * s.Wo(), NHW = s.N * s.H * s.W;
  if (P > kMax || NHW > kMax || s.KH * s.KW * s.C > kMax || s.O * s.KH * s.KW > kMax)
    fail("the convolution's GEMM extents must stay below 2^31");
  // The sources mark a pixel or column past the end with a row of -2^29 (operand_source.h,
  // kOutside), which must stay negative after any tap or row offset is added.
  constexpr int64_t kMaxExtent = int64_t{1} << 27;
  if (s.H + 2 * s.pad_h >= kMaxExtent || s.W + 2 * s.pad_w >= kMaxExtent || s.KH * s.dil_h >= kMaxExtent ||
      s.KW * s.dil_w >= kMaxExtent || s.Ho() * s.stride_h >= kMaxExtent || s.Wo() * s.stride_w >= kMaxExtent)
    fail("image rows, columns and kernel extents (with padding, dilation and stride) must stay below 2^27");
  ConvDims d;
  d.geo = ConvGeometry{static_cast<int>(s.N),        static_cast<int>(s.H),        static_cast<int>(s.W),
                       static_cast<int>(s.Ho()),     static_cast<int>(s.Wo()),     static_cast<int>(s.KH),
                       static_cast<int>(s.KW),       static_cast<int>(s.stride_h), static_cast<int>(s.stride_w),
                       static_cast<int>(s.pad_h),    static_cast<int>(s.pad_w),    static_cast<int>(s.dil_h),
                       static_cast<int>(s.dil_w),
                       FastDivmod(static_cast<int32_t>(s.KW)),
                       FastDivmod(static_cast<int32_t>(s.Wo())),
                       FastDivmod(static_cast<int32_t>(s.Ho() * s.Wo())),
                       FastDivmod(static_cast<int32_t>(s.stride_h)),
                       FastDivmod(static_cast<int32_t>(s.stride_w))};
  d.taps = static_cast<int>(s.KH * s.KW);
  d.Cg = static_cast<int>(s.Cg());
  d.Og = static_cast<int>(s.Og());
  d.groups = static_cast<int>(s.groups);
  d.P = P;
  d.NHW = NHW;
  return d;
}

inline int64_t pixel_stride(int64_t given, int64_t dense, const char* who, const char* name) {
  if (given == 0) return dense;
  if (given < dense)
    throw std::invalid_argument(std::string(who) + ": " + name + "=" + std::to_string(given) +
                                " is smaller than the channels of a pixel (" + std::to_string(dense) + ")");
  return given;
}

template <class TOut>
bool vec_out(const TOut* d, int64_t ld, int group_stride, int groups) {
  return reinterpret_cast<uintptr_t>(d) % (4 * sizeof(TOut)) == 0 && ld % 4 == 0 && (groups == 1 || group_stride % 4 == 0);
}

// The GEMM of each direction: its operand sources, extents, 16-byte-path flags and epilogue, and
// the number of groups (the kernel lab launches these with its own kernel versions).
template <class A, class B>
struct ConvGemm {
  GemmArgs<A, B> p;
  int groups = 1;
};

template <class T>
ConvGemm<ConvFwdASource<device_t<T>>, ConvFwdWeights<device_t<T>>> forward_gemm(
    const ConvShape& s, const T* x, const T* w, const T* b, T* y, const ConvTcArgs& args) {
  using DT = device_t<T>;
  constexpr int kChunk = Element<DT>::kChunk;
  const ConvDims d = conv_dims(s, "conv2d_forward_tc");
  const int64_t ldx = pixel_stride(args.ldx, s.C, "conv2d_forward_tc", "ldx");
  const int64_t ldy = pixel_stride(args.ldy, s.O, "conv2d_forward_tc", "ldy");
  const int K = d.taps * d.Cg;
  GemmArgs<ConvFwdASource<DT>, ConvFwdWeights<DT>> p;
  p.a = ConvFwdASource<DT>{reinterpret_cast<const DT*>(x), ldx, d.geo, d.Cg, static_cast<int>(d.P), K, FastDivmod(d.Cg)};
  p.a.derive();
  p.b = ConvFwdWeights<DT>{reinterpret_cast<const DT*>(w), K, d.Og, K, static_cast<int64_t>(d.Og) * K};
  p.M = static_cast<int>(d.P);
  p.N = d.Og;
  p.K = K;
  p.vec_a = aligned16(x) && ldx % kChunk == 0 && d.Cg % kChunk == 0;
  p.vec_b = aligned16(w) && K % kChunk == 0;
  p.ep.d = y;
  p.ep.ldd = ldy;
  p.ep.d_group_stride = d.Og;
  p.ep.d_type = out_type<T>();
  p.ep.d_vec = vec_out(y, ldy, d.Og, d.groups);
  p.ep.bias = b;
  p.ep.bias_group_stride = d.Og;
  p.ep.act = act_of(args.act);
  return {p, d.groups};
}

template <class T>
void conv_forward_impl(const ConvShape& s, const T* x, const T* w, const T* b, T* y, Stream stream,
                       const ConvTcArgs& args) {
  using DT = device_t<T>;
  const auto g = forward_gemm(s, x, w, b, y, args);
  dispatch_gemm<DT, Major::k, Major::k, ConvFwdASource<DT>, ConvFwdWeights<DT>, false>(
      g.p, args.options.family, args.options.tile, g.groups, args.options.split_k, args.workspace, stream);
}

// Backward data by stride phase. With stride sh > 1, the tap kh reaches input row h only when
// (h + ph) and kh*dh leave the same remainder mod sh (operand_source.h, ConvBwdDataASource), so one
// GEMM over every (pixel, tap) pair multiplies mostly zeros: for a 3x3 stride 2, a pixel meets 1, 2
// or 4 of the 9 taps, 2.25 on average, and a 1x1 stride 2 reaches only the pixels with even h and w.
// So the product splits the pixels into sh*sw phases by those remainders (rows h0, h0 + sh, ...) and
// runs one GEMM per phase over only the taps that reach it (kh0, kh0 + sh/gcd(sh, dh), ...); its
// epilogue writes the phase's rows of dx through a RowGrid. A phase that no tap reaches (the odd
// pixels of a 1x1 stride 2) is zero: one fill. Same sums in the same order per element, so the
// same bits; ConvTcArgs::stride_phases = false runs the one GEMM as before 2026-12-07 (the lab's
// v7, the tests' comparison). Stride 1 is one phase: the whole problem.
inline DgradCover all_pixels_and_taps(const ConvShape& s) {
  DgradCover c;
  c.Hp = static_cast<int>(s.H);
  c.Wp = static_cast<int>(s.W);
  c.KHp = static_cast<int>(s.KH);
  c.KWp = static_cast<int>(s.KW);
  c.finish();
  return c;
}

// One dimension of a phase: input positions first, first + stride, ... below extent, and the taps
// t < taps whose t*dil leaves remainder r mod stride (r = (first + pad) mod stride).
struct PhaseAxis {
  int first = 0, count = 0, tap0 = 0, tap_step = 1, taps = 0;
};
inline PhaseAxis phase_axis(int64_t extent, int64_t pad, int64_t stride, int64_t dil, int64_t taps, int64_t r) {
  PhaseAxis a;
  a.first = static_cast<int>(((r - pad) % stride + stride) % stride);
  a.count = a.first < extent ? static_cast<int>((extent - a.first + stride - 1) / stride) : 0;
  int64_t g = stride, b = dil;  // gcd: t*dil mod stride repeats every stride/gcd taps, each value once
  while (b) {
    const int64_t t = g % b;
    g = b;
    b = t;
  }
  a.tap_step = static_cast<int>(stride / g);
  for (int64_t t = 0; t < taps && t < a.tap_step; ++t)
    if (t * dil % stride == r) {
      a.tap0 = static_cast<int>(t);
      a.taps = static_cast<int>((taps - 1 - t) / a.tap_step + 1);
      break;
    }
  return a;
}

// The GEMMs of backward data: one cover, or one per stride phase (a cover with no taps: zero fill).
inline std::vector<DgradCover> dgrad_covers(const ConvShape& s, bool stride_phases) {
  if (!stride_phases || (s.stride_h == 1 && s.stride_w == 1)) return {all_pixels_and_taps(s)};
  std::vector<DgradCover> covers;
  for (int64_t rh = 0; rh < s.stride_h; ++rh)
    for (int64_t rw = 0; rw < s.stride_w; ++rw) {
      const PhaseAxis h = phase_axis(s.H, s.pad_h, s.stride_h, s.dil_h, s.KH, rh);
      const PhaseAxis w = phase_axis(s.W, s.pad_w, s.stride_w, s.dil_w, s.KW, rw);
      if (h.count == 0 || w.count == 0) continue;  // no input pixel in this phase
      DgradCover c;
      c.h0 = h.first;
      c.w0 = w.first;
      c.Hp = h.count;
      c.Wp = w.count;
      c.step_h = static_cast<int>(s.stride_h);
      c.step_w = static_cast<int>(s.stride_w);
      c.kh0 = h.tap0;
      c.kw0 = w.tap0;
      c.KHp = h.taps;
      c.KWp = w.taps;
      c.kstep_h = h.tap_step;
      c.kstep_w = w.tap_step;
      c.finish();
      covers.push_back(c);
    }
  return covers;
}

// Whether a cover is the whole input grid (its rows are dx's rows: no RowGrid needed). From the
// first row, a step over 1 covers all H rows only when H is 1, where the step does not matter.
inline bool whole_grid(const ConvShape& s, const DgradCover& c) {
  return c.h0 == 0 && c.w0 == 0 && c.Hp == s.H && c.Wp == s.W;
}

template <class T>
ConvGemm<ConvBwdDataASource<device_t<T>>, ConvBwdDataBSource<device_t<T>>> backward_data_gemm(
    const ConvShape& s, const T* w, const T* dy, T* dx, const ConvTcArgs& args,
    const DgradCover& cover) {
  using DT = device_t<T>;
  constexpr int kChunk = Element<DT>::kChunk;
  const ConvDims d = conv_dims(s, "conv2d_backward_data_tc");
  const int64_t ldx = pixel_stride(args.ldx, s.C, "conv2d_backward_data_tc", "ldx");
  const int64_t ldy = pixel_stride(args.ldy, s.O, "conv2d_backward_data_tc", "ldy");
  const int K = cover.KHp * cover.KWp * d.Og;
  const int M = static_cast<int>(s.N * cover.Hp * cover.Wp);
  GemmArgs<ConvBwdDataASource<DT>, ConvBwdDataBSource<DT>> p;
  p.a = ConvBwdDataASource<DT>{reinterpret_cast<const DT*>(dy), ldy, d.geo, d.Og, M, K, FastDivmod(d.Og), cover};
  p.b = ConvBwdDataBSource<DT>{reinterpret_cast<const DT*>(w), d.taps, d.Og, d.Cg, K, FastDivmod(d.Og),
                               FastDivmod(static_cast<int32_t>(s.KW)), cover};
  p.M = M;
  p.N = d.Cg;
  p.K = K;
  p.vec_a = aligned16(dy) && ldy % kChunk == 0 && d.Og % kChunk == 0;
  p.vec_b = aligned16(w) && d.Cg % kChunk == 0;
  p.ep.d = dx;
  p.ep.ldd = ldx;
  if (!whole_grid(s, cover)) {
    p.ep.rows.on = true;
    p.ep.rows.by_image = FastDivmod(cover.Hp * cover.Wp);
    p.ep.rows.by_w = FastDivmod(cover.Wp);
    p.ep.rows.base = (static_cast<int64_t>(cover.h0) * s.W + cover.w0) * ldx;
    p.ep.rows.image = s.H * s.W * ldx;
    p.ep.rows.step_h = cover.step_h * s.W * ldx;
    p.ep.rows.step_w = cover.step_w * ldx;
  }
  p.ep.d_group_stride = d.Cg;
  p.ep.d_type = out_type<T>();
  p.ep.d_vec = vec_out(dx, ldx, d.Cg, d.groups);
  return {p, d.groups};
}

// The one GEMM over every (pixel, tap) pair (the lab's versions that predate the phases).
template <class T>
ConvGemm<ConvBwdDataASource<device_t<T>>, ConvBwdDataBSource<device_t<T>>> backward_data_gemm(
    const ConvShape& s, const T* w, const T* dy, T* dx, const ConvTcArgs& args) {
  return backward_data_gemm(s, w, dy, dx, args, all_pixels_and_taps(s));
}

// A phase no tap reaches: its pixels of dx (all C channels) are zero.
template <class T>
void zero_dgrad_cover(const ConvShape& s, const DgradCover& c, T* dx, int64_t ldx, Stream stream) {
  const int64_t W = s.W;
  CopyLayout zero{4, {s.N, c.Hp, c.Wp, s.C}, {0, 0, 0, 0}, {s.H * W * ldx, c.step_h * W * ldx, c.step_w * ldx, 1}};
  fill_strided(dx + (c.h0 * W + c.w0) * ldx, zero, T{}, stream);
}

// Backward data as a GEMM per cover (per stride phase, or one over every tap: dgrad_covers), with a
// zero fill for each phase no tap reaches; run_gemm(g) launches each cover's GEMM. One loop for the
// product (dispatch_gemm below) and the lab's versions that swap the kernel (kernels/lab, v8).
template <class T, class RunGemm>
void for_each_dgrad_gemm(const ConvShape& s, const T* w, const T* dy, T* dx, Stream stream, const ConvTcArgs& args,
                         RunGemm&& run_gemm) {
  const int64_t ldx = pixel_stride(args.ldx, s.C, "conv2d_backward_data_tc", "ldx");
  for (const DgradCover& c : dgrad_covers(s, args.stride_phases)) {
    if (c.KHp == 0 || c.KWp == 0)
      zero_dgrad_cover(s, c, dx, ldx, stream);
    else
      run_gemm(backward_data_gemm(s, w, dy, dx, args, c));
  }
}

template <class T>
void conv_backward_data_impl(const ConvShape& s, const T* w, const T* dy, T* dx, Stream stream,
                             const ConvTcArgs& args) {
  using DT = device_t<T>;
  for_each_dgrad_gemm(s, w, dy, dx, stream, args, [&](const auto& g) {
    dispatch_gemm<DT, Major::k, Major::mn, ConvBwdDataASource<DT>, ConvBwdDataBSource<DT>, false>(
        g.p, args.options.family, args.options.tile, g.groups, args.options.split_k, args.workspace, stream);
  });
}

template <class T>
SplitPlan conv_backward_weight_plan(const ConvDims& d, const TcOptions& o, size_t available) {
  using DT = device_t<T>;
  const int J = d.taps * d.Cg;
  const bool large = use_large_tile(o.tile, d.Og, J, d.groups);
  using L = typename Tiles<DT>::Backward;  // the tile dispatch_gemm runs backward weight with
  using S = typename Tiles<DT>::Small;
  return large ? plan_split_k(d.Og, J, d.P, d.groups, L::BM, L::BN, L::BK, L::THREADS / 32, o.split_k, available)
               : plan_split_k(d.Og, J, d.P, d.groups, S::BM, S::BN, S::BK, S::THREADS / 32, o.split_k, available);
}

template <class T>
ConvGemm<MatrixSource<device_t<T>, Major::mn>, ConvBwdWeightBSource<device_t<T>>> backward_weight_gemm(
    const ConvShape& s, const T* x, const T* dy, T* dw, const ConvTcArgs& args) {
  using DT = device_t<T>;
  constexpr int kChunk = Element<DT>::kChunk;
  const ConvDims d = conv_dims(s, "conv2d_backward_weight_tc");
  const int64_t ldx = pixel_stride(args.ldx, s.C, "conv2d_backward_weight_tc", "ldx");
  const int64_t ldy = pixel_stride(args.ldy, s.O, "conv2d_backward_weight_tc", "ldy");
  const int J = d.taps * d.Cg;
  GemmArgs<MatrixSource<DT, Major::mn>, ConvBwdWeightBSource<DT>> p;
  p.a = MatrixSource<DT, Major::mn>{reinterpret_cast<const DT*>(dy), ldy, static_cast<int>(d.P), d.Og, d.Og};
  p.b = ConvBwdWeightBSource<DT>{reinterpret_cast<const DT*>(x), ldx, d.geo, d.Cg, static_cast<int>(d.P), J};
  p.b.derive();
  p.M = d.Og;
  p.N = J;
  p.K = static_cast<int>(d.P);
  p.vec_a = aligned16(dy) && ldy % kChunk == 0 && (d.groups == 1 || d.Og % kChunk == 0);
  p.vec_b = aligned16(x) && ldx % kChunk == 0 && d.Cg % kChunk == 0;
  p.ep.d = dw;
  p.ep.ldd = J;
  p.ep.d_group_stride = static_cast<int64_t>(d.Og) * J;
  p.ep.d_type = out_type<T>();
  p.ep.d_vec = vec_out(dw, J, d.Og * J, d.groups);
  return {p, d.groups};
}

// Backward weight when the input's channels are not whole 16-byte chunks (C % kChunk != 0, one
// group): the first convolution of every model (C = 3). Its im2col operand (B) has no 16-byte
// chunks, so the GEMM copies it element by element: on the first H200 run the 3x3 3->64 stride-2
// stem ran at 0.5 TFLOP/s (3.8 ms of a 41 ms MobileNetV2 step). Instead, x is copied once into
// Cp = C rounded up to kChunk channels, zeros after C, in the workspace; the GEMM runs on the
// 16-byte path into a [O, KH, KW, Cp] scratch, and its first C channels are copied to dw. The zero
// channels multiply into their own output columns only, which are dropped, so dw is the unpadded
// result (the sums over pixels are the same, in the same order within a split; the split count
// follows the padded shape). Costs: a read of x and a write of Cp/C of it (bandwidth-bound, about
// 50 MB at 512x512, batch 8), and Cp/C times the tensor-core work (8/3 for C = 3: cheap beside the
// element path). Needs `bytes` of workspace: x padded, the scratch weights, the split partials.
struct ChannelPad {
  bool applies = false;
  int64_t Cp = 0;
  size_t w_offset = 0, split_offset = 0, bytes = 0;
};
inline size_t round_up_256(size_t n) { return (n + 255) / 256 * 256; }
template <class T>
ChannelPad channel_pad(const ConvShape& s, const TcOptions& o) {
  constexpr int kChunk = Element<device_t<T>>::kChunk;
  ChannelPad pad;
  if (s.groups != 1 || s.C % kChunk == 0) return pad;
  pad.applies = true;
  pad.Cp = (s.C + kChunk - 1) / kChunk * kChunk;
  ConvShape sp = s;
  sp.C = pad.Cp;
  pad.w_offset = round_up_256(static_cast<size_t>(s.N * s.H * s.W * pad.Cp) * sizeof(T));
  pad.split_offset = pad.w_offset + round_up_256(static_cast<size_t>(s.O * s.KH * s.KW * pad.Cp) * sizeof(T));
  pad.bytes = pad.split_offset + conv_backward_weight_plan<T>(conv_dims(sp, "conv2d_backward_weight_tc"), o, SIZE_MAX).bytes;
  return pad;
}

template <class T>
void conv_backward_weight_impl(const ConvShape& s, const T* x, const T* dy, T* dw, T* db, Stream stream,
                               const ConvTcArgs& args) {
  using DT = device_t<T>;
  const ConvDims d = conv_dims(s, "conv2d_backward_weight_tc");
  pixel_stride(args.ldx, s.C, "conv2d_backward_weight_tc", "ldx");  // checked even when only db is asked for
  const int64_t ldy = pixel_stride(args.ldy, s.O, "conv2d_backward_weight_tc", "ldy");
  const TcWorkspace ws = args.workspace;
  if (db) {
    // With workspace for per-chunk partials every SM helps; without, one block per 32 columns sums
    // all rows (correct, slower).
    const int O = static_cast<int>(s.O), P = static_cast<int>(d.P);
    int chunks = bias_grad_chunks(d.P);
    if (!ws.data || ws.bytes < static_cast<size_t>(chunks) * O * 4) chunks = 1;
    const dim3 grid(static_cast<unsigned>((O + 31) / 32), static_cast<unsigned>(chunks));
    const DT* g = reinterpret_cast<const DT*>(dy);
    if (chunks == 1) {
      SEG_LAUNCH((bias_grad_partial_kernel<DT, DT>), grid, 256, 0, stream, g, ldy, P, O, P, reinterpret_cast<DT*>(db));
    } else {
      float* partial = static_cast<float*>(ws.data);
      SEG_LAUNCH((bias_grad_partial_kernel<DT, float>), grid, 256, 0, stream, g, ldy, P, O, kBiasRowsPerChunk,
                 partial);
      SEG_LAUNCH(bias_grad_final_kernel<DT>, static_cast<unsigned>((O + 255) / 256), 256, 0, stream,
                 static_cast<const float*>(partial), chunks, O, reinterpret_cast<DT*>(db));
    }
  }
  if (!dw) return;
  // The first convolution (C = 3): pad its input's channels once so that the GEMM takes the 16-byte
  // path (ChannelPad above), when the workspace has room for it.
  const ChannelPad pad = channel_pad<T>(s, args.options);
  if (pad.applies && ws.data && ws.bytes >= pad.bytes) {
    char* base = static_cast<char*>(ws.data);
    T* xp = reinterpret_cast<T*>(base);
    T* wp = reinterpret_cast<T*>(base + pad.w_offset);
    const int64_t pixels = s.N * s.H * s.W, ldx = args.ldx ? args.ldx : s.C, rows = s.O * s.KH * s.KW;
    fill_strided(xp + s.C, CopyLayout{2, {pixels, pad.Cp - s.C}, {0, 0}, {pad.Cp, 1}}, T{}, stream);
    copy_strided(x, xp, CopyLayout{2, {pixels, s.C}, {ldx, 1}, {pad.Cp, 1}}, stream);
    ConvShape sp = s;
    sp.C = pad.Cp;
    ConvTcArgs ap = args;
    ap.ldx = pad.Cp;
    ap.workspace = TcWorkspace{base + pad.split_offset, ws.bytes - pad.split_offset};
    const auto g = backward_weight_gemm(sp, xp, dy, wp, ap);
    dispatch_gemm<DT, Major::mn, Major::mn, MatrixSource<DT, Major::mn>, ConvBwdWeightBSource<DT>, false>(
        g.p, ap.options.family, ap.options.tile, g.groups, ap.options.split_k, ap.workspace, stream);
    copy_strided(static_cast<const T*>(wp), dw, CopyLayout{2, {rows, s.C}, {pad.Cp, 1}, {s.C, 1}}, stream);
    return;
  }
  const auto g = backward_weight_gemm(s, x, dy, dw, args);
  dispatch_gemm<DT, Major::mn, Major::mn, MatrixSource<DT, Major::mn>, ConvBwdWeightBSource<DT>, false>(
      g.p, args.options.family, args.options.tile, g.groups, args.options.split_k, ws, stream);
}

}  // namespace seg::cuda::tc

namespace seg::cuda {

template <class T>
void conv2d_forward_tc(const ConvShape& s, const T* x, const T* w, const T* b, T* y, Stream stream,
                       const ConvTcArgs& args) {
  tc::conv_forward_impl<T>(s, x, w, b, y, stream, args);
}
template <class T>
void conv2d_backward_data_tc(const ConvShape& s, const T* w, const T* dy, T* dx, Stream stream,
                             const ConvTcArgs& args) {
  tc::conv_backward_data_impl<T>(s, w, dy, dx, stream, args);
}
template <class T>
void conv2d_backward_weight_tc(const ConvShape& s, const T* x, const T* dy, T* dw, T* db, Stream stream,
                               const ConvTcArgs& args) {
  tc::conv_backward_weight_impl<T>(s, x, dy, dw, db, stream, args);
}
template <class T>
size_t conv2d_backward_weight_tc_workspace_bytes(const ConvShape& s, const TcOptions& o) {
  const tc::ConvDims d = tc::conv_dims(s, "conv2d_backward_weight_tc_workspace_bytes");
  const tc::ChannelPad pad = tc::channel_pad<T>(s, o);
  const size_t split = pad.applies ? pad.bytes : tc::conv_backward_weight_plan<T>(d, o, SIZE_MAX).bytes;
  const size_t bias = static_cast<size_t>(tc::bias_grad_chunks(d.P)) * static_cast<size_t>(s.O) * 4;
  return split > bias ? split : bias;
}

}  // namespace seg::cuda

#define SEG_CONV2D_TC_INSTANTIATE(T)                                                                              \
  template void conv2d_forward_tc<T>(const ConvShape&, const T*, const T*, const T*, T*, Stream,                  \
                                     const ConvTcArgs&);                                                           \
  template void conv2d_backward_data_tc<T>(const ConvShape&, const T*, const T*, T*, Stream, const ConvTcArgs&);  \
  template void conv2d_backward_weight_tc<T>(const ConvShape&, const T*, const T*, T*, T*, Stream,                \
                                             const ConvTcArgs&);                                                   \
  template size_t conv2d_backward_weight_tc_workspace_bytes<T>(const ConvShape&, const TcOptions&);
