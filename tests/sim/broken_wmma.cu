// Broken kernels: WMMA code that only works on the GPU generation it was tuned for, or not at all.
#include <cuda_fp16.h>
#include <mma.h>

#include "kernels/cuda/launch.h"
#include "tests/sim/broken_kernels.h"

using namespace nvcuda;

namespace {

using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major>;
using FragB = wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major>;
using FragC = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

// BUG: adds a bias by column computed from the lane and the element index, i.e. it assumes one
// GPU's fragment layout (the element-to-lane mapping is unspecified).
__global__ void wmma_bias_by_lane_kernel(const __half* a, const __half* b, const float* bias, float* c) {
  const int lane = threadIdx.x % 32;
  FragA fa;
  FragB fb;
  FragC fc;
  wmma::fill_fragment(fc, 0.0f);
  wmma::load_matrix_sync(fa, a, 16);
  wmma::load_matrix_sync(fb, b, 16);
  wmma::mma_sync(fc, fa, fb, fc);
  for (int i = 0; i < fc.num_elements; ++i) fc.x[i] += bias[(2 * (lane % 4) + (i % 2) + 8 * ((i / 4) % 2)) % 16];
  wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}

// BUG: lane 0 patches one element of its A fragment.
__global__ void wmma_lane_dependent_fragment_kernel(const __half* a, const __half* b, float* c) {
  FragA fa;
  FragB fb;
  FragC fc;
  wmma::fill_fragment(fc, 0.0f);
  wmma::load_matrix_sync(fa, a, 16);
  wmma::load_matrix_sync(fb, b, 16);
  if (threadIdx.x == 0) fa.x[0] = __float2half(5.0f);
  wmma::mma_sync(fc, fa, fb, fc);
  wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}

// BUG: a + 8 halves is only 16-byte aligned; WMMA needs 32 bytes.
__global__ void wmma_misaligned_pointer_kernel(const __half* a, const __half* b, float* c) {
  FragA fa;
  FragB fb;
  FragC fc;
  wmma::fill_fragment(fc, 0.0f);
  wmma::load_matrix_sync(fa, a + 8, 16);
  wmma::load_matrix_sync(fb, b, 16);
  wmma::mma_sync(fc, fa, fb, fc);
  wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}

// BUG: a leading dimension of 12 halves (24 bytes) is not a multiple of 16 bytes.
__global__ void wmma_bad_ldm_kernel(const __half* a, const __half* b, float* c) {
  FragA fa;
  FragB fb;
  FragC fc;
  wmma::fill_fragment(fc, 0.0f);
  wmma::load_matrix_sync(fa, a, 12);
  wmma::load_matrix_sync(fb, b, 16);
  wmma::mma_sync(fc, fa, fb, fc);
  wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}

// BUG: only half of the warp takes part in the WMMA operations.
__global__ void wmma_divergent_kernel(const __half* a, const __half* b, float* c) {
  if (threadIdx.x % 32 >= 16) return;
  FragA fa;
  FragB fb;
  FragC fc;
  wmma::fill_fragment(fc, 0.0f);
  wmma::load_matrix_sync(fa, a, 16);
  wmma::load_matrix_sync(fb, b, 16);
  wmma::mma_sync(fc, fa, fb, fc);
  wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}

}  // namespace

namespace simtest::broken {

void wmma_bias_by_lane(const __half* a, const __half* b, const float* bias, float* c) {
  SEG_LAUNCH(wmma_bias_by_lane_kernel, 1, 32, 0, 0, a, b, bias, c);
}
void wmma_lane_dependent_fragment(const __half* a, const __half* b, float* c) {
  SEG_LAUNCH(wmma_lane_dependent_fragment_kernel, 1, 32, 0, 0, a, b, c);
}
void wmma_misaligned_pointer(const __half* a, const __half* b, float* c) {
  SEG_LAUNCH(wmma_misaligned_pointer_kernel, 1, 32, 0, 0, a, b, c);
}
void wmma_bad_ldm(const __half* a, const __half* b, float* c) { SEG_LAUNCH(wmma_bad_ldm_kernel, 1, 32, 0, 0, a, b, c); }
void wmma_divergent(const __half* a, const __half* b, float* c) {
  SEG_LAUNCH(wmma_divergent_kernel, 1, 32, 0, 0, a, b, c);
}

}  // namespace simtest::broken
