// Tensor-core GEMM, level 4 (device): tile choice, the split-K plan, and the launch of a
// GemmKernel (block_tile.h) with its split-K reduction. Host code of the .cu launchers
// (gemm_tc.cu, conv2d_tc.cu) and of the kernel lab; not a public header.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "kernels/common/half.h"
#include "kernels/cuda/gemm/block_tile.h"
#include "kernels/cuda/gemm_tc.h"
#include "kernels/cuda/launch.h"

namespace seg::cuda::tc {

// seg::f16 / seg::bf16 / float -> the CUDA type the kernels use (bit-compatible).
template <class T>
struct DeviceType {
  using type = T;
};
template <>
struct DeviceType<seg::f16> {
  using type = __half;
};
template <>
struct DeviceType<seg::bf16> {
  using type = __nv_bfloat16;
};
template <class T>
using device_t = typename DeviceType<T>::type;

template <class T>
__host__ __device__ constexpr OutType out_type() {
  if constexpr (std::is_same_v<T, float>) return OutType::f32;
  else if constexpr (std::is_same_v<T, seg::f16> || std::is_same_v<T, __half>) return OutType::f16;
  else return OutType::bf16;
}

inline Act act_of(TcActivation a) {
  return a == TcActivation::relu ? Act::relu : a == TcActivation::relu6 ? Act::relu6 : Act::none;
}

// The block tiles of each element type (K tile: 64 bytes of a row either way), and the large tile
// of the backward convolutions: for f16/bf16 the same, for TF32 one of BK 8 with 4 stages (32 bytes
// of a row, three tiles in flight), the one with which those kernels fit 128 registers without a
// spill, two blocks per SM (block_tile.h, min_blocks_per_sm).
template <class T>
struct Tiles {
  using Large = TileShape<128, 128, 32, 2, 4, 3>;
  using Small = TileShape<64, 64, 32, 2, 2, 3>;
  using Backward = Large;
};
template <>
struct Tiles<float> {
  using Large = TileShape<128, 128, 16, 2, 4, 3>;
  using Small = TileShape<64, 64, 16, 2, 2, 3>;
  using Backward = TileShape<128, 128, 8, 2, 4, 4>;
};

// Whether a GEMM with these sources is a backward convolution (it takes Tiles<T>::Backward).
template <class T, class ASource, class BSource>
inline constexpr bool kBackwardConv =
    std::is_same_v<ASource, ConvBwdDataASource<T>> || std::is_same_v<BSource, ConvBwdWeightBSource<T>>;

int device_sm_count();  // of the current device, cached per device

// Resolves `automatic` (mma_sync for every element type).
TcFamily resolve_family(TcFamily requested);
// Large (128x128) when it gives at least one block per SM, else small (64x64).
bool use_large_tile(TcTile requested, int64_t M, int64_t N, int groups);

struct SplitPlan {
  int k_tiles = 0, splits = 1, per_split = 0;
  size_t bytes = 0;  // workspace for the partial sums
};
// requested: TcOptions::split_k (0: split_k_auto, gemm_tc.h). available: workspace bytes (SIZE_MAX:
// plan as if unlimited). warps: warps per block of the tile.
SplitPlan plan_split_k(int64_t M, int64_t N, int64_t K, int groups, int BM, int BN, int BK, int warps, int requested,
                       size_t available);

// Raises the dynamic shared-memory limit of the kernel once per device when it needs > 48 KiB.
template <class Kernel>
void allow_smem(const void* kernel_function) {
  if (Kernel::kSmemBytes <= 48 * 1024) return;
  static std::atomic<uint64_t> done{0};
  int device = 0;
  cudaGetDevice(&device);
  const uint64_t bit = uint64_t{1} << (device & 63);
  if (done.load() & bit) return;
  if (cudaFuncSetAttribute(kernel_function, cudaFuncAttributeMaxDynamicSharedMemorySize, Kernel::kSmemBytes) !=
      cudaSuccess)
    throw seg::cuda::LaunchError("cudaFuncSetAttribute(MaxDynamicSharedMemorySize, " +
                                 std::to_string(Kernel::kSmemBytes) + ") failed for a tensor-core GEMM kernel");
  done.fetch_or(bit);
}

// Launches Kernel (and the split-K reduction) for p, whose a, b, M, N, K, vec_*, ep are set.
template <class Kernel>
void launch_gemm(typename Kernel::Params p, int groups, int requested_splits, TcWorkspace ws, Stream stream) {
  const SplitPlan plan = plan_split_k(p.M, p.N, p.K, groups, Kernel::BM, Kernel::BN, Kernel::BK, Kernel::THREADS / 32,
                                      requested_splits, ws.data ? ws.bytes : 0);
  p.k_tiles = plan.k_tiles;
  p.splits = plan.splits;
  p.k_tiles_per_split = plan.per_split;
  p.partial = plan.splits > 1 ? static_cast<float*>(ws.data) : nullptr;
  const int64_t tiles_m = (p.M + Kernel::BM - 1) / Kernel::BM, tiles_n = (p.N + Kernel::BN - 1) / Kernel::BN;
  const int64_t z = static_cast<int64_t>(groups) * plan.splits;
  if (tiles_m > 2147483647LL || tiles_n > 65535 || z > 65535)
    throw std::invalid_argument("gemm_tc: the problem needs a grid of (" + std::to_string(tiles_m) + ", " +
                                std::to_string(tiles_n) + ", " + std::to_string(z) +
                                ") blocks, beyond CUDA's limits (y and z <= 65535)");
  const auto kernel = gemm_tc_kernel<Kernel>;
  allow_smem<Kernel>(reinterpret_cast<const void*>(kernel));
  const dim3 grid(static_cast<unsigned>(tiles_m), static_cast<unsigned>(tiles_n), static_cast<unsigned>(z));
  SEG_LAUNCH(kernel, grid, Kernel::THREADS, Kernel::kSmemBytes, stream, p);
  if (plan.splits > 1) {
    const int64_t work = static_cast<int64_t>(groups) * p.M * ((p.N + 3) / 4);
    const int64_t cap = static_cast<int64_t>(device_sm_count()) * 8;
    const int64_t blocks = (work + 255) / 256 < cap ? (work + 255) / 256 : cap;
    const unsigned reduce_blocks = static_cast<unsigned>(blocks > 0 ? blocks : 1);
    if (p.ep.rows.on)  // backward data by stride phase (epilogue.h, RowGrid)
      SEG_LAUNCH((splitk_reduce_kernel<256, true>), reduce_blocks, 256, 0, stream, p.partial, plan.splits, p.M, p.N,
                 groups, p.ep);
    else
      SEG_LAUNCH((splitk_reduce_kernel<256, false>), reduce_blocks, 256, 0, stream, p.partial, plan.splits, p.M, p.N,
                 groups, p.ep);
  }
}

// Launches Kernel on what a launcher filled in a GemmArgs (below): its sources, extents, 16-byte
// flags and epilogue copied into the kernel's Params; launch_gemm adds the split plan. dispatch_gemm
// and the kernel lab's own kernel choices (kernels/lab/conv_tc_lab.cu) launch through it.
template <class Kernel, class Args>
void launch_gemm_args(const Args& p, int groups, int requested_splits, TcWorkspace ws, Stream stream) {
  typename Kernel::Params q{};
  q.a = p.a;
  q.b = p.b;
  q.M = p.M;
  q.N = p.N;
  q.K = p.K;
  q.vec_a = p.vec_a;
  q.vec_b = p.vec_b;
  q.ep = p.ep;
  launch_gemm<Kernel>(q, groups, requested_splits, ws, stream);
}

// Chooses the kernel for (family, tile) and launches it. Params are GemmKernel's (any kernel with
// these sources has the same Params layout). WmmaHalves = false leaves the WMMA kernels for f16 and
// bf16 uninstantiated (the convolutions: compile time), and asking for them is an error.
template <class T, Major MA, Major MB, class ASource, class BSource, bool WmmaHalves = true, class Params>
void dispatch_gemm(const Params& p, TcFamily family, TcTile tile, int groups, int requested_splits, TcWorkspace ws,
                   Stream stream) {
  constexpr bool is_float = std::is_same_v<T, float>;
  family = resolve_family(family);
  if (!is_float && !WmmaHalves && family == TcFamily::wmma)
    throw std::invalid_argument(
        "tensor-core convolution: f16/bf16 convolutions are built with the mma.sync family only (wmma: float, TF32)");
  const bool large = use_large_tile(tile, p.M, p.N, groups);
  auto go = [&](auto kernel_tag) {
    launch_gemm_args<typename decltype(kernel_tag)::type>(p, groups, requested_splits, ws, stream);
  };
  using L = std::conditional_t<kBackwardConv<T, ASource, BSource>, typename Tiles<T>::Backward, typename Tiles<T>::Large>;
  using S = typename Tiles<T>::Small;
  if constexpr (!is_float) {
    if (family == TcFamily::mma_sync) {
      // The large tile copies K tiles inside K without the K bound (InsideK_, block_tile.h): on
      // sm_90 that shortens the main loop's steady trip by 15-65 instructions per 32 HMMA where a
      // source has the form (the GEMMs, backward weight's A, the forward convolution's weights) at
      // the same blocks per SM. The small tile does not: some of its kernels lost a block per SM.
      if (large)
        go(std::type_identity<GemmKernel<T, L, MA, MB, SmemKind::swizzled, MmaSyncWarpTile, ASource, BSource,
                                         Plant::none, MainLoop::barrier_first, true>>{});
      else
        go(std::type_identity<GemmKernel<T, S, MA, MB, SmemKind::swizzled, MmaSyncWarpTile, ASource, BSource>>{});
      return;
    }
  }
  if constexpr (is_float) {
    if (family == TcFamily::mma_sync) {
      if (large)
        go(std::type_identity<GemmKernel<T, L, MA, MB, SmemKind::skewed, MmaSyncTf32WarpTile, ASource, BSource>>{});
      else
        go(std::type_identity<GemmKernel<T, S, MA, MB, SmemKind::skewed, MmaSyncTf32WarpTile, ASource, BSource>>{});
      return;
    }
  }
  if constexpr (is_float || WmmaHalves) {
    if (large)
      go(std::type_identity<GemmKernel<T, L, MA, MB, SmemKind::padded, WmmaWarpTile, ASource, BSource>>{});
    else
      go(std::type_identity<GemmKernel<T, S, MA, MB, SmemKind::padded, WmmaWarpTile, ASource, BSource>>{});
  }
}

// Plain parameter block the launchers fill before dispatch_gemm copies it into the kernel's Params.
template <class ASource, class BSource>
struct GemmArgs {
  ASource a;
  BSource b;
  int M = 0, N = 0, K = 0;
  bool vec_a = false, vec_b = false;
  EpilogueParams ep;
};

inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace seg::cuda::tc
