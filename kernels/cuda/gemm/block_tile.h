// Tensor-core GEMM, level 3 (block): one BM x BN tile of D per thread block, a multi-stage cp.async
// pipeline over K, then the epilogue. The kernel every tensor-core GEMM and implicit-GEMM
// convolution of the project runs.
//
// The loop nest (one block; Shape = tile_config.h's TileShape):
//   for kt in this split's K tiles:                         the pipeline keeps STAGES-1 tiles in flight
//     wait for tile kt (cp.async.wait_group STAGES-2); __syncthreads()
//     issue the copies of tile kt + STAGES-1 into the stage tile kt-1 used (free: all threads
//       passed the barrier after computing on it)
//     each warp: for kk in 0..BK step 16 (8 for TF32): fragments from shared memory, MMAs
//   drain, __syncthreads(); per warp row: accumulators -> shared memory, __syncthreads(),
//     epilogue (epilogue.h) -> D, __syncthreads()
// One barrier per K tile. STAGES == 1 is the unpipelined version (load, wait, barrier, compute,
// barrier), kept for the kernel lab. That is MainLoop::barrier_first; MainLoop::prefetch_fragments
// (below) reorders the same work so that fragment loads run one k step ahead of the MMAs.
//
// Grid: x = M tiles (fastest: consecutive blocks share a B tile, the convolution's weights),
// y = N tiles, z = groups * splits. Split-K: split s of S computes K tiles
// [s * per_split, (s+1) * per_split) and writes its raw f32 sums to partial[g][s][M][N]; a second
// kernel (splitk_reduce_kernel) adds the S partials in the fixed order 0..S-1 and applies the
// epilogue: deterministic, no atomics (DESIGN decision 11), the same bits on every run.
// Shared memory (dynamic): STAGES * (A tile + B tile), reused after the loop for one warp row of
// accumulators, WM x (BN + pad) floats (the warp tile's kStagePad: no bank conflicts).
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/cuda/dynamic_smem.h"
#include "kernels/cuda/gemm/epilogue.h"
#include "kernels/cuda/gemm/tile_config.h"
#include "kernels/cuda/gemm/tile_loader.h"
#include "kernels/cuda/gemm/warp_tile.h"
#include "kernels/cuda/ptx.h"

