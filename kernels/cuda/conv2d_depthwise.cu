// Depthwise convolution (groups == C == O: one KH x KW filter per channel, w [C, KH, KW, 1]):
// MobileNetV2's 3x3 convolutions, stride 1 or 2, dilation 1, 2 or 4 after upstream's dilation
// conversion. Math: kernels/cuda/conv2d.h with Cg = Og = 1:
//   y[n,ho,wo,c]  = b[c] + sum_{kh,kw} x[n, ho*s - p + kh*d, wo*s - p + kw*d, c] * w[c,kh,kw]
//   dx[n,h,w,c]   = sum over the (kh, kw) whose output (ho, wo) reads (h, w) of dy[n,ho,wo,c]*w[c,kh,kw]
//   dw[c,kh,kw]   = sum_{n,ho,wo} dy[n,ho,wo,c] * x[n, h(ho,kh), w(wo,kw), c];  db[c] = sum dy[.., c]
//
// A GEMM does not fit (the reduction has only KH*KW terms): these kernels are memory-bound, and
// every access runs along the contiguous channels. Forward and backward data: a grid-stride loop,
// one thread per V consecutive channels (V = 4 floats / 8 halves, one 16-byte load, when C % V == 0
// and the activations are 16-byte aligned; else 1) of one output (forward) or input (backward data,
// a gather over the outputs that read the pixel: no atomics, each dx written once) pixel; 256
// threads per block. Each block first stages the weights in shared memory as f32, tap-major
// ([KH*KW][C]: a tap's V weights are V consecutive floats; in w they are KH*KW apart), then loops;
// at most 4 blocks per SM (depthwise_launch). Wider than 48 KiB of weights (over 1365 channels of
// 3x3): no staging, grid_for() blocks, the weights read from w through L1.
// Backward weight: grid (channel tiles, S slices of the output pixels), 256 threads = G channel
// packs (G = min(packs, 32)) x R = 256/G pixel rows; each thread sums dy*x for its channels and up to
// 9 taps in registers over every R-th pixel of the slice, the R rows are added in row order through
// shared memory, each slice writes [KH*KW + 1][C] f32 partials (the last row is db) and a second
// kernel adds the S slices in order (S = min(ceil(N*Ho*Wo/256), 128): from the shape only, so the
// bits do not depend on the GPU; 256 pixels a slice gives a 960-channel 64x64 batch-8 layer 4 x 128
// blocks, where 1024 gave it 4 x 32, under one block per SM).
// (Atomics: accumulating dw with atomicAdd across blocks would save the partials, but the sum's
// order, hence the bits, would change from run to run; DESIGN 11.)
// Memory traffic: forward reads x about once from DRAM (each pixel KH*KW times from L1/L2) and
// writes y once; backward data reads dy about once, writes dx once; backward weight reads dy once
// and x about once, writes S*(KH*KW+1)*C*4 bytes of partials.
#include <atomic>
#include <cstdint>
#include <string>

#include "kernels/cuda/conv2d_common.cuh"
#include "kernels/cuda/dynamic_smem.h"
#include "kernels/cuda/conv2d_paths.h"
#include "kernels/cuda/launch.h"

