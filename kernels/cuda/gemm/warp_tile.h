// Tensor-core GEMM, level 2 (warp): one warp's WM x WN accumulator tile, fed from one pipeline
// stage in shared memory (BK deep), and its hand-over to the epilogue's shared-memory tile.
//
//   MmaSyncWarpTile  ldmatrix.x4 + mma.sync m16n8k16: (WM/16) x (WN/8) accumulators of 16x8,
//                    4 floats per lane each. Per 16-deep k step: WM/16 A fragments (one ldmatrix.x4
//                    each), WN/16 ldmatrix.x4 for pairs of B fragments, (WM/16)*(WN/8) mma.sync.
//                    The accumulator layout is the PTX ISA's (mma_fragment.h), so store() writes
//                    each lane's pairs straight to their (row, column) in shared memory.
//   MmaSyncTf32WarpTile  mma.sync m16n8k8 on TF32 (float in shared memory): the same accumulators;
//                    K-contiguous operands loaded with ldmatrix.x4 as above, MN-contiguous ones one
//                    float per lane at a lane base plus constants (below).
//   WmmaWarpTile     nvcuda::wmma 16x16 fragments (k 16 for halves, k 8 for TF32): (WM/16) x (WN/16)
//                    accumulators. Fragments load from a plain strided tile (load_matrix_sync needs
//                    a 32-byte aligned pointer and a leading dimension of whole 16-byte units), so
//                    the tile may be padded but not swizzled. store() uses store_matrix_sync: the
//                    fragment layout stays the library's business.
// Both expose Fragments, load_fragments (one k step of kStep from shared memory into a Fragments)
// and mma (those fragments into the accumulators). mma_stage<BK>(warp, As, Bs, wm0, wn0, lane),
// below, multiplies one whole stage with them, (wm0, wn0) being the warp tile's corner in the block
// tile; a block loop may call the two halves itself to load the next k step's fragments while this
// one's MMAs run (block_tile.h, MainLoop::prefetch_fragments).
#pragma once

#include <mma.h>

#include <cstdint>
#include <type_traits>

#include "kernels/cuda/gemm/mma_fragment.h"
#include "kernels/cuda/gemm/tile_config.h"
#include "kernels/cuda/gemm/vector_access.h"

namespace seg::cuda::tc {

// The accumulators of the mma.sync warp tiles (m16n8k16 and TF32 m16n8k8 share the 16x8 C layout,
// mma_fragment.h): MI x NI tiles of 16x8, four floats per lane each, with their clearing and their
// hand-over to the epilogue's shared-memory tile.
template <int MI_, int NI_>
struct MmaAccumulators {
  static constexpr int MI = MI_, NI = NI_;
  // Row padding (floats) of the epilogue's staging tile: each half-warp's float2 stores (rows g,
  // columns 2t) then cover all 32 banks once.
  static constexpr int kStagePad = 8;
  float acc[MI][NI][4];

  __device__ void clear() {
    SEG_UNROLL
    for (int i = 0; i < MI; ++i)
      SEG_UNROLL
      for (int j = 0; j < NI; ++j)
        SEG_UNROLL
        for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;
  }

  // Writes the accumulators to cs (leading dimension ldc floats), row 0 of cs being row wm0.
  __device__ void store(float* cs, int ldc, int wn0, int lane) const {
    const int g = lane / 4, t = lane % 4;
    SEG_UNROLL
    for (int i = 0; i < MI; ++i)
      SEG_UNROLL
      for (int j = 0; j < NI; ++j) {
        const int row = 16 * i + g, col = wn0 + 8 * j + 2 * t;
        store_vec(cs + row * ldc + col, make_float2(acc[i][j][0], acc[i][j][1]));
        store_vec(cs + (row + 8) * ldc + col, make_float2(acc[i][j][2], acc[i][j][3]));
      }
  }
};

template <class T, class Shape, Major MA, Major MB, class TileA, class TileB>
struct MmaSyncWarpTile : MmaAccumulators<Shape::WM / 16, Shape::WN / 8> {
  using Acc = MmaAccumulators<Shape::WM / 16, Shape::WN / 8>;
  using Acc::acc, Acc::MI, Acc::NI;
  static constexpr int kStep = 16;  // K of one mma.sync
  static_assert(NI % 2 == 0, "B fragments are loaded in pairs of n8 tiles");
  static_assert(Shape::BK % 16 == 0, "mma.sync m16n8k16 steps through K by 16");

  // One k step's operands in registers: MI A fragments and NI B fragments.
  struct Fragments {
    uint32_t a[MI][4], b[NI][2];
  };

  // The fragment address helpers' conditions (mma_fragment.h, SmemTile::moved): fragments and k
  // steps move by 16 rows, which must keep a row's swizzle; and along the contiguous dimension a
  // fragment's 16 * i must not share bits with the warp corner, a multiple of a power-of-two WM/WN.
  static_assert(16 % TileA::kRowPeriod == 0 && 16 % TileB::kRowPeriod == 0, "a 16-row move keeps the swizzle");
  static_assert((Shape::WM & (Shape::WM - 1)) == 0 && (Shape::WN & (Shape::WN - 1)) == 0,
                "warp tiles are powers of two: corner + 16 * i == corner ^ 16 * i");

