// Tensor-core GEMM, level 0: element traits, tile shapes and shared-memory tile layouts.
//
// The tensor-core kernels of kernels/cuda/gemm are layered as CUTLASS layers its own (instruction,
// warp, block, device); this header is what every layer shares:
//   mma_fragment.h   instruction level: ldmatrix + mma.sync m16n8k16 fragments; WMMA fragments
//   warp_tile.h      warp level: one warp's WM x WN accumulator tile, fed from shared memory
//   tile_loader.h    global -> shared copies of one operand tile (cp.async 16 B, or element-wise)
//   operand_source.h where an operand's elements live (a strided matrix, a convolution's im2col)
//   block_tile.h     block level: the multi-stage pipeline over K, then the epilogue
//   epilogue.h       accumulators -> shared memory -> alpha/beta, bias, activation, cast -> global
//   kernels/cuda/gemm_tc.cu, conv2d_tc.cu   the launchers (device level)
//
// Notation. The GEMM is D[M,N] = epilogue(A[M,K] * B[K,N]). An operand is stored either with K
// contiguous (Major::k: A row-major, B as B^T row-major) or with M (resp. N) contiguous
// (Major::mn: A as A^T row-major, B row-major). The shared-memory copy of a tile keeps the
// operand's own orientation (rows of 16-byte chunks along the contiguous dimension), and the
// fragment loads choose ldmatrix or ldmatrix.trans (WMMA: row_major or col_major) to match.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

// Full unrolling of the fixed-trip loops over fragments and chunks: without it nvcc keeps the
// per-thread arrays (accumulators, loader slots) in local memory. (g++ builds the simulator.)
#if defined(__CUDACC__)
#define SEG_UNROLL _Pragma("unroll")
#else
#define SEG_UNROLL
#endif

namespace seg::cuda::tc {

enum class Major : int { k, mn };

// Element types the tensor cores multiply: __half, __nv_bfloat16 (m16n8k16 or WMMA k16), and float
// as TF32 (WMMA m16n16k8, mma.sync m16n8k8). A chunk is the 16 bytes one cp.async or one ldmatrix
// row moves.
template <class T>
struct Element {
  static constexpr int kBytes = static_cast<int>(sizeof(T));
  static constexpr int kChunk = 16 / kBytes;  // elements per 16-byte chunk: 8 halves, 4 floats
  using Bits = uint16_t;                      // raw bit pattern, for element-wise copies
};
template <>
struct Element<float> {
  static constexpr int kBytes = 4;
  static constexpr int kChunk = 4;
  using Bits = uint32_t;
};

// Block tile BM x BN x BK, WARPS_M x WARPS_N warps each owning a WM x WN accumulator tile, and
// STAGES shared-memory buffers in the cp.async pipeline (1 = no pipeline: load, wait, compute).
template <int BM_, int BN_, int BK_, int WARPS_M_, int WARPS_N_, int STAGES_>
struct TileShape {
  static constexpr int BM = BM_, BN = BN_, BK = BK_;
  static constexpr int WARPS_M = WARPS_M_, WARPS_N = WARPS_N_, STAGES = STAGES_;
  static constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N;
  static constexpr int THREADS = 32 * WARPS_M * WARPS_N;
  static_assert(BM % WARPS_M == 0 && BN % WARPS_N == 0, "warps must tile the block tile");
  static_assert(WM % 16 == 0 && WN % 16 == 0, "a warp tile is a multiple of 16 x 16");
  static_assert(STAGES >= 1, "at least one shared-memory stage");
};

// How a tile is laid out in shared memory. The tile has Rows rows of Cols elements, Cols being the
// operand's contiguous dimension; offset(r, c) is the element offset of (r, c).
//   plain     row r at r * Cols. ldmatrix reads 8 rows of 16 bytes at the same column; with a row
//             of 64 bytes rows 0, 2, 4, 6 fall in the same banks: a 4-way bank conflict (with
//             256-byte rows, 8-way). The lab's "before" picture.
//   padded    row stride Cols + one chunk (16 bytes): the 8 rows of an ldmatrix start in 8
//             different 16-byte bank groups. Costs Rows * 16 bytes; needed where the consumer
//             wants a plain strided matrix (WMMA's load_matrix_sync).
//   swizzled  row stride Cols, but chunk j of row r is stored at chunk j ^ s(r), s(r) cycling
//             through the chunks of one 128-byte line: the same conflict-freedom with no padding
//             (CUTLASS's and cuBLAS's layout). Needs a power-of-two number of chunks per row >= 2.
//             Rows of 2 chunks (32 bytes, the TF32 BK 8 tile): 4 rows share a line and s(r) =
//             (r / 4) % 2, so an ldmatrix's rows 0-3 take the even (chunk 0) or odd bank groups and
//             rows 4-7 the others, and 8 lanes copying 16 bytes each cover one whole line.
//   skewed    for the TF32 mma.sync fragments (warp_tile.h, MmaSyncTf32WarpTile), by orientation
//             (OperandTile below). A K-contiguous tile is read with ldmatrix (8 rows x one 16-byte
//             chunk): swizzled, as for halves (rows of 4 chunks at BK 16, of 2 at BK 8). An
//             MN-contiguous tile is read one float per lane, 4 rows x 8 columns: padded by two
//             chunks (rows 8 words apart mod 32: 4 disjoint groups of 8 banks). All conflict-free
//             for those loads and for the loader's 16-byte copies.
enum class SmemKind : int { plain, padded, swizzled, skewed };

template <SmemKind Kind, int Rows, int Cols, class T, int PadChunks = 1>
struct SmemTile {
  static constexpr int kChunk = Element<T>::kChunk;
  static constexpr int kChunks = Cols / kChunk;  // chunks per row
  static constexpr bool kPadded = Kind == SmemKind::padded || Kind == SmemKind::skewed;
  static constexpr int kStride = kPadded ? Cols + kChunk * PadChunks : Cols;
  static constexpr int kElements = Rows * kStride;
  static constexpr int kBytes = kElements * static_cast<int>(sizeof(T));
  static_assert(Cols % kChunk == 0, "a tile row is whole 16-byte chunks");
  static_assert(Kind != SmemKind::swizzled || (kChunks >= 2 && (kChunks & (kChunks - 1)) == 0),
                "the swizzle needs a power-of-two number (>= 2) of 16-byte chunks per row");