namespace seg::cuda::detail {

namespace {

// The weights as f32 in shared memory, tap-major. Global w is [C][taps], so one tap's weights for a
// thread's V channels are taps elements apart there: V 2-byte loads per tap, and across a warp (32
// consecutive channel packs) each load touches its own sector. Per output pixel and pack that was
// 9 x 8 scattered loads beside 9 16-byte loads of x: on the first H200 run the depthwise
// convolutions ran about 10x under the DRAM bound (0.29 ms for the 126 MB of a 960-channel
// forward). Staged, a tap's weights of pack p are Q = V/4 float4 "quads" (V >= 4), and quad q of
// every pack sits together: sw[tap * C + q * (C / Q) + 4 * p + r] holds channel V * p + 4 * q + r.
// So a warp's load of quad q is 32 consecutive 16-byte chunks: 4 wavefronts, no bank conflict
// (pack-major [tap][C] would put the lanes' chunks 32 bytes apart: a 2-way conflict). V = 1 (the
// scalar path, any C): sw[tap * C + c]. Staged once per block; the grid is capped
// (depthwise_launch) so that the blocks' staging stays small beside the activations.
template <int V>
__device__ __forceinline__ int staged_index(int C, int tap, int c) {
  if constexpr (V >= 4) {
    constexpr int Q = V / 4;
    const int p = c / V, v = c - p * V;
    return tap * C + (v / 4) * (C / Q) + 4 * p + (v % 4);
  } else {
    return tap * C + c;
  }
}

template <int V, class D>
__device__ __forceinline__ void stage_weights_tap_major(const D* __restrict__ w, int C, int taps, float* sw) {
  for (int j = static_cast<int>(threadIdx.x); j < C * taps; j += static_cast<int>(blockDim.x)) {
    const int c = j / taps, t = j - c * taps;
    sw[staged_index<V>(C, t, c)] = to_f32(w[j]);
  }
  __syncthreads();
}

// The weights of channels c0..c0+V-1 (c0 = V * pack) at `tap`: staged (16-byte loads of quads;
// C is then a multiple of V, so they are aligned) or straight from w ([C][taps]: V loads taps
// elements apart).
template <bool kStaged, int V, class D>
__device__ __forceinline__ void weights_at(const float* sw, const D* __restrict__ w, int C, int taps, int tap, int c0,
                                           float (&out)[V]) {
  if constexpr (kStaged && V >= 4) {
    constexpr int Q = V / 4;
    SEG_UNROLL
    for (int q = 0; q < Q; ++q) {
      const float4 f = *reinterpret_cast<const float4*>(sw + tap * C + q * (C / Q) + 4 * (c0 / V));
      out[4 * q] = f.x;
      out[4 * q + 1] = f.y;
      out[4 * q + 2] = f.z;
      out[4 * q + 3] = f.w;
    }
  } else if constexpr (kStaged) {
    SEG_UNROLL
    for (int v = 0; v < V; ++v) out[v] = sw[tap * C + c0 + v];
  } else {
    SEG_UNROLL
    for (int v = 0; v < V; ++v) out[v] = to_f32(w[static_cast<int64_t>(c0 + v) * taps + tap]);
  }
}

// hot-kernel: conv2d_forward_depthwise_kernel
template <class D, int V, bool kStaged>
__global__ void conv2d_forward_depthwise_kernel(ConvDims d, const D* __restrict__ x, const D* __restrict__ w,
                                                const D* __restrict__ b, D* __restrict__ y) {
  const int packs = d.C / V, taps = d.KH * d.KW;
  const int total = d.N * d.Ho * d.Wo * packs;
  float* sw = nullptr;
  if constexpr (kStaged) {
    sw = seg::dynamic_smem<float>();
    stage_weights_tap_major<V>(w, d.C, taps, sw);
  }
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    const int c0 = (i % packs) * V;
    const int pix = i / packs;
    const int wo = pix % d.Wo, ho = (pix / d.Wo) % d.Ho, n = pix / (d.Wo * d.Ho);
    float acc[V];
    SEG_UNROLL
    for (int v = 0; v < V; ++v) acc[v] = b ? to_f32(b[c0 + v]) : 0.0f;
    for (int kh = 0; kh < d.KH; ++kh) {
      const int hi = ho * d.sh - d.ph + kh * d.dh;
      if (hi < 0 || hi >= d.H) continue;
      for (int kw = 0; kw < d.KW; ++kw) {
        const int wi = wo * d.sw - d.pw + kw * d.dw;
        if (wi < 0 || wi >= d.W) continue;
        float xv[V];
        load_f32<V>(x + (static_cast<int64_t>(n * d.H + hi) * d.W + wi) * d.C + c0, xv);
        float wv[V];
        weights_at<kStaged>(sw, w, d.C, taps, kh * d.KW + kw, c0, wv);
        SEG_UNROLL
        for (int v = 0; v < V; ++v) acc[v] += xv[v] * wv[v];
      }
    }
    store_f32<V>(y + static_cast<int64_t>(pix) * d.C + c0, acc);
  }
}

// hot-kernel: conv2d_backward_data_depthwise_kernel
template <class D, int V, bool kStaged>
__global__ void conv2d_backward_data_depthwise_kernel(ConvDims d, const D* __restrict__ w, const D* __restrict__ dy,
                                                      D* __restrict__ dx) {
  const int packs = d.C / V, taps = d.KH * d.KW;
  const int total = d.N * d.H * d.W * packs;
  float* sw = nullptr;
  if constexpr (kStaged) {
    sw = seg::dynamic_smem<float>();
    stage_weights_tap_major<V>(w, d.C, taps, sw);
  }
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    const int c0 = (i % packs) * V;
    const int pix = i / packs;
    const int wi = pix % d.W, hi = (pix / d.W) % d.H, n = pix / (d.W * d.H);
    float acc[V];
    SEG_UNROLL
    for (int v = 0; v < V; ++v) acc[v] = 0.0f;
    for (int kh = 0; kh < d.KH; ++kh) {
      const int ho = reader_of(hi, kh, d.sh, d.ph, d.dh, d.Ho);
      if (ho < 0) continue;
      for (int kw = 0; kw < d.KW; ++kw) {
        const int wo = reader_of(wi, kw, d.sw, d.pw, d.dw, d.Wo);
        if (wo < 0) continue;
        float g[V];
        load_f32<V>(dy + (static_cast<int64_t>(n * d.Ho + ho) * d.Wo + wo) * d.C + c0, g);
        float wv[V];
        weights_at<kStaged>(sw, w, d.C, taps, kh * d.KW + kw, c0, wv);
        SEG_UNROLL
        for (int v = 0; v < V; ++v) acc[v] += g[v] * wv[v];
      }
    }
    store_f32<V>(dx + static_cast<int64_t>(pix) * d.C + c0, acc);
  }
}

