// Good kernel of the simulator suite: a tensor-core GEMM written with nvcuda::wmma.
//
// C[M x N] = alpha * A[M x K] * B[K x N], row-major, __half inputs, float accumulation and output.
// 4 warps (2 x 2) per 64 x 64 block tile, each warp a 32 x 32 tile of 2 x 2 fragments, K steps of 32.
// The tiles in shared memory are padded (row strides of 40 and 72 halves) as bank-conflict-free
// kernels do; the strides stay multiples of 16 bytes and fragment pointers 32-byte aligned, as WMMA
// requires. Ragged edges: loads zero-fill outside the matrices, and the epilogue goes through
// shared memory (dynamic), where each element's position is known, before the bounds-checked
// store (DESIGN decision 3: never through the unspecified fragment layout).
#include <cuda_fp16.h>
#include <mma.h>

#include "kernels/cuda/dynamic_smem.h"
#include "kernels/cuda/launch.h"
#include "tests/sim/sim_test_kernels.h"

using namespace nvcuda;

namespace {

constexpr int kTile = 64, kStep = 32, kPadA = 40, kPadB = 72, kPadC = 68;

__global__ void wmma_gemm_kernel(const __half* a, const __half* b, float* c, int m, int n, int k, float alpha) {
  __shared__ __align__(32) __half as[kTile][kPadA];
  __shared__ __align__(32) __half bs[kStep][kPadB];
  float* cs = seg::dynamic_smem<float>();  // kTile x kPadC floats
  const int warp = threadIdx.x / 32;
  const int warp_row = warp / 2, warp_col = warp % 2;
  const int row0 = blockIdx.y * kTile, col0 = blockIdx.x * kTile;

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

  for (int k0 = 0; k0 < k; k0 += kStep) {
    for (int e = threadIdx.x; e < kTile * kStep; e += blockDim.x) {
      const int r = e / kStep, kk = e % kStep;
      as[r][kk] = (row0 + r < m && k0 + kk < k) ? a[(row0 + r) * k + k0 + kk] : __float2half(0.0f);
    }
    for (int e = threadIdx.x; e < kStep * kTile; e += blockDim.x) {
      const int kk = e / kTile, cc = e % kTile;
      bs[kk][cc] = (k0 + kk < k && col0 + cc < n) ? b[(k0 + kk) * n + col0 + cc] : __float2half(0.0f);
    }
    __syncthreads();
    for (int kk = 0; kk < kStep; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa[2];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> fb[2];
      for (int i = 0; i < 2; ++i) wmma::load_matrix_sync(fa[i], &as[warp_row * 32 + i * 16][kk], kPadA);
      for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(fb[j], &bs[kk][warp_col * 32 + j * 16], kPadB);
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
    }
    __syncthreads();
  }

  // Element-wise work that is the same for every element may use the fragment directly.
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      for (int e = 0; e < acc[i][j].num_elements; ++e) acc[i][j].x[e] *= alpha;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      wmma::store_matrix_sync(&cs[(warp_row * 32 + i * 16) * kPadC + warp_col * 32 + j * 16], acc[i][j], kPadC,
                              wmma::mem_row_major);
  __syncthreads();
  for (int e = threadIdx.x; e < kTile * kTile; e += blockDim.x) {
    const int r = e / kTile, cc = e % kTile;
    if (row0 + r < m && col0 + cc < n) c[(row0 + r) * n + col0 + cc] = cs[r * kPadC + cc];
  }
}

}  // namespace

namespace simtest {

void wmma_gemm(const __half* a, const __half* b, float* c, int m, int n, int k, float alpha) {
  const dim3 grid((n + kTile - 1) / kTile, (m + kTile - 1) / kTile);
  SEG_LAUNCH(wmma_gemm_kernel, grid, 128, kTile * kPadC * sizeof(float), 0, a, b, c, m, n, k, alpha);
}

}  // namespace simtest
