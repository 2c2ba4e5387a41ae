// Probes of the warp and block intrinsics, atomics and math intrinsics: each thread writes what it
// got, and the tests compare with values derived from the CUDA documentation.
#include <cuda_fp16.h>

#include "kernels/cuda/launch.h"
#include "tests/sim/sim_test_kernels.h"

namespace {

constexpr unsigned kFull = 0xFFFFFFFFu;

// Value held by a thread: distinct per thread.
__device__ int lane_value(int tid) { return 1000 + 10 * tid; }

__global__ void shuffle_kernel(int* out, int kind, int arg, int width) {
  const int tid = threadIdx.x;
  const int v = lane_value(tid);
  int r = 0;
  switch (kind) {
    case 0:
      r = __shfl_sync(kFull, v, arg + tid, width);
      break;
    case 1:
      r = __shfl_up_sync(kFull, v, static_cast<unsigned>(arg), width);
      break;
    case 2:
      r = __shfl_down_sync(kFull, v, static_cast<unsigned>(arg), width);
      break;
    default:
      r = __shfl_xor_sync(kFull, v, arg, width);
      break;
  }
  out[tid] = r;
}

__global__ void shuffle_types_kernel(double* out_double, __half* out_half) {
  const int tid = threadIdx.x;
  out_double[tid] = __shfl_xor_sync(kFull, 0.5 + tid, 1);
  out_half[tid] = __shfl_down_sync(kFull, __float2half(static_cast<float>(tid)), 2);
}

// Per thread: ballot, any, all, uni (full mask), then ballot and all inside divergent halves of the
// warp with each half's own mask (legal: every lane named in a mask takes part).
__global__ void vote_kernel(unsigned* out) {
  const unsigned tid = threadIdx.x, lane = tid % 32;
  const int pred = (tid % 3) == 0;
  unsigned* o = out + 6 * tid;
  o[0] = __ballot_sync(kFull, pred);
  o[1] = static_cast<unsigned>(__any_sync(kFull, pred));
  o[2] = static_cast<unsigned>(__all_sync(kFull, tid < 1000));
  o[3] = static_cast<unsigned>(__uni_sync(kFull, pred));
  if (lane < 16) {
    o[4] = __ballot_sync(0x0000FFFFu, lane % 2);
    o[5] = static_cast<unsigned>(__all_sync(0x0000FFFFu, lane < 16));
  } else {
    o[4] = __ballot_sync(0xFFFF0000u, lane % 2);
    o[5] = static_cast<unsigned>(__all_sync(0xFFFF0000u, lane < 20));
  }
}

__global__ void syncthreads_kernel(int* out) {
  const int tid = threadIdx.x;
  out[3 * tid + 0] = __syncthreads_count(tid % 5 == 0);
  out[3 * tid + 1] = __syncthreads_and(tid >= 0);
  out[3 * tid + 2] = __syncthreads_or(tid == 17);
}

__global__ void match_reduce_kernel(unsigned* out) {
  const unsigned tid = threadIdx.x, lane = tid % 32;
  unsigned* o = out + 10 * tid;
  o[0] = __match_any_sync(kFull, lane / 4);
  int pred = -1;
  o[1] = __match_all_sync(kFull, 7, &pred);
  o[2] = static_cast<unsigned>(pred);
  o[3] = __match_all_sync(kFull, lane, &pred);
  o[4] = static_cast<unsigned>(pred);
  o[5] = __reduce_add_sync(kFull, lane);
  o[6] = static_cast<unsigned>(__reduce_min_sync(kFull, static_cast<int>(lane) - 16));
  o[7] = __reduce_max_sync(kFull, lane * 3u);
  o[8] = __reduce_or_sync(kFull, 1u << lane);
  o[9] = __reduce_xor_sync(kFull, lane);
}

// ints: [0] add, [1] sub, [2] max, [3] min, [4] cas-counted, [5] and, [6] or, [7] xor;
// uints: [0] inc wrapping at 9, [1] dec wrapping at 9, [2] exch count; ulls: [0] add, [1] max;
// floats: [0] add, [1] exch target; doubles: [0] add; halves: [0] add.
__global__ void atomics_kernel(int* ints, unsigned* uints, unsigned long long* ulls, float* floats, double* doubles,
                               __half* halves) {
  const int g = blockIdx.x * blockDim.x + threadIdx.x;
  atomicAdd(&ints[0], 2);
  atomicSub(&ints[1], 1);
  atomicMax(&ints[2], g);
  atomicMin(&ints[3], -g);
  int old = atomicAdd(&ints[4], 0);
  while (true) {
    const int seen = atomicCAS(&ints[4], old, old + 1);
    if (seen == old) break;
    old = seen;
  }
  atomicAnd(&ints[5], ~(1 << (g % 31)));
  atomicOr(&ints[6], 1 << (g % 31));
  atomicXor(&ints[7], g);
  atomicInc(&uints[0], 9u);
  atomicDec(&uints[1], 9u);
  if (atomicExch(&uints[2], 1u) == 0u) atomicAdd(&ulls[1], 1ull);  // exactly one thread sees 0
  atomicAdd(&ulls[0], 1ull << 33);
  atomicAdd(&floats[0], 0.25f);
  atomicExch(&floats[1], 3.0f);
  atomicAdd(&doubles[0], 0.5);
  atomicAdd(&halves[0], __float2half(1.0f));
}

__global__ void activemask_kernel(unsigned* out, int live_lanes) {
  const unsigned lane = threadIdx.x % 32;
  if (static_cast<int>(lane) >= live_lanes) return;
  const unsigned mask = __activemask();
  __syncwarp(mask);
  out[threadIdx.x] = mask;
}

__global__ void math_kernel(float* f, int* i, unsigned* u) {
  f[0] = __saturatef(1.5f);
  f[1] = __saturatef(-0.5f);
  f[2] = __saturatef(__int_as_float(0x7FC00000));  // NaN -> 0
  f[3] = __fdividef(1.0f, 0x1p127f);               // 0 for 2^126 < |y| < 2^128
  f[4] = __fdividef(6.0f, 3.0f);
  f[5] = __half2float(
      __hfma(__float2half(1.0009765625f), __float2half(1.0009765625f), __float2half(-1.001953125f)));  // fused: 2^-20
  f[6] = min(2.0f, -3.0f);
  f[7] = max(2.0f, -3.0f);
  i[0] = __float2int_rn(2.5f);
  i[1] = __float2int_rn(3.5f);
  i[2] = __float2int_rn(-2.5f);
  i[3] = __float2int_rz(-2.7f);
  i[4] = __float2int_rd(-2.2f);
  i[5] = __float2int_ru(2.2f);
  i[6] = __float2int_rn(1e20f);                       // saturates
  i[7] = __float2int_rn(__int_as_float(0x7FC00000));  // NaN -> 0
  i[8] = __popc(0xF0F0F0F0u);
  i[9] = __clz(1);
  i[10] = __clz(0);
  i[11] = __ffs(0x50);
  i[12] = __ffs(0);
  i[13] = __mulhi(-65536, 65536);
  i[14] = min(-4, 3);
  i[15] = max(-4, 3);
  u[0] = __brev(1u);
  u[1] = __byte_perm(0x33221100u, 0x77665544u, 0x5140u);
  u[2] = __funnelshift_l(0x80000000u, 0x1u, 1);
  u[3] = __funnelshift_r(0x2u, 0x1u, 1);
  u[4] = __umulhi(0xFFFFFFFFu, 0xFFFFFFFFu);
  u[5] = __float_as_uint(1.0f);
  u[6] = static_cast<unsigned>(__popcll(0xFFFFFFFFFFull));
  u[7] = __funnelshift_lc(0x12345678u, 0x1u, 40);  // shift clamped to 32
}

}  // namespace