namespace seg::cuda::tc {

// A planted bug, for the tests that prove the test suite catches the bugs such kernels have
// (tests/kernels/cuda/test_gemm_tc_planted.cpp). Product launchers always use Plant::none.
enum class Plant : int {
  none,
  no_barrier_after_wait,  // consumers read a stage before every thread's copies have landed
  wait_one_group_short,   // cp.async.wait_group STAGES-1: the tile being computed may be in flight
  swizzle_mismatch,       // copies land swizzled, fragments read the tile as if it were plain
};

// The order of work inside the main loop.
//   barrier_first       per K tile: wait for its stage, barrier, issue the next copies, then every k
//                       step loads its fragments and runs its MMAs. Each tile starts with the
//                       barrier and an ldmatrix latency during which the warp has no MMA to issue.
//   prefetch_fragments  the warp loads k step s+1's fragments before it issues k step s's MMAs (two
//                       sets of fragment registers), and the wait and barrier move to the tile's
//                       last k step, just before the first fragments of the next tile are loaded:
//                       the MMAs issued before the barrier keep the tensor cores busy across it
//                       (CUTLASS's multistage loop). The cost: the wait is for tile i+1 during tile
//                       i, so STAGES-2 tiles and (BK-16)/BK of one are in flight instead of
//                       STAGES-1 tiles; it needs STAGES >= 3, and a 4th stage restores the depth.
enum class MainLoop : int { barrier_first, prefetch_fragments };

template <class T>
struct ConvFwdASource;
template <class T>
struct ConvBwdDataASource;
template <class T>
struct ConvBwdWeightBSource;
// The one configuration where ptxas's own register choice spilled (tools/ptxas_report.py;
// docs/tensor-cores.md, "Static evidence"): the TF32 WMMA forward convolution with the 64x64 tile
// took 96 registers on sm_90 (5 blocks of 4 warps per SM) and spilled 4 bytes. Told that 5 blocks
// must fit (at most 102 registers), ptxas allocates the same 96 without a spill: same occupancy.
// On sm_80 the same bound makes it spill where its own choice (96, no spill) did not, so the bound
// is for sm_90 and later only (the CUDA guide's way: __CUDA_ARCH__ in the launch bounds).
template <class T, class Shape, class ASource, class BSource>
constexpr int min_blocks_per_sm() {
#if defined(__CUDA_ARCH__)
  // The backward convolutions' large tiles (2026-12-07): two blocks of 8 warps per SM instead of
  // one. The first GPU run (docs/performance.md) found these kernels stalled, not issue-bound, and
  // backward weight 3x faster with 15.5 warps per SM than with 4: latency that more warps hide.
  // Unbounded, ptxas took 160 registers for the f16/bf16 backward weight and 184-192 for TF32
  // backward data and weight (BK 16, sm_90): one block per SM. Bounded, the f16/bf16 one fits 128
  // without a spill on sm_90 (its steady trip grows from 190 to 248 instructions per 32 HMMA; on
  // sm_80 it spills 4 bytes, so there it stays unbounded); TF32 spilled
  // 16-92 bytes at BK 16, so its backward tile is BK 8 with 4 stages (Tiles<float>::Backward,
  // device_launch.h), which fits 128 without one. Lab conv v8 keeps the unbounded f16 kernel: the A/B.
  constexpr bool kLarge = Shape::BM == 128 && Shape::BN == 128;
  constexpr bool kBwdData = std::is_same_v<ASource, ConvBwdDataASource<T>>;
  constexpr bool kBwdWeight = std::is_same_v<BSource, ConvBwdWeightBSource<T>>;
  if constexpr (kLarge && std::is_same_v<T, float> && Shape::BK == 8 && (kBwdData || kBwdWeight)) return 2;
#if __CUDA_ARCH__ >= 900
  if constexpr (kLarge && !std::is_same_v<T, float> && kBwdWeight) return 2;  // sm_80: spills 4 bytes
#endif
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if constexpr (std::is_same_v<T, float> && std::is_same_v<ASource, ConvFwdASource<float>> && Shape::BM == 64 &&
                Shape::BN == 64)
    return 5;
  // The f16/bf16 backward-data kernel with the 64x64 tile, since its sources divide with
  // FastDivmod: unbounded, ptxas took 96 registers on sm_90 and spilled 4 bytes; bounded to 5
  // blocks it spilled 116. Bounded to 4 (at most 128 registers) it does not spill, and 4 blocks per
  // SM is the occupancy it had before at 124 registers.
  if constexpr (!std::is_same_v<T, float> && std::is_same_v<ASource, ConvBwdDataASource<T>> && Shape::BM == 64 &&
                Shape::BN == 64)
    return 4;
#elif defined(__CUDA_ARCH__)
  // sm_80: for these two 128x128 kernels ptxas's own choice was
  // exactly 128 registers and an 8-byte spill (with the cursors of tile_loader.h, 2026-12-06).
  // Told that one block per SM is enough, it takes 179 (f16/bf16 backward data) and 168 (TF32
  // forward) and does not spill. On sm_90 the same kernels fit 128 registers without a spill.
  if constexpr (Shape::BM == 128 && ((!std::is_same_v<T, float> && std::is_same_v<ASource, ConvBwdDataASource<T>>) ||
                                     (std::is_same_v<T, float> && std::is_same_v<ASource, ConvFwdASource<float>>)))
    return 1;
  // The TF32 backward-data kernel with the 64x64 tile, since its A fragments load with ldmatrix
  // (2026-12-07): ptxas's own choice on sm_80 was 96 registers and a 4-byte spill; bounded to 5
  // blocks the same, to 4 (at most 128 registers) it takes 128 and does not spill. 4 blocks of 4
  // warps per SM instead of 5, on sm_80 only (sm_90: 96 registers, no spill, unbounded). The bound
  // holds for the WMMA kernel of that tile too (sm_80: 96 -> 123 registers, 5 -> 4 blocks).
  if constexpr (std::is_same_v<T, float> && std::is_same_v<ASource, ConvBwdDataASource<float>> && Shape::BM == 64 &&
                Shape::BN == 64)
    return 4;
#endif
  return 0;
}

template <class T_, class Shape_, Major MA_, Major MB_, SmemKind Kind_,
          template <class, class, Major, Major, class, class> class WarpTile_, class ASource_, class BSource_,
          Plant Plant_ = Plant::none, MainLoop Loop_ = MainLoop::barrier_first, bool InsideK_ = false,
          int MinBlocks_ = -1>
struct GemmKernel {
  using T = T_;
  using Shape = Shape_;
  using ASource = ASource_;
  using BSource = BSource_;
  static constexpr Major MA = MA_, MB = MB_;
  static constexpr int BM = Shape::BM, BN = Shape::BN, BK = Shape::BK, STAGES = Shape::STAGES;
  static constexpr int THREADS = Shape::THREADS;
  // Blocks per SM that ptxas must fit (__launch_bounds__'s second argument; 0 leaves the register
  // count to ptxas, the same PTX as no second argument). Set where ptxas's own choice spills or
  // costs a block per SM (min_blocks_per_sm); MinBlocks_ >= 0 overrides it (the lab's A/B versions).
  static constexpr int MIN_BLOCKS = MinBlocks_ >= 0 ? MinBlocks_ : min_blocks_per_sm<T, Shape, ASource_, BSource_>();
  // Whether the epilogue may write rows on a pixel grid (epilogue.h, RowGrid): backward data only.
  static constexpr bool kRowGrid = std::is_same_v<ASource_, ConvBwdDataASource<T_>>;
  using TileA = OperandTile<Kind_, MA, BM, BK, T>;
  using TileB = OperandTile<Kind_, MB, BN, BK, T>;
  // The layout the fragment loads assume (differs from the copies' only in the planted bug).
  using ReadTileA = OperandTile<Plant_ == Plant::swizzle_mismatch ? SmemKind::plain : Kind_, MA, BM, BK, T>;
  using ReadTileB = OperandTile<Plant_ == Plant::swizzle_mismatch ? SmemKind::plain : Kind_, MB, BN, BK, T>;
  using Warp = WarpTile_<T, Shape, MA, MB, ReadTileA, ReadTileB>;
  using LoaderA = TileLoader<T, MA, TileA, THREADS, ASource>;
  using LoaderB = TileLoader<T, MB, TileB, THREADS, BSource>;