  // 128 bytes (one pass of the 32 banks) hold 8 chunks: rows_per_line rows share one line.
  static constexpr int kRowsPerLine = kChunks >= 8 ? 1 : 8 / kChunks;
  static constexpr int kPeriod = kChunks >= 8 ? 8 : kChunks;
  __device__ __forceinline__ static int swizzle(int r) { return (r / kRowsPerLine) % kPeriod; }

  __device__ __forceinline__ static int offset(int r, int c) {
    if constexpr (Kind == SmemKind::swizzled) {
      const int chunk = c / kChunk, within = c % kChunk;
      return r * kStride + ((chunk ^ swizzle(r)) * kChunk) + within;
    } else {
      return r * kStride + c;
    }
  }

  // Rows after which the swizzle pattern repeats (any row count for plain and padded tiles).
  static constexpr int kRowPeriod = Kind == SmemKind::swizzled ? kRowsPerLine * kPeriod : 1;

  // offset(r + dr, c + dc) from base = offset(r, c), without recomputing the swizzle, when
  //   dr is a multiple of kRowPeriod (the row keeps its swizzle), and
  //   dc is a multiple of kChunk whose bits are disjoint from c's (so c + dc == c ^ dc).
  // In a swizzled tile the column bits of an offset are its low log2(kStride) bits (kStride is a
  // power of two) and the swizzle only XORs chunk bits, so XOR-ing dc into the offset moves the
  // column. The fragment loads (mma_fragment.h) meet both conditions: dr and dc are multiples of 16
  // (whole fragments, whole k steps) added to a lane's own row and column below 16, or to a warp
  // tile corner that is a multiple of the power-of-two warp tile. Then every fragment address of a
  // k step is one lane base plus constants, where each (fragment, k step) pair used to hold its own
  // precomputed offset in a register. test_kernels_cuda checks it against offset() for every lane,
  // tile and step the kernels use (tests/kernels/cuda/fragment_address.cu).
  __device__ __forceinline__ static int moved(int base, int dr, int dc) {
    if constexpr (Kind == SmemKind::swizzled)
      return (base ^ dc) + dr * kStride;
    else
      return base + dr * kStride + dc;
  }
};

// The shared-memory tile of operand A (M x K) or B (K x N) for a given orientation:
// Major::k stores [M or N rows][BK], Major::mn stores [BK rows][BM or BN].
template <SmemKind Kind, Major Mj, int MN, int BK, class T>
struct OperandTileOf {
  using type = SmemTile<Kind, Mj == Major::k ? MN : BK, Mj == Major::k ? BK : MN, T>;
};
template <Major Mj, int MN, int BK, class T>
struct OperandTileOf<SmemKind::skewed, Mj, MN, BK, T> {
  static constexpr int kRowChunks = BK / Element<T>::kChunk;  // of a K-contiguous tile
  static constexpr bool kSwizzle = kRowChunks >= 2 && (kRowChunks & (kRowChunks - 1)) == 0;
  using type = std::conditional_t<Mj == Major::k,
                                  SmemTile<kSwizzle ? SmemKind::swizzled : SmemKind::padded, MN, BK, T>,
                                  SmemTile<SmemKind::skewed, BK, MN, T, 2>>;
};
template <SmemKind Kind, Major Mj, int MN, int BK, class T>
using OperandTile = typename OperandTileOf<Kind, Mj, MN, BK, T>::type;

}  // namespace seg::cuda::tc
