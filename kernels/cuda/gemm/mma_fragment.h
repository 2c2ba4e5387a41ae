// Tensor-core GEMM, level 1 (instruction): the fragments of mma.sync m16n8k16 and of WMMA.
//
// mma.sync.m16n8k16 (PTX ISA, "Matrix fragments for mma.m16n8k16"), groupID g = lane / 4,
// t = lane % 4, everything in 32-bit registers of two 16-bit elements:
//   A 16x16 (4 regs): a[0] = A[g][2t..2t+1]    a[1] = A[g+8][2t..2t+1]
//                     a[2] = A[g][2t+8..+9]    a[3] = A[g+8][2t+8..+9]
//   B 16x8  (2 regs): b[0] = B[2t..2t+1][g]    b[1] = B[2t+8..+9][g]
//   C/D 16x8 (4 floats): c[0..1] = C[g][2t..2t+1], c[2..3] = C[g+8][2t..2t+1]
// ldmatrix.m8n8 gives lane l row l/4, columns 2(l%4)..+1 of each 8x8 matrix it loads (lanes 8q..8q+7
// give the row addresses of matrix q); .trans swaps rows and columns. So an A tile stored with K
// contiguous is exactly four 8x8 matrices for ldmatrix.x4, and one stored with M contiguous is the
// same four matrices read with .trans; likewise for B. The helpers below compute each lane's row
// address for both orientations. They take the tile's layout (SmemTile) so swizzled, padded and
// plain tiles share the code.
//
// mma.sync.m16n8k8 .tf32 (PTX ISA, "Matrix fragments for mma.m16n8k8"), one float per register:
//   A 16x8 (4 regs): a[0] = A[g][t]  a[1] = A[g+8][t]  a[2] = A[g][t+4]  a[3] = A[g+8][t+4]
//   B 8x8  (2 regs): b[0] = B[t][g]  b[1] = B[t+4][g]        C/D as m16n8k16's.
// ldmatrix moves bits: the "pair of halves" lane l gets from row l/4 is the 32-bit word l%4 of that
// 16-byte row, i.e. one float. So a K-contiguous TF32 tile is the same four 8x8 matrices, each
// 8 rows x 4 floats (one chunk), and ldmatrix.x4 without .trans loads an A fragment, or the B
// fragments of two n8 tiles, exactly as for halves: the address helpers step by Tile::kChunk
// elements (one 16-byte chunk), not by 8. ldmatrix.trans swaps 16-bit halves, not floats, so an
// MN-contiguous TF32 tile is loaded one float per lane (warp_tile.h, MmaSyncTf32WarpTile).
//
// WMMA: the fragment types for 16x16 tiles. Their element-to-lane mapping is unspecified (it
// differs between GPU generations): code may treat every element alike (scaling, tf32 rounding)
// but anything position-dependent goes through shared memory (DESIGN decision 3).
#pragma once

#include <mma.h>

#include <cstdint>
#include <type_traits>

#include "kernels/cuda/gemm/tile_config.h"
#include "kernels/cuda/ptx.h"

namespace seg::cuda::tc {

// ---- mma.sync m16n8k16 ---------------------------------------------------------------------------
template <class T>
__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  static_assert(std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>,
                "mma.sync m16n8k16 multiplies __half or __nv_bfloat16");
  if constexpr (std::is_same_v<T, __half>)
    seg::ptx::mma_m16n8k16_f16(d, a, b, d);
  else
    seg::ptx::mma_m16n8k16_bf16(d, a, b, d);
}

// Fragment addresses. Each lane computes its ldmatrix row address once per warp tile (the *_base
// functions: fragment 0, k step 0); every other fragment and k step of the warp tile is that base
// moved by whole fragments (16 rows or columns) and whole k steps (SmemTile::moved: an add, or for a
// swizzled tile an XOR of a constant plus an add, folded into ldmatrix's immediate offset). Needs
// 16 % Tile::kRowPeriod == 0 and, in a swizzled tile whose warp corner lies along the contiguous
// dimension (Major::mn), a power-of-two warp tile: asserted by the warp tile (warp_tile.h).

// A, rows m0..m0+15 (m0: the warp tile's first row), columns 0..15 of the K tile (halves; for
// TF32 below, columns 0..7).
template <Major Mj, class Tile>
__device__ __forceinline__ int a_fragment_base(int m0, int lane) {
  if constexpr (Mj == Major::k) {
    // Lanes 0-15 address rows m0..m0+15 at the first chunk (matrices 0, 1), lanes 16-31 the same
    // rows one 16-byte chunk on, k 8 (matrices 2, 3): registers come back as a[0..3] of the table
    // above. The chunk is Tile::kChunk elements: 8 halves, or 4 floats for TF32.
    return Tile::offset(m0 + lane % 16, (lane / 16) * Tile::kChunk);
  } else {
    static_assert(Tile::kChunk == 8, "ldmatrix.trans transposes 16-bit elements: no TF32 MN-major fragments");
    // Stored [k][m]: matrix q = lane / 8 is rows (q / 2) * 8 .. +7 at columns m0 + (q % 2) * 8;
    // .trans turns each into the (m, k) 8x8 block that a[q] needs.
    const int q = lane / 8, r = lane % 8;
    return Tile::offset((q / 2) * 8 + r, m0 + (q % 2) * 8);
  }
}

