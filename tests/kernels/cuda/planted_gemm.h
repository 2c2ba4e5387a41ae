// A tensor-core GEMM with a planted bug (planted_gemm.cu): C[M,N] = A[M,K] * B[K,N], f16 in, f32
// out, row-major, ld = K, N, N; A and B 16-byte aligned with K, N multiples of 8.
#pragma once

#include "kernels/common/half.h"

namespace seg::test {

enum class PlantedBug {
  none,                   // the product kernel
  no_barrier_after_wait,  // reads a stage before the other threads' cp.async copies have landed
  wait_one_group_short,   // cp.async.wait_group STAGES-1: computes on a tile still in flight
  swizzle_mismatch,       // copies swizzle the tile, fragment loads read it as plain
};

// The main loop the kernel runs (block_tile.h's MainLoop): the bugs are planted in either.
enum class PlantedLoop { barrier_first, prefetch_fragments };

void planted_gemm(PlantedBug bug, PlantedLoop loop, int M, int N, int K, const seg::f16* A, const seg::f16* B,
                  float* C);

}  // namespace seg::test
