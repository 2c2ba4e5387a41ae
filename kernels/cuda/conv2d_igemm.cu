// Implicit-GEMM convolution on CUDA cores (SIMT), f32 accumulation: forward, backward data and
// backward weight for every shape (1x1, 3x3, dilated, strided, grouped, ragged C and O). The
// operands are never materialised: each tile loader computes the im2col address of its element.
// Math: kernels/cuda/conv2d.h. The three GEMMs, per group g (Cg = C/groups, Og = O/groups):
//
//   forward          y[m][n]  = sum_k A[m][k] B[k][n]   m = (n,ho,wo) < N*Ho*Wo, n = o < Og,
//                    A = x at tap(k) of pixel m, B[k][n] = w[g*Og+n][k], k = (kh,kw,c) < KH*KW*Cg
//   backward data    dx[m][n] = sum_k A[m][k] B[k][n]   m = (n,h,w) < N*H*W, n = c < Cg,
//                    A = dy at the output reading pixel m through tap(k) (0 if none: ho*s - p + kh*d
//                    = h needs (h + p - kh*d) % s == 0), B[k][n] = w[g*Og+o][kh][kw][n], k = (kh,kw,o)
//   backward weight  dw[m][n] = sum_r A[m][r] B[r][n]   m = o < Og, n = (kh,kw,c) < K (and n = K: a
//                    column of ones whose result is db), r = (n,ho,wo) < N*Ho*Wo, A = dy[r][g*Og+m],
//                    B = x at tap(n) of output pixel r
//
// Tiling: a block of 256 threads computes a 64 x 64 tile of the result; each thread a 4 x 4
// micro-tile (rows 4*ty.., columns 4*tx.., tx = t % 16, ty = t / 16) from float4 reads of the two
// f32 shared-memory tiles As[BK][64+4], Bs[BK][64+4] (row stride 272 bytes keeps the float4 reads
// aligned). BK = 16 for f32, 32 for f16/bf16: one K step is one 16-byte load per thread and operand
// (KV = 4 floats or 8 halves). Operands whose K run is contiguous in memory (x and w in forward, dy
// in backward data) are loaded along K and transposed into shared memory; the others (w in backward
// data, dy and x in backward weight) along M/N. While the tile is multiplied, the next K step's
// global loads are already in flight in registers (one shared buffer, register prefetch).
// 16-byte loads are used when the run is contiguous and aligned (checked per launch: channel counts
// divisible by KV, 16-byte aligned pointers), else the same kernel loads element by element.
//
// Backward weight splits the reduction over r = N*Ho*Wo into S slices (S from the shape only,
// igemm_weight_plan) so that thin, deep shapes still fill the GPU; each slice writes its f32
// partial [O][K(+1)] into the workspace and a second kernel adds the S partials in slice order and
// rounds to T. (Atomics: adding the partials with atomicAdd would save the workspace and the second
// pass but make the sum's order, hence the bits, change from run to run; DESIGN 11.)
//
// Launch: grid (ceil(M/64), ceil(N/64), groups [* S]) x 256 threads, static shared memory 8.5 KiB
// (f32) or 17 KiB (halves). Memory traffic per block and K step: 64*BK elements of each operand
// (L2-resident after the first block that reads them: x is read about ceil(O/64) times in forward,
// w about ceil(M/64) times), the result written once (backward weight: S*O*K f32 partials written
// and read once more).
#include <cstdint>

#include "kernels/cuda/conv2d_common.cuh"
#include "kernels/cuda/conv2d_paths.h"
#include "kernels/cuda/launch.h"

