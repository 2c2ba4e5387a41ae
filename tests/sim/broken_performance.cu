// Broken kernels: correct results, wasted hardware. Nothing faults; the performance counters
// (kernels/sim/counters.h, SEG_SIM_PROFILE=1) show the waste, and docs/cuda-simulator.md
// ("Counters") derives the numbers.
#include "kernels/cuda/launch.h"
#include "tests/sim/broken_kernels.h"

namespace {

constexpr int kTile = 32, kRows = 8;

// BUG (performance): a 32 x 32 tile without padding. The writes go along rows (lane = column:
// 32 banks, conflict-free), but the reads go down a column: lane l reads tile[l][c], word
// 32 l + c, which is in bank c for every lane: 32 distinct words in one bank, 32 wavefronts, 31
// bank conflicts per request. `tile[kTile][kTile + 1]` spreads the column over all banks.
__global__ void transpose_bank_conflicts_kernel(const float* in, float* out, int rows, int cols) {
  __shared__ float tile[kTile][kTile];
  const int c0 = blockIdx.x * kTile, r0 = blockIdx.y * kTile;
  for (int j = threadIdx.y; j < kTile; j += kRows) {
    const int r = r0 + j, c = c0 + threadIdx.x;
    if (r < rows && c < cols) tile[j][threadIdx.x] = in[r * cols + c];
  }
  __syncthreads();
  for (int j = threadIdx.y; j < kTile; j += kRows) {
    const int r = c0 + j, c = r0 + threadIdx.x;  // out is cols x rows
    if (r < cols && c < rows) out[r * rows + c] = tile[threadIdx.x][j];
  }
}

// BUG (performance): one thread per row of a row-major matrix. In each iteration the 32 lanes of
// a warp read 32 different rows, `cols` floats apart: 32 sectors per request where 4 would do.
// (A warp per row, or reading the matrix transposed, makes the loads coalesced.)
__global__ void row_sums_uncoalesced_kernel(const float* a, float* sums, int rows, int cols) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  float s = 0.0f;
  for (int j = 0; j < cols; ++j) s += a[row * cols + j];
  sums[row] = s;
}

}  // namespace

namespace simtest::broken {

void transpose_bank_conflicts(const float* in, float* out, int rows, int cols) {
  const dim3 grid((cols + kTile - 1) / kTile, (rows + kTile - 1) / kTile);
  SEG_LAUNCH(transpose_bank_conflicts_kernel, grid, dim3(kTile, kRows), 0, 0, in, out, rows, cols);
}
void row_sums_uncoalesced(const float* a, float* sums, int rows, int cols) {
  SEG_LAUNCH(row_sums_uncoalesced_kernel, (rows + 127) / 128, 128, 0, 0, a, sums, rows, cols);
}

}  // namespace simtest::broken
