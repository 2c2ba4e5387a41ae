// One-warp WMMA kernels for each fragment shape, element type, layout and accumulator type the
// simulator supports: D = A * B + C for a single tile, with the layouts spelled out per kernel.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

#include "kernels/cuda/launch.h"
#include "tests/sim/sim_test_kernels.h"

using namespace nvcuda;

namespace {

// m16n16k16, __half: A and B column-major in memory; C loaded and D stored column-major.
__global__ void wmma_half_col_major_kernel(const __half* a, const __half* b, const float* c, float* d) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::col_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
  wmma::load_matrix_sync(fa, a, 16);
  wmma::load_matrix_sync(fb, b, 16);
  wmma::load_matrix_sync(fc, c, 16, wmma::mem_col_major);
  wmma::mma_sync(fc, fa, fb, fc);
  wmma::store_matrix_sync(d, fc, 16, wmma::mem_col_major);
}

// m32n8k16, __nv_bfloat16, row-major everywhere, float accumulator.
__global__ void wmma_bf16_m32n8k16_kernel(const __nv_bfloat16* a, const __nv_bfloat16* b, const float* c, float* d) {
  wmma::fragment<wmma::matrix_a, 32, 8, 16, __nv_bfloat16, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 32, 8, 16, __nv_bfloat16, wmma::row_major> fb;
  wmma::fragment<wmma::accumulator, 32, 8, 16, float> fc;
  wmma::load_matrix_sync(fa, a, 16);
  wmma::load_matrix_sync(fb, b, 8);
  wmma::load_matrix_sync(fc, c, 8, wmma::mem_row_major);
  wmma::mma_sync(fc, fa, fb, fc);
  wmma::store_matrix_sync(d, fc, 8, wmma::mem_row_major);
}

// m8n32k16, __half, A row-major, B column-major, __half accumulator.
__global__ void wmma_half_m8n32k16_kernel(const __half* a, const __half* b, const __half* c, __half* d) {
  wmma::fragment<wmma::matrix_a, 8, 32, 16, __half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 8, 32, 16, __half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 8, 32, 16, __half> fc;
  wmma::load_matrix_sync(fa, a, 16);
  wmma::load_matrix_sync(fb, b, 16);
  wmma::load_matrix_sync(fc, c, 32, wmma::mem_row_major);
  wmma::mma_sync(fc, fa, fb, fc);
  wmma::store_matrix_sync(d, fc, 32, wmma::mem_row_major);
}

// m16n16k8, tf32 (float storage), row-major, float accumulator.
__global__ void wmma_tf32_kernel(const float* a, const float* b, const float* c, float* d) {
  wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 8, float> fc;
  wmma::load_matrix_sync(fa, a, 8);
  wmma::load_matrix_sync(fb, b, 16);
  for (int i = 0; i < fa.num_elements; ++i) fa.x[i] = wmma::__float_to_tf32(fa.x[i]);
  for (int i = 0; i < fb.num_elements; ++i) fb.x[i] = wmma::__float_to_tf32(fb.x[i]);
  wmma::load_matrix_sync(fc, c, 16, wmma::mem_row_major);
  wmma::mma_sync(fc, fa, fb, fc);
  wmma::store_matrix_sync(d, fc, 16, wmma::mem_row_major);
}

}  // namespace

namespace simtest {

void wmma_half_col_major(const __half* a, const __half* b, const float* c, float* d) {
  SEG_LAUNCH(wmma_half_col_major_kernel, 1, 32, 0, 0, a, b, c, d);
}
void wmma_bf16_m32n8k16(const __nv_bfloat16* a, const __nv_bfloat16* b, const float* c, float* d) {
  SEG_LAUNCH(wmma_bf16_m32n8k16_kernel, 1, 32, 0, 0, a, b, c, d);
}
void wmma_half_m8n32k16(const __half* a, const __half* b, const __half* c, __half* d) {
  SEG_LAUNCH(wmma_half_m8n32k16_kernel, 1, 32, 0, 0, a, b, c, d);
}
void wmma_tf32(const float* a, const float* b, const float* c, float* d) { SEG_LAUNCH(wmma_tf32_kernel, 1, 32, 0, 0, a, b, c, d); }

}  // namespace simtest
