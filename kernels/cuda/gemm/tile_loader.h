// Tensor-core GEMM: the global -> shared copy of one operand tile per pipeline stage.
//
// The tile has Tile::kChunks 16-byte chunks per row; thread t copies chunks t, t + THREADS, ...
// (consecutive threads take consecutive chunks of a row, so a warp reads whole 32-byte sectors:
// 64 contiguous bytes per row of a K-contiguous 32-element tile, 256 bytes per row of a 128-wide one).
// Two paths, chosen per launch by the launcher (a uniform branch):
//   vectorised   cp.async 16 bytes with zero-fill (src-size = the valid bytes, 0 outside the
//                operand), asynchronous: the data lands at the pipeline's cp.async.wait_group;
//   element-wise for operands that are not 16-byte aligned (a leading dimension that is not a
//                multiple of 8 halves, C = 3, a channel slice at an odd offset): each element read
//                on its own (0 outside), the chunk assembled in registers and stored with one
//                16-byte shared store. Synchronous, so it needs no wait, only the pipeline's barrier.
// Which chunks a thread copies never changes with K, so the per-chunk address work that depends
// only on the fixed coordinate (operand_source.h) is done once, in init().
#pragma once

#include <cstdint>

#include "kernels/cuda/gemm/operand_source.h"
#include "kernels/cuda/gemm/tile_config.h"
#include "kernels/cuda/gemm/vector_access.h"
#include "kernels/cuda/ptx.h"

namespace seg::cuda::tc {

template <class T, Major Mj, class Tile, int THREADS, class Source>
struct TileLoader {
  static constexpr int kChunk = Element<T>::kChunk;
  static constexpr int kRows = Tile::kElements / Tile::kStride;
  static constexpr int kTotal = kRows * Tile::kChunks;
  static constexpr int kIters = (kTotal + THREADS - 1) / THREADS;
  static constexpr bool kExact = kTotal % THREADS == 0;  // every thread has kIters chunks
  using Bits = typename Element<T>::Bits;

  typename Source::Slot slot[kIters];
  int moving_offset[kIters];  // the chunk's K offset inside the tile
  int smem_offset[kIters];    // element offset inside the stage's tile (-1: no chunk for this thread)

  // mn0: the tile's first m (A) or n (B).
  __device__ void init(const Source& src, int mn0, int tid) {
    SEG_UNROLL
    for (int i = 0; i < kIters; ++i) {
      const int q = tid + i * THREADS;
      if (q >= kTotal) {
        smem_offset[i] = -1;
        slot[i] = src.slot(0);
        moving_offset[i] = 0;
        continue;
      }
      const int r = q / Tile::kChunks, c = (q % Tile::kChunks) * kChunk;
      smem_offset[i] = Tile::offset(r, c);
      if constexpr (Mj == Major::k) {
        slot[i] = src.slot(mn0 + r);
        moving_offset[i] = c;
      } else {
        slot[i] = src.slot(mn0 + c);
        moving_offset[i] = r;
      }
    }
  }

  // Copies the tile whose K range starts at k0 into `tile` (one stage's buffer).
  __device__ void load(const Source& src, T* tile, int k0, bool vectorised) const {
    SEG_UNROLL
    for (int i = 0; i < kIters; ++i) {
      if (!kExact && smem_offset[i] < 0) continue;  // known at compile time when the chunks divide evenly
      T* dst = tile + smem_offset[i];
      const int moving = k0 + moving_offset[i];
      if (vectorised) {
        const T* p;
        const int n = src.chunk(slot[i], moving, p);
        seg::ptx::cp_async_16_zfill(dst, p, n * static_cast<int>(sizeof(T)));
      } else {
        Bits v[kChunk];
        SEG_UNROLL
        for (int e = 0; e < kChunk; ++e) v[e] = src.element(slot[i], moving, e);
        uint32_t w[4];
        if constexpr (kChunk == 8) {
          SEG_UNROLL
          for (int j = 0; j < 4; ++j) w[j] = static_cast<uint32_t>(v[2 * j]) | (static_cast<uint32_t>(v[2 * j + 1]) << 16);
        } else {
          SEG_UNROLL
          for (int j = 0; j < 4; ++j) w[j] = v[j];
        }
        store_vec(dst, make_uint4(w[0], w[1], w[2], w[3]));
      }
    }
  }
};

}  // namespace seg::cuda::tc