  static constexpr int kStageElements = TileA::kElements + TileB::kElements;
  static constexpr int kLdc = BN + Warp::kStagePad;
  static constexpr int kEpilogueBytes = Shape::WM * kLdc * 4;
  static constexpr int kPipelineBytes = STAGES * kStageElements * static_cast<int>(sizeof(T));
  static constexpr int kSmemBytes = kPipelineBytes > kEpilogueBytes ? kPipelineBytes : kEpilogueBytes;

  struct Params {
    ASource a;
    BSource b;
    int M, N, K;  // per group
    int k_tiles, splits, k_tiles_per_split;
    bool vec_a, vec_b;  // 16-byte cp.async path (else element-wise), per operand
    EpilogueParams ep;  // used when splits == 1
    float* partial;     // [groups][splits][M][N] when splits > 1
  };

  __device__ static void run(const Params& p) {
    T* smem = seg::dynamic_smem<T>();
    const int tid = static_cast<int>(threadIdx.x), lane = tid % 32, warp = tid / 32;
    const int warp_m = warp / Shape::WARPS_N, warp_n = warp % Shape::WARPS_N;
    const int g = static_cast<int>(blockIdx.z) / p.splits, split = static_cast<int>(blockIdx.z) % p.splits;
    const int m0 = static_cast<int>(blockIdx.x) * BM, n0 = static_cast<int>(blockIdx.y) * BN;
    const ASource a = p.a.with_group(g);
    const BSource b = p.b.with_group(g);
    const int kt_begin = split * p.k_tiles_per_split;
    const int kt_end = kt_begin + p.k_tiles_per_split < p.k_tiles ? kt_begin + p.k_tiles_per_split : p.k_tiles;
    const int tiles = kt_end > kt_begin ? kt_end - kt_begin : 0;
    LoaderA load_a;
    LoaderB load_b;
    load_a.init(a, m0, kt_begin * BK, tid);
    load_b.init(b, n0, kt_begin * BK, tid);
    auto stage_a = [&](int s) { return smem + s * kStageElements; };
    auto stage_b = [&](int s) { return smem + s * kStageElements + TileA::kElements; };
    // The pipeline's wait: at most STAGES-2 copy groups still in flight (the planted bug: STAGES-1).
    auto wait_for_stage = [] {
      if constexpr (STAGES >= 2) {
        if constexpr (Plant_ == Plant::wait_one_group_short)
          seg::ptx::cp_async_wait_group<STAGES - 1>();
        else
          seg::ptx::cp_async_wait_group<STAGES - 2>();
      }
    };
    // Copies the next K tile (kt_begin, kt_begin + 1, ...: the loaders' cursors keep the count) into
    // stage s. Every path below issues the tiles in that order. Inside: the tile lies wholly inside
    // K, so its copies skip the K bound where a source can (tile_loader.h).
    auto issue = [&](int s, auto inside) {
      load_a.template load<decltype(inside)::value>(a, stage_a(s), p.vec_a);
      load_b.template load<decltype(inside)::value>(b, stage_b(s), p.vec_b);
    };
    // TF32: after this thread's wait for stage s and before the barrier, its own chunks of the stage
    // are rounded to TF32 in place (TileLoader::round_own_tf32), so the fragment loads need not.
    auto landed = [&](int s) {
      if constexpr (std::is_same_v<T, float>) {
        load_a.round_own_tf32(stage_a(s));
        load_b.round_own_tf32(stage_b(s));
      }
    };
    // With InsideK_, the main loops run in two parts: first the trips whose issued tile lies inside
    // K (all but the last STAGES-1 trips), with only the inside form of the copies; then the rest
    // with the general form (the ragged last tile, or no tile to issue). Two loops rather than a
    // branch per trip, and opt-in per kernel (device_launch.h: the f16/bf16 mma.sync 128x128
    // kernels): near their register limits ptxas held more registers for it in other kernels (12 of
    // the 72 lost a block per SM when every kernel had it; docs/tensor-cores.md, "The fourth round").
    constexpr bool kTwoParts = InsideK_ && (LoaderA::kHasInsideK || LoaderB::kHasInsideK);
    using Inside = std::true_type;
    using General = std::false_type;
    // Runs trip(i, form) for i = 0 .. tiles-1, where trip i issues tile i + lead: with the inside
    // form while that tile is < min(tiles, the tiles inside K), then with the general form.
    auto run_trips = [&](int lead, auto trip) {
      int split_at = 0;
      if constexpr (kTwoParts) {
        const int inside_tiles = p.K / BK - kt_begin, issued = inside_tiles < tiles ? inside_tiles : tiles;
        split_at = issued - lead < 0 ? 0 : issued - lead;
        for (int i = 0; i < split_at; ++i) trip(i, Inside{});
      }
      for (int i = split_at; i < tiles; ++i) trip(i, General{});
    };

    Warp w;
    w.clear();
    if constexpr (Loop_ == MainLoop::prefetch_fragments) {
      // Named here only: hoisted above the if for both loops, they made ptxas spill 4 bytes in the
      // TF32 128x128 WMMA kernel on sm_90 (tools/ptxas_report.py compile).
      const int wm0 = warp_m * Shape::WM, wn0 = warp_n * Shape::WN;
      constexpr int kSteps = BK / Warp::kStep;
      static_assert(STAGES >= 3, "prefetch_fragments waits for tile i+1 during tile i: at least 3 stages");
      static_assert(kSteps % 2 == 0, "the two fragment sets alternate by k step, and tile to tile");
      for (int s = 0; s < STAGES - 1; ++s) {
        if (s < tiles) issue(s, General{});
        seg::ptx::cp_async_commit();
      }
      wait_for_stage();
      if (tiles > 0) landed(0);
      if constexpr (Plant_ != Plant::no_barrier_after_wait) __syncthreads();
      typename Warp::Fragments f[2];
      if (tiles > 0) Warp::load_fragments(f[0], stage_a(0), stage_b(0), wm0, wn0, 0, lane);
      auto trip = [&](int i, auto inside) {
        const int cur = i % STAGES;
        SEG_UNROLL
        for (int ks = 0; ks < kSteps; ++ks) {
          if (ks == 0) {
            // Into the stage tile i-1 used: every warp read it before the barrier of tile i-1.
            const int next = i + STAGES - 1;
            if (decltype(inside)::value || next < tiles) issue(next % STAGES, inside);
            seg::ptx::cp_async_commit();
          }
          if (ks == kSteps - 1) {
            // Committed: tiles 0 .. i+STAGES-1; tile i+1 must have landed, so STAGES-2 may be pending.
            wait_for_stage();
            if (i + 1 < tiles) landed((i + 1) % STAGES);
            if constexpr (Plant_ != Plant::no_barrier_after_wait) __syncthreads();
            if (i + 1 < tiles) {
              const int nxt = (i + 1) % STAGES;
              Warp::load_fragments(f[(ks + 1) % 2], stage_a(nxt), stage_b(nxt), wm0, wn0, 0, lane);
            }
          } else {
            Warp::load_fragments(f[(ks + 1) % 2], stage_a(cur), stage_b(cur), wm0, wn0, (ks + 1) * Warp::kStep, lane);
          }
          w.mma(f[ks % 2]);
        }
      };
      run_trips(STAGES - 1, trip);
    } else if constexpr (STAGES == 1) {
      auto trip = [&](int, auto inside) {
        issue(0, inside);
        seg::ptx::cp_async_wait_all();
        landed(0);
        if constexpr (Plant_ != Plant::no_barrier_after_wait) __syncthreads();
        mma_stage<BK>(w, stage_a(0), stage_b(0), warp_m * Shape::WM, warp_n * Shape::WN, lane);
        __syncthreads();
      };
      run_trips(0, trip);
    } else {
      for (int s = 0; s < STAGES - 1; ++s) {
        if (s < tiles) issue(s, General{});
        seg::ptx::cp_async_commit();
      }
      auto trip = [&](int i, auto inside) {
        wait_for_stage();
        landed(i % STAGES);
        if constexpr (Plant_ != Plant::no_barrier_after_wait) __syncthreads();
        const int next = i + STAGES - 1;
        if (decltype(inside)::value || next < tiles) issue(next % STAGES, inside);
        seg::ptx::cp_async_commit();
        mma_stage<BK>(w, stage_a(i % STAGES), stage_b(i % STAGES), warp_m * Shape::WM, warp_n * Shape::WN, lane);
        if constexpr (Plant_ == Plant::no_barrier_after_wait) __syncthreads();  // keeps the stages' reuse safe
      };
      run_trips(STAGES - 1, trip);
    }
    seg::ptx::cp_async_wait_all();
    __syncthreads();

    EpilogueParams ep = p.ep;
    int eg = g;
    if (p.splits > 1) {
      ep = EpilogueParams{};
      ep.d = p.partial + (static_cast<int64_t>(g) * p.splits + split) * p.M * p.N;
      ep.ldd = p.N;
      ep.d_vec = p.N % 4 == 0;
      eg = 0;
    }
    float* cs = seg::dynamic_smem<float>();
    for (int pass = 0; pass < Shape::WARPS_M; ++pass) {
      if (warp_m == pass) w.store(cs, kLdc, warp_n * Shape::WN, lane);
      __syncthreads();
      store_tile<THREADS, kRowGrid>(ep, cs, kLdc, Shape::WM, BN, m0 + pass * Shape::WM, n0, p.M, p.N, eg);
      __syncthreads();
    }
  }
};

template <class Kernel>
__global__ void __launch_bounds__(Kernel::THREADS, Kernel::MIN_BLOCKS) gemm_tc_kernel(const typename Kernel::Params p) {
  Kernel::run(p);
}

// D[g] = epilogue(sum over s = 0..splits-1, in that order, of partial[g][s]); one thread per
// 4 columns of a row, grid-stride. (A template so that every .cu file has its own copy: without
// relocatable device code a kernel is launched from the translation unit that defines it.)
template <int THREADS, bool kRowGrid>
__global__ void __launch_bounds__(THREADS)
    splitk_reduce_kernel(const float* partial, int splits, int M, int N, int groups, const EpilogueParams ep) {
  const int chunks = (N + 3) / 4;
  const int64_t total = static_cast<int64_t>(groups) * M * chunks;
  const int64_t slice = static_cast<int64_t>(M) * N;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int g = static_cast<int>(idx / (static_cast<int64_t>(M) * chunks));
    const int64_t rest = idx - static_cast<int64_t>(g) * M * chunks;
    const int m = static_cast<int>(rest / chunks), n = static_cast<int>(rest % chunks) * 4;
    const int count = N - n < 4 ? N - n : 4;
    float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int s = 0; s < splits; ++s) {
      const float* src = partial + (static_cast<int64_t>(g) * splits + s) * slice + static_cast<int64_t>(m) * N + n;
      if (count == 4 && N % 4 == 0) {
        const float4 x = load_vec<float4>(src);
        v[0] += x.x;
        v[1] += x.y;
        v[2] += x.z;
        v[3] += x.w;
      } else {
        for (int e = 0; e < count; ++e) v[e] += src[e];
      }
    }
    store_chunk<kRowGrid>(ep, g, m, n, N, v);
  }
}

}  // namespace seg::cuda::tc