constexpr int kTapGroup = 9;  // taps summed in registers per pass (3x3 in one pass)

// Slice blockIdx.y of the output pixels, channel packs blockIdx.x*G ..; partials
// ws[slice][tap][c] (tap = taps: db).
// hot-kernel: conv2d_backward_weight_depthwise_kernel
template <class D, int V>
__global__ void conv2d_backward_weight_depthwise_kernel(ConvDims d, const D* __restrict__ x, const D* __restrict__ dy,
                                                        int rows, int packs_per_block, float* __restrict__ ws) {
  __shared__ float red[kThreads * V];
  const int t = threadIdx.x, G = packs_per_block, R = kThreads / G;
  const int gp = t % G, r = t / G;
  const int c0 = (blockIdx.x * G + gp) * V;
  const bool active = r < R && c0 < d.C;
  const int taps = d.KH * d.KW, P = d.N * d.Ho * d.Wo;
  const int p_begin = blockIdx.y * rows, p_end = min(P, p_begin + rows);
  float* out = ws + static_cast<int64_t>(blockIdx.y) * (taps + 1) * d.C;
  // Adds the rows' values of red[] in row order and writes them to out_row[c].
  auto reduce_rows = [&](const float (&val)[V], float* out_row) {
    SEG_UNROLL
    for (int v = 0; v < V; ++v) red[t * V + v] = val[v];
    __syncthreads();
    if (active && r == 0) {
      SEG_UNROLL
      for (int v = 0; v < V; ++v) {
        float s = 0.0f;
        for (int rr = 0; rr < R; ++rr) s += red[(rr * G + gp) * V + v];
        out_row[c0 + v] = s;
      }
    }
    __syncthreads();
  };
  for (int t0 = 0; t0 < taps; t0 += kTapGroup) {
    const int group = min(kTapGroup, taps - t0);
    float acc[kTapGroup][V], bias[V];
    SEG_UNROLL
    for (int tt = 0; tt < kTapGroup; ++tt) {
      SEG_UNROLL
      for (int v = 0; v < V; ++v) acc[tt][v] = 0.0f;
    }
    SEG_UNROLL
    for (int v = 0; v < V; ++v) bias[v] = 0.0f;
    if (active) {
      for (int p = p_begin + r; p < p_end; p += R) {
        const int wo = p % d.Wo, ho = (p / d.Wo) % d.Ho, n = p / (d.Wo * d.Ho);
        float g[V];
        load_f32<V>(dy + static_cast<int64_t>(p) * d.C + c0, g);
        if (t0 == 0) {
          SEG_UNROLL
          for (int v = 0; v < V; ++v) bias[v] += g[v];
        }
        SEG_UNROLL
        for (int tt = 0; tt < kTapGroup; ++tt) {
          if (tt >= group) break;
          const int tap = t0 + tt, kh = tap / d.KW, kw = tap - kh * d.KW;
          const int hi = ho * d.sh - d.ph + kh * d.dh, wi = wo * d.sw - d.pw + kw * d.dw;
          if (hi < 0 || hi >= d.H || wi < 0 || wi >= d.W) continue;
          float xv[V];
          load_f32<V>(x + (static_cast<int64_t>(n * d.H + hi) * d.W + wi) * d.C + c0, xv);
          SEG_UNROLL
          for (int v = 0; v < V; ++v) acc[tt][v] += g[v] * xv[v];
        }
      }
    }
    SEG_UNROLL
    for (int tt = 0; tt < kTapGroup; ++tt)  // unrolled, so acc stays in registers
      if (tt < group) reduce_rows(acc[tt], out + static_cast<int64_t>(t0 + tt) * d.C);
    if (t0 == 0) reduce_rows(bias, out + static_cast<int64_t>(taps) * d.C);
  }
}