// The A fragment dm rows below the base's (a multiple of 16), at k step k0 (a multiple of 16; of 8
// for TF32).
template <Major Mj, class Tile, class T>
__device__ __forceinline__ void load_a_fragment(uint32_t (&a)[4], const T* tile, int base, int dm, int k0) {
  if constexpr (Mj == Major::k)
    seg::ptx::ldmatrix_x4(a, tile + Tile::moved(base, dm, k0));
  else
    seg::ptx::ldmatrix_x4_trans(a, tile + Tile::moved(base, k0, dm));
}

// B, two neighbouring n8 tiles (columns n0..n0+7 and n0+8..n0+15), rows 0..15 of the K tile.
template <Major Mj, class Tile>
__device__ __forceinline__ int b_fragment_base(int n0, int lane) {
  const int q = lane / 8, r = lane % 8;
  if constexpr (Mj == Major::k) {
    // Stored [n][k]: matrix q is rows n0 + (q / 2) * 8 + r at chunk q % 2 (k 0 or 8 for halves,
    // 0 or 4 for TF32); each 8x8 (n, k) block read without .trans gives lane l the pair
    // B[2t..2t+1][g] that b[] holds (for TF32 the one float B[t][g], resp. B[t+4][g]).
    return Tile::offset(n0 + (q / 2) * 8 + r, (q % 2) * Tile::kChunk);
  } else {
    static_assert(Tile::kChunk == 8, "ldmatrix.trans transposes 16-bit elements: no TF32 MN-major fragments");
    // Stored [k][n]: matrix q is rows (q % 2) * 8 + r at n0 + (q / 2) * 8, read with .trans.
    return Tile::offset((q % 2) * 8 + r, n0 + (q / 2) * 8);
  }
}

// The pair of B fragments dn columns right of the base's (a multiple of 16), at k step k0.
template <Major Mj, class Tile, class T>
__device__ __forceinline__ void load_b_fragments(uint32_t (&b0)[2], uint32_t (&b1)[2], const T* tile, int base, int dn,
                                                 int k0) {
  uint32_t x[4];
  if constexpr (Mj == Major::k)
    seg::ptx::ldmatrix_x4(x, tile + Tile::moved(base, dn, k0));
  else
    seg::ptx::ldmatrix_x4_trans(x, tile + Tile::moved(base, k0, dn));
  b0[0] = x[0];
  b0[1] = x[1];
  b1[0] = x[2];
  b1[1] = x[3];
}

// ---- WMMA ----------------------------------------------------------------------------------------
// The WMMA shapes used here: 16x16x16 for __half and __nv_bfloat16, 16x16x8 for TF32 (float in
// memory, rounded to TF32 in shared memory by the thread that copied it: TileLoader::round_own_tf32).
template <class T>
struct WmmaTraits {
  static_assert(std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>,
                "WMMA multiplies __half or __nv_bfloat16 (16x16x16) or float as TF32 (16x16x8)");
  static constexpr int K = 16;
  using FragmentType = T;
};
template <>
struct WmmaTraits<float> {
  static constexpr int K = 8;
  using FragmentType = nvcuda::wmma::precision::tf32;
};

template <class T, Major Mj>
using WmmaAFragment =
    nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, WmmaTraits<T>::K, typename WmmaTraits<T>::FragmentType,
                           std::conditional_t<Mj == Major::k, nvcuda::wmma::row_major, nvcuda::wmma::col_major>>;
// B is K x N: stored [k][n] (Major::mn) it is row_major, stored [n][k] (Major::k) col_major.
template <class T, Major Mj>
using WmmaBFragment =
    nvcuda::wmma::fragment<nvcuda::wmma::matrix_b, 16, 16, WmmaTraits<T>::K, typename WmmaTraits<T>::FragmentType,
                           std::conditional_t<Mj == Major::mn, nvcuda::wmma::row_major, nvcuda::wmma::col_major>>;
template <class T>
using WmmaAccumulator = nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, WmmaTraits<T>::K, float>;

// A TF32 fragment from shared memory: what load_matrix_sync(f, p, LDM) does, but with a .shared
// load (seg::ptx::wmma_load_m16n16k8_tf32_shared): load_matrix_sync's TF32 form is a generic load
// per element. M is 'a' or 'b', ROW whether the fragment is row_major (A stored K-contiguous, B
// N-contiguous). In the simulator, load_matrix_sync itself (its fragments are its own).
template <char M, bool ROW, unsigned LDM, class Frag>
__device__ __forceinline__ void load_tf32_fragment(Frag& f, const float* p) {
#if defined(SEG_CUDA_SIM)
  nvcuda::wmma::load_matrix_sync(f, p, LDM);
#else
  uint32_t r[4];
  seg::ptx::wmma_load_m16n16k8_tf32_shared<M, ROW, LDM>(r, p);
  for (int i = 0; i < 4; ++i) f.x[i] = __uint_as_float(r[i]);
#endif
}

}  // namespace seg::cuda::tc