namespace seg::cuda::detail {

namespace {

constexpr int kBM = 64, kBN = 64, kPad = 4;

template <class D> struct Tile {
  static constexpr int KV = kVec16<D>;  // elements per 16-byte load
  static constexpr int BK = 4 * KV;     // K step: 64 rows x BK = 256 threads x KV
};

// acc[i][j] += sum_kk As[kk][4*ty + i] * Bs[kk][4*tx + j]
template <int BK>
__device__ __forceinline__ void multiply_tile(const float (*As)[kBM + kPad], const float (*Bs)[kBN + kPad], int tx,
                                              int ty, float (&acc)[4][4]) {
  SEG_UNROLL
  for (int kk = 0; kk < BK; ++kk) {
    const Pack<float, 4> a = *reinterpret_cast<const Pack<float, 4>*>(&As[kk][4 * ty]);
    const Pack<float, 4> b = *reinterpret_cast<const Pack<float, 4>*>(&Bs[kk][4 * tx]);
    SEG_UNROLL
    for (int i = 0; i < 4; ++i) {
      SEG_UNROLL
      for (int j = 0; j < 4; ++j) acc[i][j] += a.v[i] * b.v[j];
    }
  }
}

template <int N> __device__ __forceinline__ void zero(float (&r)[N]) {
  SEG_UNROLL
  for (int j = 0; j < N; ++j) r[j] = 0.0f;
}

// Writes 4 consecutive results of row `out` (columns n..n+3 of a row of `cols` valid columns).
template <class D>
__device__ __forceinline__ void store_row4(D* out, int n, int cols, const float (&v)[4], bool vec) {
  if (vec && n + 3 < cols) {
    store_f32<4>(out + n, v);
  } else {
    SEG_UNROLL
    for (int j = 0; j < 4; ++j)
      if (n + j < cols) out[n + j] = from_f32<D>(v[j]);
  }
}

// ---------------------------------------------------------------------------------------------
// Forward. vec_x: Cg % KV == 0 and x aligned; vec_w: K % KV == 0 and w aligned; vec_y: 4-element
// stores (Og % 4 == 0, O % 4 == 0, y aligned).
// hot-kernel: conv2d_forward_igemm_kernel
template <class D>
__global__ void __launch_bounds__(256) conv2d_forward_igemm_kernel(ConvDims d, const D* __restrict__ x,
                                                                   const D* __restrict__ w, const D* __restrict__ b,
                                                                   D* __restrict__ y, bool vec_x, bool vec_w,
                                                                   bool vec_y) {
  constexpr int KV = Tile<D>::KV, BK = Tile<D>::BK;
  __shared__ __align__(16) float As[BK][kBM + kPad];
  __shared__ __align__(16) float Bs[BK][kBN + kPad];
  const int t = threadIdx.x, tx = t % 16, ty = t / 16;
  const int g = blockIdx.z, m0 = blockIdx.x * kBM, n0 = blockIdx.y * kBN;
  const int M = d.N * d.Ho * d.Wo, K = d.KH * d.KW * d.Cg;
  // Loader: row lr of both tiles, K elements lk .. lk+KV-1 of the step.
  const int lr = t / 4, lk = (t % 4) * KV;
  const int am = m0 + lr;
  const bool a_ok = am < M;
  int a_n = 0, a_h0 = 0, a_w0 = 0;
  if (a_ok) {
    const int wo = am % d.Wo, ho = (am / d.Wo) % d.Ho;
    a_n = am / (d.Wo * d.Ho);
    a_h0 = ho * d.sh - d.ph;
    a_w0 = wo * d.sw - d.pw;
  }
  const D* xg = x + g * d.Cg;
  const bool b_ok = n0 + lr < d.Og;
  const D* wrow = w + static_cast<int64_t>(g * d.Og + n0 + lr) * K;
  float ra[KV], rb[KV];
  // x element k of pixel am (0 outside the image).
  auto x_at = [&](int k, bool& inside) -> const D* {
    const int tap = k / d.Cg, c = k - tap * d.Cg;
    const int kh = tap / d.KW, kw = tap - kh * d.KW;
    const int hi = a_h0 + kh * d.dh, wi = a_w0 + kw * d.dw;
    inside = hi >= 0 && hi < d.H && wi >= 0 && wi < d.W;
    return xg + (static_cast<int64_t>(a_n * d.H + hi) * d.W + wi) * d.C + c;
  };
  auto fetch = [&](int k0) {
    const int k = k0 + lk;
    zero(ra);
    if (vec_x) {
      bool inside = false;
      if (a_ok && k < K) {
        const D* p = x_at(k, inside);
        if (inside) load_f32<KV>(p, ra);
      }
    } else {
      SEG_UNROLL
      for (int j = 0; j < KV; ++j) {
        bool inside = false;
        if (a_ok && k + j < K) {
          const D* p = x_at(k + j, inside);
          if (inside) ra[j] = to_f32(*p);
        }
      }
    }
    zero(rb);
    if (vec_w) {
      if (b_ok && k < K) load_f32<KV>(wrow + k, rb);
    } else {
      SEG_UNROLL
      for (int j = 0; j < KV; ++j)
        if (b_ok && k + j < K) rb[j] = to_f32(wrow[k + j]);
    }
  };
  float acc[4][4];
  SEG_UNROLL
  for (int i = 0; i < 4; ++i) zero(acc[i]);
  fetch(0);
  for (int k0 = 0; k0 < K; k0 += BK) {
    SEG_UNROLL
    for (int j = 0; j < KV; ++j) {
      As[lk + j][lr] = ra[j];
      Bs[lk + j][lr] = rb[j];
    }
    __syncthreads();
    if (k0 + BK < K) fetch(k0 + BK);
    multiply_tile<BK>(As, Bs, tx, ty, acc);
    __syncthreads();
  }
  const int n = n0 + 4 * tx;
  float bias[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  if (b) {
    SEG_UNROLL
    for (int j = 0; j < 4; ++j)
      if (n + j < d.Og) bias[j] = to_f32(b[g * d.Og + n + j]);
  }
  SEG_UNROLL
  for (int i = 0; i < 4; ++i) {
    const int m = m0 + 4 * ty + i;
    if (m >= M) continue;
    float v[4];
    SEG_UNROLL
    for (int j = 0; j < 4; ++j) v[j] = acc[i][j] + bias[j];
    store_row4(y + static_cast<int64_t>(m) * d.O + g * d.Og, n, d.Og, v, vec_y);
  }
}

// ---------------------------------------------------------------------------------------------
// Backward data. vec_dy: Og % KV == 0 and dy aligned; vec_w: Cg % KV == 0 and w aligned; vec_dx:
// 4-element stores (Cg % 4 == 0, C % 4 == 0, dx aligned).
// hot-kernel: conv2d_backward_data_igemm_kernel
template <class D>
__global__ void __launch_bounds__(256) conv2d_backward_data_igemm_kernel(ConvDims d, const D* __restrict__ w,
                                                                         const D* __restrict__ dy,
                                                                         D* __restrict__ dx, bool vec_dy, bool vec_w,
                                                                         bool vec_dx) {
  constexpr int KV = Tile<D>::KV, BK = Tile<D>::BK;
  __shared__ __align__(16) float As[BK][kBM + kPad];
  __shared__ __align__(16) float Bs[BK][kBN + kPad];
  const int t = threadIdx.x, tx = t % 16, ty = t / 16;
  const int g = blockIdx.z, m0 = blockIdx.x * kBM, n0 = blockIdx.y * kBN;
  const int M = d.N * d.H * d.W, K = d.KH * d.KW * d.Og, taps = d.KH * d.KW;
  // A loader (along K): row lr = input pixel, K elements lk ..
  const int lr = t / 4, lk = (t % 4) * KV;
  const int am = m0 + lr;
  const bool a_ok = am < M;
  int a_n = 0, a_h = 0, a_w = 0;
  if (a_ok) {
    a_w = am % d.W;
    a_h = (am / d.W) % d.H;
    a_n = am / (d.W * d.H);
  }
  const D* dyg = dy + g * d.Og;
  // B loader (along N): K row br, channels bn .. bn+KV-1.
  constexpr int kRowThreads = kBN / KV;
  const int br = t / kRowThreads, bq = (t % kRowThreads) * KV, bn = n0 + bq;
  float ra[KV], rb[KV];
  // dy element k = (tap, o) read by input pixel am (null if no output reads it through that tap).
  auto dy_at = [&](int k) -> const D* {
    const int tap = k / d.Og, o = k - tap * d.Og;
    const int kh = tap / d.KW, kw = tap - kh * d.KW;
    const int ho = reader_of(a_h, kh, d.sh, d.ph, d.dh, d.Ho), wo = reader_of(a_w, kw, d.sw, d.pw, d.dw, d.Wo);
    if (ho < 0 || wo < 0) return nullptr;
    return dyg + (static_cast<int64_t>(a_n * d.Ho + ho) * d.Wo + wo) * d.O + o;
  };
  auto fetch = [&](int k0) {
    const int k = k0 + lk;
    zero(ra);
    if (vec_dy) {
      if (a_ok && k < K)
        if (const D* p = dy_at(k)) load_f32<KV>(p, ra);
    } else {
      SEG_UNROLL
      for (int j = 0; j < KV; ++j)
        if (a_ok && k + j < K)
          if (const D* p = dy_at(k + j)) ra[j] = to_f32(*p);
    }
    zero(rb);
    const int kb = k0 + br;
    if (kb < K) {
      const int tap = kb / d.Og, o = kb - tap * d.Og;
      const D* wp = w + (static_cast<int64_t>(g * d.Og + o) * taps + tap) * d.Cg;
      if (vec_w) {
        if (bn < d.Cg) load_f32<KV>(wp + bn, rb);
      } else {
        SEG_UNROLL
        for (int j = 0; j < KV; ++j)
          if (bn + j < d.Cg) rb[j] = to_f32(wp[bn + j]);
      }
    }
  };
  float acc[4][4];
  SEG_UNROLL
  for (int i = 0; i < 4; ++i) zero(acc[i]);
  fetch(0);
  for (int k0 = 0; k0 < K; k0 += BK) {
    SEG_UNROLL
    for (int j = 0; j < KV; ++j) {
      As[lk + j][lr] = ra[j];
      Bs[br][bq + j] = rb[j];
    }
    __syncthreads();
    if (k0 + BK < K) fetch(k0 + BK);
    multiply_tile<BK>(As, Bs, tx, ty, acc);
    __syncthreads();
  }
  const int n = n0 + 4 * tx;
  SEG_UNROLL
  for (int i = 0; i < 4; ++i) {
    const int m = m0 + 4 * ty + i;
    if (m >= M) continue;
    store_row4(dx + static_cast<int64_t>(m) * d.C + g * d.Cg, n, d.Cg, acc[i], vec_dx);
  }
}

// ---------------------------------------------------------------------------------------------
// Backward weight, one reduction slice [r_begin, r_end) per blockIdx.z / groups. Kb = K (+1 with
// the bias column). vec_dy: Og % KV == 0 and dy aligned; vec_x: Cg % KV == 0, K % KV == 0 and x
// aligned; vec_ws: Kb % 4 == 0 (the workspace is 16-byte aligned).
struct WeightPlan {
  int64_t splits = 1, rows = 0;  // slices of `rows` output pixels (a multiple of 32)
};

// hot-kernel: conv2d_backward_weight_igemm_kernel
template <class D>
__global__ void __launch_bounds__(256) conv2d_backward_weight_igemm_kernel(ConvDims d, const D* __restrict__ x,
                                                                           const D* __restrict__ dy, int rows,
                                                                           bool has_bias, float* __restrict__ ws,
                                                                           bool vec_dy, bool vec_x, bool vec_ws) {
  constexpr int KV = Tile<D>::KV, BK = Tile<D>::BK;
  __shared__ __align__(16) float As[BK][kBM + kPad];
  __shared__ __align__(16) float Bs[BK][kBN + kPad];
  const int t = threadIdx.x, tx = t % 16, ty = t / 16;
  const int g = blockIdx.z % d.groups, split = blockIdx.z / d.groups;
  const int m0 = blockIdx.x * kBM, n0 = blockIdx.y * kBN;
  const int R = d.N * d.Ho * d.Wo, K = d.KH * d.KW * d.Cg, Kb = K + (has_bias ? 1 : 0);
  const int r_begin = split * rows, r_end = min(R, r_begin + rows);
  // Both loaders run along M/N: reduction row lr_, elements lq .. lq+KV-1.
  constexpr int kRowThreads = kBM / KV;
  const int lrow = t / kRowThreads, lq = (t % kRowThreads) * KV;
  const int am = m0 + lq, bn = n0 + lq;
  const D* dyg = dy + g * d.Og;
  const D* xg = x + g * d.Cg;
  float ra[KV], rb[KV];
  // x at column n (a (kh, kw, c) tap) of output pixel (nn, ho, wo); 1 for the bias column.
  auto x_col = [&](int n, int nn, int h0, int w0) -> float {
    if (n >= K) return n == K && has_bias ? 1.0f : 0.0f;
    const int tap = n / d.Cg, c = n - tap * d.Cg;
    const int kh = tap / d.KW, kw = tap - kh * d.KW;
    const int hi = h0 + kh * d.dh, wi = w0 + kw * d.dw;
    if (hi < 0 || hi >= d.H || wi < 0 || wi >= d.W) return 0.0f;
    return to_f32(xg[(static_cast<int64_t>(nn * d.H + hi) * d.W + wi) * d.C + c]);
  };
  auto fetch = [&](int r0) {
    const int r = r0 + lrow;
    zero(ra);
    zero(rb);
    if (r >= r_end) return;
    const D* dyr = dyg + static_cast<int64_t>(r) * d.O;
    if (vec_dy) {
      if (am < d.Og) load_f32<KV>(dyr + am, ra);
    } else {
      SEG_UNROLL
      for (int j = 0; j < KV; ++j)
        if (am + j < d.Og) ra[j] = to_f32(dyr[am + j]);
    }
    const int wo = r % d.Wo, ho = (r / d.Wo) % d.Ho, nn = r / (d.Wo * d.Ho);
    const int h0 = ho * d.sh - d.ph, w0 = wo * d.sw - d.pw;
    if (vec_x && bn < K) {
      const int tap = bn / d.Cg, c = bn - tap * d.Cg;
      const int kh = tap / d.KW, kw = tap - kh * d.KW;
      const int hi = h0 + kh * d.dh, wi = w0 + kw * d.dw;
      if (hi >= 0 && hi < d.H && wi >= 0 && wi < d.W)
        load_f32<KV>(xg + (static_cast<int64_t>(nn * d.H + hi) * d.W + wi) * d.C + c, rb);
    } else {
      SEG_UNROLL
      for (int j = 0; j < KV; ++j) rb[j] = x_col(bn + j, nn, h0, w0);
    }
  };
  float acc[4][4];
  SEG_UNROLL
  for (int i = 0; i < 4; ++i) zero(acc[i]);
  fetch(r_begin);
  for (int r0 = r_begin; r0 < r_end; r0 += BK) {
    SEG_UNROLL
    for (int j = 0; j < KV; ++j) {
      As[lrow][lq + j] = ra[j];
      Bs[lrow][lq + j] = rb[j];
    }
    __syncthreads();
    if (r0 + BK < r_end) fetch(r0 + BK);
    multiply_tile<BK>(As, Bs, tx, ty, acc);
    __syncthreads();
  }
  const int n = n0 + 4 * tx;
  SEG_UNROLL
  for (int i = 0; i < 4; ++i) {
    const int m = m0 + 4 * ty + i;
    if (m >= d.Og) continue;
    float* out = ws + (static_cast<int64_t>(split) * d.O + g * d.Og + m) * Kb;
    if (vec_ws && n + 3 < Kb) {
      store_f32<4>(out + n, acc[i]);
    } else {
      SEG_UNROLL
      for (int j = 0; j < 4; ++j)
        if (n + j < Kb) out[n + j] = acc[i][j];
    }
  }
}

// dw[o][k] = sum over slices of ws[slice][o][k] (k < K), db[o] = sum of ws[slice][o][K], in slice order.
template <class D>
__global__ void conv2d_weight_reduce_kernel(const float* __restrict__ ws, int splits, int O, int K, bool has_bias,
                                            D* __restrict__ dw, D* __restrict__ db) {
  const int Kb = K + (has_bias ? 1 : 0), total = O * Kb;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    float s = 0.0f;
    for (int sp = 0; sp < splits; ++sp) s += ws[static_cast<int64_t>(sp) * total + i];
    const int o = i / Kb, k = i - o * Kb;
    if (k < K) dw[static_cast<int64_t>(o) * K + k] = from_f32<D>(s);
    else db[o] = from_f32<D>(s);
  }
}

// Slices of the backward-weight reduction: enough blocks to fill a GPU (about 512) without slices of
// fewer than 256 output pixels, at most 128; a function of the shape only.
WeightPlan weight_plan(const ConvShape& s) {
  const int64_t R = s.N * s.Ho() * s.Wo(), K = s.KH * s.KW * s.Cg() + 1;
  const int64_t tiles = ((s.Og() + kBM - 1) / kBM) * ((K + kBN - 1) / kBN) * s.groups;
  int64_t splits = (512 + tiles - 1) / tiles;
  const int64_t by_rows = (R + 255) / 256;
  if (splits > by_rows) splits = by_rows;
  if (splits > 128) splits = 128;
  if (splits < 1) splits = 1;
  WeightPlan plan;
  plan.rows = ((R + splits - 1) / splits + 31) / 32 * 32;
  plan.splits = plan.rows > 0 ? (R + plan.rows - 1) / plan.rows : 1;
  if (plan.splits < 1) plan.splits = 1;
  return plan;
}

}  // namespace

template <class T>
void conv2d_forward_igemm(const ConvShape& s, const T* x, const T* w, const T* b, T* y, Stream stream) {
  const ConvDims d = conv_dims(s, "conv2d_forward (implicit GEMM)");
  const int64_t M = s.N * s.Ho() * s.Wo();
  if (M <= 0 || s.O <= 0) return;
  using D = device_t<T>;
  constexpr int KV = Tile<D>::KV;
  const int64_t K = s.KH * s.KW * s.Cg();
  const bool vec_x = s.Cg() % KV == 0 && aligned16(x);
  const bool vec_w = K % KV == 0 && aligned16(w);
  const bool vec_y = s.Og() % 4 == 0 && s.O % 4 == 0 && aligned16(y);
  const dim3 grid(static_cast<unsigned>((M + kBM - 1) / kBM), static_cast<unsigned>((s.Og() + kBN - 1) / kBN),
                  static_cast<unsigned>(s.groups));
  SEG_LAUNCH(conv2d_forward_igemm_kernel<D>, grid, 256, 0, stream, d, dev(x), dev(w), dev(b), dev(y), vec_x, vec_w,
             vec_y);
}

template <class T> void conv2d_backward_data_igemm(const ConvShape& s, const T* w, const T* dy, T* dx, Stream stream) {
  const ConvDims d = conv_dims(s, "conv2d_backward_data (implicit GEMM)");
  const int64_t M = s.N * s.H * s.W;
  if (M <= 0 || s.C <= 0) return;
  using D = device_t<T>;
  constexpr int KV = Tile<D>::KV;
  const bool vec_dy = s.Og() % KV == 0 && aligned16(dy);
  const bool vec_w = s.Cg() % KV == 0 && aligned16(w);
  const bool vec_dx = s.Cg() % 4 == 0 && s.C % 4 == 0 && aligned16(dx);
  const dim3 grid(static_cast<unsigned>((M + kBM - 1) / kBM), static_cast<unsigned>((s.Cg() + kBN - 1) / kBN),
                  static_cast<unsigned>(s.groups));
  SEG_LAUNCH(conv2d_backward_data_igemm_kernel<D>, grid, 256, 0, stream, d, dev(w), dev(dy), dev(dx), vec_dy, vec_w,
             vec_dx);
}

size_t conv2d_backward_weight_igemm_workspace_bytes(const ConvShape& s) {
  const WeightPlan plan = weight_plan(s);
  return static_cast<size_t>(plan.splits * s.O * (s.KH * s.KW * s.Cg() + 1)) * sizeof(float);
}

template <class T>
void conv2d_backward_weight_igemm(const ConvShape& s, const T* x, const T* dy, T* dw, T* db, void* workspace,
                                  Stream stream) {
  const ConvDims d = conv_dims(s, "conv2d_backward_weight (implicit GEMM)");
  if (s.O <= 0) return;
  using D = device_t<T>;
  constexpr int KV = Tile<D>::KV;
  const WeightPlan plan = weight_plan(s);
  const int64_t K = s.KH * s.KW * s.Cg(), Kb = K + (db ? 1 : 0);
  require_int32(plan.splits * s.O * Kb, "conv2d_backward_weight workspace");
  float* ws = static_cast<float*>(workspace);
  const bool vec_dy = s.Og() % KV == 0 && aligned16(dy);
  const bool vec_x = s.Cg() % KV == 0 && K % KV == 0 && aligned16(x);
  const bool vec_ws = Kb % 4 == 0 && aligned16(ws);
  const dim3 grid(static_cast<unsigned>((s.Og() + kBM - 1) / kBM), static_cast<unsigned>((Kb + kBN - 1) / kBN),
                  static_cast<unsigned>(s.groups * plan.splits));
  SEG_LAUNCH(conv2d_backward_weight_igemm_kernel<D>, grid, 256, 0, stream, d, dev(x), dev(dy),
             static_cast<int>(plan.rows), db != nullptr, ws, vec_dy, vec_x, vec_ws);
  SEG_LAUNCH(conv2d_weight_reduce_kernel<D>, grid_for(s.O * Kb), kThreads, 0, stream, ws,
             static_cast<int>(plan.splits), static_cast<int>(s.O), static_cast<int>(K), db != nullptr, dev(dw),
             dev(db));
}

#define SEG_INSTANTIATE_CONV_IGEMM(T)                                                                        \
  template void conv2d_forward_igemm<T>(const ConvShape&, const T*, const T*, const T*, T*, Stream);         \
  template void conv2d_backward_data_igemm<T>(const ConvShape&, const T*, const T*, T*, Stream);             \
  template void conv2d_backward_weight_igemm<T>(const ConvShape&, const T*, const T*, T*, T*, void*, Stream);
SEG_INSTANTIATE_CONV_IGEMM(float)
SEG_INSTANTIATE_CONV_IGEMM(f16)
SEG_INSTANTIATE_CONV_IGEMM(bf16)

}  // namespace seg::cuda::detail