  __device__ static void load_fragments(Fragments& f, const T* As, const T* Bs, int wm0, int wn0, int kk, int lane) {
    const int a_base = a_fragment_base<MA, TileA>(wm0, lane), b_base = b_fragment_base<MB, TileB>(wn0, lane);
    SEG_UNROLL
    for (int i = 0; i < MI; ++i) load_a_fragment<MA, TileA>(f.a[i], As, a_base, 16 * i, kk);
    SEG_UNROLL
    for (int j = 0; j < NI; j += 2) load_b_fragments<MB, TileB>(f.b[j], f.b[j + 1], Bs, b_base, 8 * j, kk);
  }

  __device__ void mma(const Fragments& f) {
    SEG_UNROLL
    for (int i = 0; i < MI; ++i)
      SEG_UNROLL
      for (int j = 0; j < NI; ++j) mma_16816<T>(acc[i][j], f.a[i], f.b[j]);
  }

};

// TF32 on mma.sync m16n8k8: (WM/16) x (WN/8) accumulators of 16x8, 4 floats per lane each, as
// MmaSyncWarpTile's (MmaAccumulators: same layout, same store()). The fragments hold one float per
// register (PTX ISA, m16n8k8 .tf32: a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4); b0 (k t,
// n g), b1 (k t+4, n g)); the values were rounded to TF32 in shared memory by the loader
// (TileLoader::round_own_tf32). How they are loaded depends on the operand's orientation:
//   K-contiguous (Major::k): ldmatrix.x4, as for halves (mma_fragment.h: each 16-bit "pair" it
//     delivers is one float), one per A fragment and one per pair of B fragments.
//   MN-contiguous (Major::mn): one 32-bit shared load per element at a lane base plus a constant
//     (ldmatrix.trans would swap halves of floats), no per-element address arithmetic (WMMA's TF32
//     load computes one per element).
// Per 8-deep k step: WM/16 ldmatrix.x4 (K-contiguous A) or WM/16 * 4 loads (MN-contiguous), WN/16
// ldmatrix.x4 or WN/8 * 2 loads for B, and (WM/16) * (WN/8) mma.sync. The tiles are
// SmemKind::skewed (tile_config.h): conflict-free for both kinds of load.
// moved() needs each move's column part disjoint from the base's column bits: the lane's column is
// t < 4, or chunk 0 or 1 (0 or 4) for ldmatrix, and the moves are multiples of 8 (k steps, m, n)
// added to a warp corner that is a multiple of the power-of-two warp tile, as for MmaSyncWarpTile.
template <class T, class Shape, Major MA, Major MB, class TileA, class TileB>
struct MmaSyncTf32WarpTile : MmaAccumulators<Shape::WM / 16, Shape::WN / 8> {
  using Acc = MmaAccumulators<Shape::WM / 16, Shape::WN / 8>;
  using Acc::acc, Acc::MI, Acc::NI;
  static_assert(std::is_same_v<T, float>, "TF32 mma.sync multiplies float (as TF32)");
  static constexpr int kStep = 8;  // K of one mma.sync m16n8k8
  static_assert(Shape::BK % 8 == 0, "mma.sync m16n8k8 steps through K by 8");
  // Every element's offset is the lane's base moved by whole rows (multiples of 8) and whole chunks
  // (multiples of 4 columns, disjoint from the lane's column t < 4): SmemTile::moved's conditions.
  static_assert(8 % TileA::kRowPeriod == 0 && 8 % TileB::kRowPeriod == 0, "an 8-row move keeps the swizzle");
  static_assert(MB == Major::mn || NI % 2 == 0, "K-contiguous B fragments are loaded in pairs of n8 tiles");
  static_assert((Shape::WM & (Shape::WM - 1)) == 0 && (Shape::WN & (Shape::WN - 1)) == 0,
                "warp tiles are powers of two: corner + 16 * i == corner ^ 16 * i");

  struct Fragments {
    uint32_t a[MI][4], b[NI][2];
  };