// dw[c][tap] = sum over slices of ws[slice][tap][c]; db[c] = sum of ws[slice][taps][c], in order.
template <class D>
__global__ void conv2d_weight_reduce_depthwise_kernel(const float* __restrict__ ws, int splits, int C, int taps,
                                                      D* __restrict__ dw, D* __restrict__ db) {
  const int total = (taps + 1) * C;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    float s = 0.0f;
    for (int sp = 0; sp < splits; ++sp) s += ws[static_cast<int64_t>(sp) * total + i];
    const int tap = i / C, c = i - tap * C;
    if (tap < taps) dw[static_cast<int64_t>(c) * taps + tap] = from_f32<D>(s);
    else if (db) db[c] = from_f32<D>(s);
  }
}

struct DepthwisePlan {
  int64_t splits = 1, rows = 0;
};
DepthwisePlan depthwise_plan(const ConvShape& s) {
  const int64_t P = s.N * s.Ho() * s.Wo();
  int64_t splits = (P + 255) / 256;
  if (splits > 128) splits = 128;
  if (splits < 1) splits = 1;
  DepthwisePlan plan;
  plan.rows = (P + splits - 1) / splits;
  plan.splits = splits;
  return plan;
}

// Forward and backward data: the grid of the grid-stride loop over `work` items, and whether the
// weights are staged in shared memory (taps * C floats, up to the 48 KiB a launch gets without
// opting in: 1365 channels of 3x3, every layer of the models; wider ones read w as before). Staged,
// at most 4 blocks per SM (32 warps: enough 16-byte loads in flight for DRAM), so that each block's
// staging (mostly from L2) is paid once for many items: about 9 MB for MobileNetV2's 960-channel
// layers, beside 126 MB of activations. Every output element is one thread's sum in a fixed order,
// so neither the grid nor the staging changes results.
struct DepthwiseLaunch {
  unsigned grid;
  size_t smem;  // 0: not staged
};
std::atomic<bool> g_staging{true};
DepthwiseLaunch depthwise_launch(const ConvShape& s, int64_t work) {
  const size_t smem = static_cast<size_t>(s.KH * s.KW * s.C) * sizeof(float);
  if (smem > 48 * 1024 || !g_staging.load(std::memory_order_relaxed)) return {grid_for(work), 0};
  int device = 0, sms = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess || sms < 1)
    sms = 1;
  const unsigned cap = static_cast<unsigned>(4 * sms), grid = grid_for(work);
  return {grid < cap ? grid : cap, smem};
}

template <class D, int V>
void launch_forward_depthwise(const ConvShape& s, const ConvDims& d, int64_t work, const D* x, const D* w,
                              const D* b, D* y, Stream stream) {
  const DepthwiseLaunch l = depthwise_launch(s, work);
  if (l.smem)
    SEG_LAUNCH((conv2d_forward_depthwise_kernel<D, V, true>), l.grid, kThreads, l.smem, stream, d, x, w, b, y);
  else
    SEG_LAUNCH((conv2d_forward_depthwise_kernel<D, V, false>), l.grid, kThreads, 0, stream, d, x, w, b, y);
}

template <class D, int V>
void launch_backward_data_depthwise(const ConvShape& s, const ConvDims& d, int64_t work, const D* w, const D* dy,
                                    D* dx, Stream stream) {
  const DepthwiseLaunch l = depthwise_launch(s, work);
  if (l.smem)
    SEG_LAUNCH((conv2d_backward_data_depthwise_kernel<D, V, true>), l.grid, kThreads, l.smem, stream, d, w, dy, dx);
  else
    SEG_LAUNCH((conv2d_backward_data_depthwise_kernel<D, V, false>), l.grid, kThreads, 0, stream, d, w, dy, dx);
}

}  // namespace

