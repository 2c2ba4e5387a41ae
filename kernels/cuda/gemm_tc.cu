// Host-side parts of the tensor-core GEMM shared by every element type: the device's SM count,
// family and tile choice, the split-K plan (gemm/device_launch.h). The kernels are instantiated in
// gemm_tc_{f16,bf16,tf32}.cu and conv2d_tc*.cu.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <stdexcept>

#include "kernels/cuda/conv2d_tc.h"
#include "kernels/cuda/gemm/device_launch.h"
#include "kernels/cuda/gemm_tc.h"

namespace seg::cuda {

const char* tc_family_name(TcFamily f) {
  switch (f) {
    case TcFamily::automatic: return "automatic";
    case TcFamily::mma_sync: return "mma.sync";
    case TcFamily::wmma: return "wmma";
  }
  return "?";
}

bool conv2d_tc_preferred(const ConvShape& s) { return s.groups == 1 || (s.Cg() >= 4 && s.Og() >= 4); }

int split_k_auto(int64_t tiles, int64_t K, int sms, int warps) {
  if (tiles <= 0 || sms <= 0 || warps <= 0) return 1;
  const int64_t want = (static_cast<int64_t>(sms) * kSplitWarpsPerSm + warps - 1) / warps;  // blocks
  if (4 * tiles >= 3 * want) return 1;
  const int64_t most = std::min<int64_t>(kSplitMax, K / kSplitMinDepth);
  if (most < 2) return 1;
  const int64_t first = std::clamp<int64_t>((want + tiles - 1) / tiles, 2, most);
  // Evenness: the blocks over whole rounds of one block per SM; 1.0 when tiles * s is a multiple of sms.
  auto evenness = [&](int64_t s) {
    const int64_t blocks = tiles * s, rounds = (blocks + sms - 1) / sms;
    return static_cast<double>(blocks) / static_cast<double>(rounds * sms);
  };
  int64_t best = first;
  for (int64_t s = first + 1; s <= std::min<int64_t>(most, 2 * first); ++s)
    if (evenness(s) > evenness(best) + 1e-9) best = s;
  return static_cast<int>(best);
}

namespace tc {

int device_sm_count() {
  static std::atomic<int> cached[64] = {};
  int device = 0;
  cudaGetDevice(&device);
  std::atomic<int>& slot = cached[device & 63];
  int n = slot.load();
  if (n > 0) return n;
  if (cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device) != cudaSuccess || n <= 0) n = 1;
  slot.store(n);
  return n;
}

TcFamily resolve_family(TcFamily requested) {
  // Both families take every element type (f16/bf16 m16n8k16 or WMMA k16; TF32 m16n8k8 or WMMA k8).
  // TF32 took WMMA until 2026-12-07: mma.sync's fragments load with a third fewer instructions
  // (docs/tensor-cores.md, "TF32 on mma.sync").
  return requested == TcFamily::automatic ? TcFamily::mma_sync : requested;
}

bool use_large_tile(TcTile requested, int64_t M, int64_t N, int groups) {
  if (requested != TcTile::automatic) return requested == TcTile::large;
  const int64_t tiles = ((M + 127) / 128) * ((N + 127) / 128) * groups;
  return tiles >= device_sm_count();
}

SplitPlan plan_split_k(int64_t M, int64_t N, int64_t K, int groups, int BM, int BN, int BK, int warps, int requested,
                       size_t available) {
  SplitPlan plan;
  plan.k_tiles = static_cast<int>((K + BK - 1) / BK);
  plan.per_split = plan.k_tiles;
  if (plan.k_tiles <= 1) return plan;
  int64_t s = requested;
  if (requested < 1) {
    const int64_t tiles = ((M + BM - 1) / BM) * ((N + BN - 1) / BN) * groups;
    s = split_k_auto(tiles, K, device_sm_count(), warps);
  }
  s = std::clamp<int64_t>(s, 1, plan.k_tiles);
  const size_t per_partial = static_cast<size_t>(groups) * static_cast<size_t>(M) * static_cast<size_t>(N) * 4;
  if (s > 1 && available / per_partial < static_cast<size_t>(s)) s = static_cast<int64_t>(available / per_partial);
  if (s < 2) return plan;
  plan.per_split = static_cast<int>((plan.k_tiles + s - 1) / s);
  plan.splits = (plan.k_tiles + plan.per_split - 1) / plan.per_split;  // no empty split
  plan.bytes = plan.splits > 1 ? plan.splits * per_partial : 0;
  if (plan.splits == 1) plan.per_split = plan.k_tiles;
  return plan;
}

}  // namespace tc
}  // namespace seg::cuda