  __device__ static void load_fragments(Fragments& f, const T* As, const T* Bs, int wm0, int wn0, int kk, int lane) {
    const int g = lane / 4, t = lane % 4;
    if constexpr (MA == Major::k) {
      const int a = a_fragment_base<Major::k, TileA>(wm0, lane);
      SEG_UNROLL
      for (int i = 0; i < MI; ++i) load_a_fragment<Major::k, TileA>(f.a[i], As, a, 16 * i, kk);
    } else {
      // The lane's element (k t, m g) of A, stored [k][m]; the others are moves away: k rows
      // (kk, +4 for a2, a3) and m columns (16 * i, +8 for a1, a3) of the tile (SmemTile::moved).
      const int a = TileA::offset(t, wm0 + g);
      SEG_UNROLL
      for (int i = 0; i < MI; ++i)
        SEG_UNROLL
        for (int r = 0; r < 4; ++r)
          f.a[i][r] = __float_as_uint(As[TileA::moved(a, kk + (r >= 2 ? 4 : 0), 16 * i + (r % 2 ? 8 : 0))]);
    }
    if constexpr (MB == Major::k) {
      const int b = b_fragment_base<Major::k, TileB>(wn0, lane);
      SEG_UNROLL
      for (int j = 0; j < NI; j += 2) load_b_fragments<Major::k, TileB>(f.b[j], f.b[j + 1], Bs, b, 8 * j, kk);
    } else {
      // The lane's element (k t, n g) of B, stored [k][n]: moves of k rows (kk, +4 for b1) and n
      // columns (8 * j).
      const int b = TileB::offset(t, wn0 + g);
      SEG_UNROLL
      for (int j = 0; j < NI; ++j)
        SEG_UNROLL
        for (int r = 0; r < 2; ++r) f.b[j][r] = __float_as_uint(Bs[TileB::moved(b, kk + (r ? 4 : 0), 8 * j)]);
    }
  }

  __device__ void mma(const Fragments& f) {
    SEG_UNROLL
    for (int i = 0; i < MI; ++i)
      SEG_UNROLL
      for (int j = 0; j < NI; ++j) seg::ptx::mma_m16n8k8_tf32(acc[i][j], f.a[i], f.b[j], acc[i][j]);
  }

};

template <class T, class Shape, Major MA, Major MB, class TileA, class TileB>
struct WmmaWarpTile {
  static constexpr int MI = Shape::WM / 16, NI = Shape::WN / 16;
  static constexpr int kStep = WmmaTraits<T>::K;  // K of one WMMA
  static_assert(Shape::BK % kStep == 0, "the K tile is whole WMMA steps");
  // store_matrix_sync writes 16-byte row pieces; a row stride of BN + 4 floats (an odd number of
  // 16-byte units) puts 8 consecutive rows in 8 different bank groups.
  static constexpr int kStagePad = 4;
  WmmaAccumulator<T> acc[MI][NI];

  __device__ void clear() {
    SEG_UNROLL
    for (int i = 0; i < MI; ++i)
      SEG_UNROLL
      for (int j = 0; j < NI; ++j) nvcuda::wmma::fill_fragment(acc[i][j], 0.0f);
  }

  struct Fragments {
    WmmaAFragment<T, MA> a[MI];
    WmmaBFragment<T, MB> b[NI];
  };

  __device__ static void load_fragments(Fragments& f, const T* As, const T* Bs, int wm0, int wn0, int kk, int lane) {
    (void)lane;
    SEG_UNROLL
    for (int i = 0; i < MI; ++i) {
      const int m = wm0 + 16 * i;
      const T* p = As + (MA == Major::k ? TileA::offset(m, kk) : TileA::offset(kk, m));
      if constexpr (std::is_same_v<T, float>) {
        load_tf32_fragment<'a', MA == Major::k, TileA::kStride>(f.a[i], p);  // already rounded to TF32 in shared memory
      } else {
        nvcuda::wmma::load_matrix_sync(f.a[i], p, TileA::kStride);
      }
    }
    SEG_UNROLL
    for (int j = 0; j < NI; ++j) {
      const int n = wn0 + 16 * j;
      const T* p = Bs + (MB == Major::k ? TileB::offset(n, kk) : TileB::offset(kk, n));
      if constexpr (std::is_same_v<T, float>) {
        load_tf32_fragment<'b', MB == Major::mn, TileB::kStride>(f.b[j], p);  // already rounded to TF32 in shared memory
      } else {
        nvcuda::wmma::load_matrix_sync(f.b[j], p, TileB::kStride);
      }
    }
  }

  __device__ void mma(const Fragments& f) {
    SEG_UNROLL
    for (int i = 0; i < MI; ++i)
      SEG_UNROLL
      for (int j = 0; j < NI; ++j) nvcuda::wmma::mma_sync(acc[i][j], f.a[i], f.b[j], acc[i][j]);
  }

  __device__ void store(float* cs, int ldc, int wn0, int lane) const {
    SEG_UNROLL
    for (int i = 0; i < MI; ++i)
      SEG_UNROLL
      for (int j = 0; j < NI; ++j)
        nvcuda::wmma::store_matrix_sync(cs + 16 * i * ldc + wn0 + 16 * j, acc[i][j], ldc, nvcuda::wmma::mem_row_major);
  }
};

// One whole pipeline stage (BK deep) into the warp's accumulators, k step by k step.
template <int BK, class Warp, class T>
__device__ __forceinline__ void mma_stage(Warp& w, const T* As, const T* Bs, int wm0, int wn0, int lane) {
  SEG_UNROLL
  for (int kk = 0; kk < BK; kk += Warp::kStep) {
    typename Warp::Fragments f;
    Warp::load_fragments(f, As, Bs, wm0, wn0, kk, lane);
    w.mma(f);
  }
}

}  // namespace seg::cuda::tc