void set_depthwise_weight_staging(bool on) { g_staging.store(on, std::memory_order_relaxed); }

template <class T>
void conv2d_forward_depthwise(const ConvShape& s, const T* x, const T* w, const T* b, T* y, Stream stream) {
  const ConvDims d = conv_dims(s, "conv2d_forward (depthwise)");
  const int64_t out = s.y_numel();
  if (out <= 0) return;
  using D = device_t<T>;
  constexpr int V = kVec16<D>;
  if (s.C % V == 0 && aligned16(x) && aligned16(y))
    launch_forward_depthwise<D, V>(s, d, out / V, dev(x), dev(w), dev(b), dev(y), stream);
  else
    launch_forward_depthwise<D, 1>(s, d, out, dev(x), dev(w), dev(b), dev(y), stream);
}

template <class T>
void conv2d_backward_data_depthwise(const ConvShape& s, const T* w, const T* dy, T* dx, Stream stream) {
  const ConvDims d = conv_dims(s, "conv2d_backward_data (depthwise)");
  const int64_t in = s.x_numel();
  if (in <= 0) return;
  using D = device_t<T>;
  constexpr int V = kVec16<D>;
  if (s.C % V == 0 && aligned16(dy) && aligned16(dx))
    launch_backward_data_depthwise<D, V>(s, d, in / V, dev(w), dev(dy), dev(dx), stream);
  else
    launch_backward_data_depthwise<D, 1>(s, d, in, dev(w), dev(dy), dev(dx), stream);
}

size_t conv2d_backward_weight_depthwise_workspace_bytes(const ConvShape& s) {
  return static_cast<size_t>(depthwise_plan(s).splits * (s.KH * s.KW + 1) * s.C) * sizeof(float);
}

template <class T>
void conv2d_backward_weight_depthwise(const ConvShape& s, const T* x, const T* dy, T* dw, T* db, void* workspace,
                                      Stream stream) {
  const ConvDims d = conv_dims(s, "conv2d_backward_weight (depthwise)");
  if (s.C <= 0) return;
  using D = device_t<T>;
  constexpr int V = kVec16<D>;
  const DepthwisePlan plan = depthwise_plan(s);
  const int64_t taps = s.KH * s.KW;
  require_int32(plan.splits * (taps + 1) * s.C, "conv2d_backward_weight (depthwise) workspace");
  float* ws = static_cast<float*>(workspace);
  const bool vec = s.C % V == 0 && aligned16(x) && aligned16(dy);
  const int64_t packs = vec ? s.C / V : s.C;
  const int G = static_cast<int>(packs < 32 ? packs : 32);
  const dim3 grid(static_cast<unsigned>((packs + G - 1) / G), static_cast<unsigned>(plan.splits));
  if (vec)
    SEG_LAUNCH((conv2d_backward_weight_depthwise_kernel<D, V>), grid, kThreads, 0, stream, d, dev(x), dev(dy),
               static_cast<int>(plan.rows), G, ws);
  else
    SEG_LAUNCH((conv2d_backward_weight_depthwise_kernel<D, 1>), grid, kThreads, 0, stream, d, dev(x), dev(dy),
               static_cast<int>(plan.rows), G, ws);
  SEG_LAUNCH(conv2d_weight_reduce_depthwise_kernel<D>, grid_for((taps + 1) * s.C), kThreads, 0, stream, ws,
             static_cast<int>(plan.splits), static_cast<int>(s.C), static_cast<int>(taps), dev(dw), dev(db));
}

#define SEG_INSTANTIATE_CONV_DEPTHWISE(T)                                                                        \
  template void conv2d_forward_depthwise<T>(const ConvShape&, const T*, const T*, const T*, T*, Stream);         \
  template void conv2d_backward_data_depthwise<T>(const ConvShape&, const T*, const T*, T*, Stream);             \
  template void conv2d_backward_weight_depthwise<T>(const ConvShape&, const T*, const T*, T*, T*, void*, Stream);
SEG_INSTANTIATE_CONV_DEPTHWISE(float)
SEG_INSTANTIATE_CONV_DEPTHWISE(f16)
SEG_INSTANTIATE_CONV_DEPTHWISE(bf16)

}  // namespace seg::cuda::detail
