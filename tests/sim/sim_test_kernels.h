// Host-side launchers of the simulator suite's kernels (tests/sim/*.cu). Each wraps one SEG_LAUNCH;
// pointers are device pointers (cudaMalloc). Compiles with g++ (the tests) and nvcc (CI).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace simtest {

// ---- good kernels ------------------------------------------------------------------------------
// elementwise.cu
void scale_exp(const float* x, float* y, int n, float scale, int blocks, int threads);
void float_to_half(const float* x, __half* y, int n, int blocks, int threads);
void transpose(const float* in, float* out, int rows, int cols);  // 2-D grid of 16x8 blocks
// scale_exp with any launch configuration (scale 1), for the launch checks.
void scale_exp_config(const float* x, float* y, int n, dim3 grid, dim3 block);
// Launches a kernel without parameters `times` times; returns how many times it ran.
int count_launches(int times);
// y[i] *= 3 with a two-argument template kernel.
void scale_by_three(float* y, int n);
// y[t] = floats - 1 - t through `floats` floats of dynamic shared memory; with opt_in, first raises
// the kernel's limit with cudaFuncSetAttribute (whose error is returned).
cudaError_t smem_roundtrip(float* y, int threads, int floats, bool opt_in);
// Every thread writes its rank in the order threads first ran, before and after a barrier.
void run_order(int* order_before, int* order_after, int* counters, int threads);

// reduction.cu: sum of x and number of positive x, by one launch of `blocks` blocks.
void block_reduce(const float* x, int n, float* sum, int* positives, int blocks, int threads);

// wmma_gemm.cu: C[M x N] = alpha * A[M x K] * B[K x N] (row-major, __half in, float out).
void wmma_gemm(const __half* a, const __half* b, float* c, int m, int n, int k, float alpha);

// wmma_variants.cu: D = A * B + C for one tile (one warp); layouts as in each kernel's comment.
void wmma_half_col_major(const __half* a, const __half* b, const float* c, float* d);        // 16x16x16, col-major
void wmma_bf16_m32n8k16(const __nv_bfloat16* a, const __nv_bfloat16* b, const float* c, float* d);  // row-major
void wmma_half_m8n32k16(const __half* a, const __half* b, const __half* c, __half* d);       // A row, B col
void wmma_tf32(const float* a, const float* b, const float* c, float* d);                   // 16x16x8, row-major

}  // namespace simtest

namespace simtest {

// intrinsics.cu: exact-semantics probes; each thread writes its results (layouts in the .cu file).
enum class ShuffleKind : int { idx = 0, up = 1, down = 2, bfly = 3 };
void shuffle_probe(int* out, int threads, ShuffleKind kind, int arg, int width);  // out[tid] = source lane's value
void shuffle_types_probe(double* out_double, __half* out_half, int threads);
void vote_probe(unsigned* out, int threads);          // 6 words per thread
void syncthreads_probe(int* out, int threads);        // 3 words per thread
void match_reduce_probe(unsigned* out, int threads);  // 10 words per thread
void atomics_probe(int* ints, unsigned* uints, unsigned long long* ulls, float* floats, double* doubles, __half* halves,
                   int blocks, int threads);
void activemask_probe(unsigned* out, int threads, int live_lanes);
void math_probe(float* f, int* i, unsigned* u);

}  // namespace simtest

namespace simtest {

// ptx.cu: the project's PTX helpers (kernels/cuda/ptx.h).
// ldmatrix: src holds 32 rows of 8 b16 values; lane l addresses row perm[l] of the copy in shared
// memory. out[4 * lane + m] = register m of the lane.
void ldmatrix_probe(const uint16_t* src, const int* perm, uint32_t* out, int matrices, bool transpose);
// mma.sync m16n8k16: a (16x16 row-major) and b (16x8 row-major, i.e. K x N) as raw f16 or bf16 bits,
// c and d 16x8 row-major floats. Each lane builds its fragments from the PTX ISA layout.
void mma_probe(const uint16_t* a, const uint16_t* b, const float* c, float* d, bool bf16);
// mma.sync m16n8k8 TF32: a 16x8, b 8x8, c and d 16x8 floats, row-major.
void mma_tf32_probe(const float* a, const float* b, const float* c, float* d);
// cp.async: 20 floats of shared memory snapshots (layout in ptx.cu); src holds 8 floats, the second
// copy is a 16-byte zfill with `src_bytes` valid bytes.
void cp_async_probe(const float* src, float* out, int src_bytes);
// C[M x N] = A[M x K] * B[K x N] (row-major __half, float out) with cp.async double buffering,
// ldmatrix and mma.sync. K and N must be multiples of 8 (16-byte rows).
void ptx_gemm(const __half* a, const __half* b, float* c, int m, int n, int k);

}  // namespace simtest

namespace simtest {

// counter_kernels.cu: kernels with performance counters known in closed form (test_counters.cpp).
void copy_floats(const float* x, float* y, int n, int threads);  // y[i] = x[i]
void strided_read(const float* x, float* y, int n, int stride);  // y[i] = x[stride i], blocks of 128
void copy_float4(const float* x, float* y, int n4);              // n4 float4s, blocks of 128
void copy_float2(const float* x, float* y, int n2);              // n2 float2s, blocks of 128
void transpose_padded(const float* in, float* out, int rows, int cols);  // out = in^T, padded 32 x 33 tiles
void shared_patterns(float* y, int pattern);                     // one warp; patterns in the .cu file
void divergent_load(const float* x, float* y, int threads);      // lanes 0-7 of each warp copy
void barriers(int* out, int blocks, int threads, int times);     // `times` __syncthreads per block
void fma_loop(const float* x, float* y, int threads, int k);     // k __fmaf_rn per thread
void scaled_copy(const float* x, float* y, int n, int scale);   // y = scale * x, scale 2 or 3: two template
                                                                 // instances, one SEG_LAUNCH line

}  // namespace simtest
