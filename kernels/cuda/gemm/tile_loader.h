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
// Which chunks a thread copies never changes with K, so the address work that depends only on the
// fixed coordinate (a source's slot, operand_source.h) is done once, in init(), and the K position
// (its cursor) moves one tile per load() with adds and compares instead of divisions.
#pragma once

#include <mma.h>

#include <cstdint>
#include <type_traits>

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
  static constexpr int kDepth = Mj == Major::k ? Tile::kChunks * kChunk : kRows;  // the tile's K extent (BK)
  using Bits = typename Element<T>::Bits;
  using Slot = typename Source::Slot;
  using Cursor = typename Source::Cursor;

  // When THREADS is a multiple of the chunks per row, a thread's chunks i = 0, 1, ... lie in one
  // column of chunks, kRowStep rows apart. Then they share one coordinate: the K offset of a
  // Major::k tile (one cursor serves them all), the m or n of a Major::mn tile (one slot does), and,
  // when kRowStep keeps the swizzle (a multiple of kRowPeriod), their shared-memory offsets differ
  // by constants (one offset, moved). Held once instead of per chunk: fewer registers, and the
  // cursor's per-tile work is done once for all of the thread's chunks.
  static constexpr bool kOneColumn = THREADS % Tile::kChunks == 0;
  static constexpr int kRowStep = kOneColumn ? THREADS / Tile::kChunks : 0;
  static constexpr int kSlots = kOneColumn && Mj == Major::mn ? 1 : kIters;
  static constexpr int kCursors = kOneColumn && Mj == Major::k ? 1 : kIters;
  static constexpr bool kOneOffset = kOneColumn && kExact && kRowStep % Tile::kRowPeriod == 0;
  static constexpr int kOffsets = kOneOffset ? 1 : kIters;

  Slot slot[kSlots];
  Cursor cursor[kCursors];  // the K position of the next tile this thread copies, per distinct K offset
  int smem_offset[kOffsets];  // element offset inside a stage's tile (-1: no chunk for this thread)

  // mn0: the tile's first m (A) or n (B); k0: the first K tile's first k (a split's start).
  __device__ void init(const Source& src, int mn0, int k0, int tid) {
    SEG_UNROLL
    for (int i = 0; i < kIters; ++i) {
      const int q = tid + i * THREADS;
      const bool has = kExact || q < kTotal;
      const int r = has ? q / Tile::kChunks : 0, c = has ? (q % Tile::kChunks) * kChunk : 0;
      const int fixed = Mj == Major::k ? r : c, moving = Mj == Major::k ? c : r;
      if (i < kSlots) slot[i] = src.slot(mn0 + fixed);
      if (i < kCursors) cursor[i] = src.cursor(k0 + moving);
      if (i < kOffsets) smem_offset[i] = has ? Tile::offset(r, c) : -1;
    }
  }

  // Copies the next K tile into `tile` (one stage's buffer), then moves the cursors one tile on:
  // the pipeline calls it once per K tile, in K order (block_tile.h). kInsideK: the caller knows
  // that this K tile lies wholly inside K, so a source that has chunk_inside_k (only the fixed
  // coordinate's bound left to check) is asked through it. A template argument, not a runtime
  // flag, so that a main loop's part that copies only such tiles holds only that form.
  template <bool kInsideK = false>
  __device__ void load(const Source& src, T* tile, bool vectorised) {
    SEG_UNROLL
    for (int i = 0; i < kIters; ++i) {
      if (!kExact && smem_offset[i] < 0) continue;  // known at compile time when the chunks divide evenly
      T* dst = destination(tile, i);
      if (vectorised) {
        const T* p;
        int n;
        if constexpr (kInsideK && kHasInsideK)
          n = src.chunk_inside_k(slot_of(i), cursor_of(i), p);
        else
          n = src.chunk(slot_of(i), cursor_of(i), p);
        seg::ptx::cp_async_16_zfill(dst, p, n * static_cast<int>(sizeof(T)));
      } else {
        const int k = src.k_of(cursor_of(i));
        Bits v[kChunk];
        SEG_UNROLL
        for (int e = 0; e < kChunk; ++e) v[e] = src.element(slot_of(i), k, e);
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
    SEG_UNROLL
    for (int j = 0; j < kCursors; ++j) src.template advance<kDepth>(cursor[j]);
  }

  // TF32: rounds the chunks this thread copied into `tile` (one stage's buffer) to TF32 in place
  // (round to nearest, cvt.rna, as cuBLAS and PyTorch do; the tensor cores then use only the top 19
  // bits of each float). Called between this thread's wait for that tile and the barrier that
  // hands it to the warps: its own copies have landed, and no other thread reads them yet. Each
  // element is rounded once per K tile instead of once per fragment load by every warp that reads
  // it (WARPS_N warps read an A element, WARPS_M a B element).
  __device__ void round_own_tf32(T* tile) const
    requires std::is_same_v<T, float>
  {
    SEG_UNROLL
    for (int i = 0; i < kIters; ++i) {
      if (!kExact && smem_offset[i] < 0) continue;
      T* dst = destination(tile, i);
      float4 v = load_vec<float4>(dst);
      v.x = nvcuda::wmma::__float_to_tf32(v.x);
      v.y = nvcuda::wmma::__float_to_tf32(v.y);
      v.z = nvcuda::wmma::__float_to_tf32(v.z);
      v.w = nvcuda::wmma::__float_to_tf32(v.w);
      store_vec(dst, v);
    }
  }

  // Whether the source has the inside-K form of chunk() (MatrixSource does, with pointer slots or as
  // a Major::k operand; the im2col sources check K with one compare next to their image bounds).
  static constexpr bool kHasInsideK = requires(const Source& s, const Slot& sl, const Cursor& c, const T*& p) {
    s.chunk_inside_k(sl, c, p);
  };

 private:
  __device__ const Slot& slot_of(int i) const { return slot[kSlots == 1 ? 0 : i]; }
  __device__ const Cursor& cursor_of(int i) const { return cursor[kCursors == 1 ? 0 : i]; }
  __device__ T* destination(T* tile, int i) const {
    return tile + (kOneOffset ? Tile::moved(smem_offset[0], i * kRowStep, 0) : smem_offset[i]);
  }
};

}  // namespace seg::cuda::tc