namespace simtest {

void shuffle_probe(int* out, int threads, ShuffleKind kind, int arg, int width) {
  SEG_LAUNCH(shuffle_kernel, 1, threads, 0, 0, out, static_cast<int>(kind), arg, width);
}
void shuffle_types_probe(double* out_double, __half* out_half, int threads) {
  SEG_LAUNCH(shuffle_types_kernel, 1, threads, 0, 0, out_double, out_half);
}
void vote_probe(unsigned* out, int threads) { SEG_LAUNCH(vote_kernel, 1, threads, 0, 0, out); }
void syncthreads_probe(int* out, int threads) { SEG_LAUNCH(syncthreads_kernel, 1, threads, 0, 0, out); }
void match_reduce_probe(unsigned* out, int threads) { SEG_LAUNCH(match_reduce_kernel, 1, threads, 0, 0, out); }
void atomics_probe(int* ints, unsigned* uints, unsigned long long* ulls, float* floats, double* doubles, __half* halves,
                   int blocks, int threads) {
  SEG_LAUNCH(atomics_kernel, blocks, threads, 0, 0, ints, uints, ulls, floats, doubles, halves);
}
void activemask_probe(unsigned* out, int threads, int live_lanes) {
  SEG_LAUNCH(activemask_kernel, 1, threads, 0, 0, out, live_lanes);
}
void math_probe(float* f, int* i, unsigned* u) { SEG_LAUNCH(math_kernel, 1, 1, 0, 0, f, i, u); }

}  // namespace simtest
