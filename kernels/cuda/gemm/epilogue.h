// Tensor-core GEMM, epilogue: accumulators -> shared memory -> D = act(alpha * acc + beta * C + bias).
//
// Why through shared memory: WMMA's fragment layout is unspecified, so a bias by column or a bounds
// check cannot be applied to fragment elements (DESIGN decision 3); and even for mma.sync, whose
// layout is specified, each lane holds pairs of columns scattered over 8 rows, which would make
// 4-byte global stores. Staged in shared memory, consecutive threads own consecutive 4-column
// chunks of a row: 16-byte (f32) or 8-byte (f16/bf16) coalesced stores, the bias read once per
// chunk, and the ragged edge (m >= M, n >= N) checked per element.
//
//   D[m, n] = act(alpha * acc[m, n] + beta * D[m, n] + bias[n])   cast to D's type (f32, f16, bf16)
//   beta == 0 never reads D (it may hold NaN); bias may be null; act: none, ReLU, ReLU6 (NaN stays
//   NaN, as in PyTorch). D is row-major with leading dimension ldd; with groups, group g's D starts
//   d_group_stride elements further (its bias bias_group_stride elements further).
//   Rows on a pixel grid (RowGrid, when `on`): row m = (n, i, j) of images of grid_h x grid_w
//   rows starts at base + n*image + i*step_h + j*step_w elements instead of m*ldd. Backward data
//   by stride phase (conv2d_tc_impl.h) writes a phase's pixels, every sh-th row and sw-th column of
//   dx, this way.
// The output type is a run-time value (the store is a uniform branch), so a kernel is not compiled
// once per output type.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "kernels/common/fast_divmod.h"
#include "kernels/cuda/gemm/vector_access.h"

namespace seg::cuda::tc {

enum class OutType : int { f32, f16, bf16 };
enum class Act : int { none, relu, relu6 };

struct RowGrid {
  bool on = false;  // false: plain rows, m*ldd
  FastDivmod by_image, by_w;  // grid_h*grid_w and grid_w: multiply-and-shift (kernels/common/fast_divmod.h)
  int64_t base = 0, image = 0, step_h = 0, step_w = 0;
};

struct EpilogueParams {
  float alpha = 1.0f, beta = 0.0f;
  void* d = nullptr;
  int64_t ldd = 0;
  RowGrid rows;
  int64_t d_group_stride = 0;
  OutType d_type = OutType::f32;
  bool d_vec = false;  // d and ldd allow whole 4-element vector stores (checked by the launcher)
  const void* bias = nullptr;
  int64_t bias_group_stride = 0;
  Act act = Act::none;
};

__device__ __forceinline__ float activate(float x, Act act) {
  if (act == Act::relu) return x < 0.0f ? 0.0f : x;
  if (act == Act::relu6) return x < 0.0f ? 0.0f : (x > 6.0f ? 6.0f : x);
  return x;
}

__device__ __forceinline__ float load_as_float(const void* p, int64_t i, OutType t) {
  if (t == OutType::f32) return static_cast<const float*>(p)[i];
  if (t == OutType::f16) return __half2float(static_cast<const __half*>(p)[i]);
  return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
}

__device__ __forceinline__ uint32_t pack2(float lo, float hi, OutType t) {
  uint16_t a, b;
  if (t == OutType::f16) {
    a = __half_as_ushort(__float2half_rn(lo));
    b = __half_as_ushort(__float2half_rn(hi));
  } else {
    a = __bfloat16_as_ushort(__float2bfloat16_rn(lo));
    b = __bfloat16_as_ushort(__float2bfloat16_rn(hi));
  }
  return static_cast<uint32_t>(a) | (static_cast<uint32_t>(b) << 16);
}

// Applies the epilogue to v[0..3] = acc[m, n..n+3] and stores the elements with n + e < N.
// kRowGrid: whether the kernel can be asked for a RowGrid at all (only backward data's: block_tile.h).
// A compile-time switch, because the grid's divisions in every other GEMM's epilogue cost registers:
// with it unconditional, ptxas spilled 8 bytes in the bf16 WMMA 128x128 GEMM on sm_80.
template <bool kRowGrid>
__device__ __forceinline__ int64_t row_offset(const EpilogueParams& ep, int m) {
  if (!kRowGrid || !ep.rows.on) return static_cast<int64_t>(m) * ep.ldd;
  int n, rest, i, j;
  ep.rows.by_image.divmod(m, n, rest);
  ep.rows.by_w.divmod(rest, i, j);
  return ep.rows.base + n * ep.rows.image + i * ep.rows.step_h + j * ep.rows.step_w;
}

template <bool kRowGrid = false>
__device__ __forceinline__ void store_chunk(const EpilogueParams& ep, int g, int m, int n, int N, const float (&v)[4]) {
  const int count = N - n < 4 ? N - n : 4;
  const int64_t base = g * ep.d_group_stride + row_offset<kRowGrid>(ep, m) + n;
  float out[4];
  for (int e = 0; e < 4; ++e) {
    if (e >= count) {
      out[e] = 0.0f;
      continue;
    }
    float x = ep.alpha * v[e];
    if (ep.beta != 0.0f) x += ep.beta * load_as_float(ep.d, base + e, ep.d_type);
    if (ep.bias) x += load_as_float(ep.bias, g * ep.bias_group_stride + n + e, ep.d_type);
    out[e] = activate(x, ep.act);
  }
  if (ep.d_vec && count == 4) {
    if (ep.d_type == OutType::f32) {
      store_vec(static_cast<float*>(ep.d) + base, make_float4(out[0], out[1], out[2], out[3]));
    } else {
      store_vec(static_cast<uint16_t*>(ep.d) + base,
                make_uint2(pack2(out[0], out[1], ep.d_type), pack2(out[2], out[3], ep.d_type)));
    }
    return;
  }
  for (int e = 0; e < count; ++e) {
    if (ep.d_type == OutType::f32)
      static_cast<float*>(ep.d)[base + e] = out[e];
    else if (ep.d_type == OutType::f16)
      static_cast<__half*>(ep.d)[base + e] = __float2half_rn(out[e]);
    else
      static_cast<__nv_bfloat16*>(ep.d)[base + e] = __float2bfloat16_rn(out[e]);
  }
}

// Stores rows [0, rows) x columns [0, cols) of the staged tile cs (leading dimension ldc floats),
// whose element (r, c) is acc[m0 + r, n0 + c]. All threads of the block call it.
template <int THREADS, bool kRowGrid = false>
__device__ __forceinline__ void store_tile(const EpilogueParams& ep, const float* cs, int ldc, int rows, int cols,
                                           int m0, int n0, int M, int N, int g) {
  const int chunks_per_row = cols / 4;
  for (int q = static_cast<int>(threadIdx.x); q < rows * chunks_per_row; q += THREADS) {
    const int r = q / chunks_per_row, c = (q % chunks_per_row) * 4;
    const int m = m0 + r, n = n0 + c;
    if (m >= M || n >= N) continue;
    const float4 x = load_vec<float4>(cs + r * ldc + c);
    const float v[4] = {x.x, x.y, x.z, x.w};
    store_chunk<kRowGrid>(ep, g, m, n, N, v);
  }
}

}  // namespace seg::cuda::tc
