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

TcFamily resolve_family(TcFamily requested, bool is_float) {
  if (requested == TcFamily::automatic) return is_float ? TcFamily::wmma : TcFamily::mma_sync;
  if (requested == TcFamily::mma_sync && is_float)
    throw std::invalid_argument(
        "gemm_tc: the mma.sync family multiplies f16 or bf16; float inputs (TF32) use the wmma family");
  return requested;
}

bool use_large_tile(TcTile requested, int64_t M, int64_t N, int groups) {
  if (requested != TcTile::automatic) return requested == TcTile::large;
  const int64_t tiles = ((M + 127) / 128) * ((N + 127) / 128) * groups;
  return tiles >= device_sm_count();
}

SplitPlan plan_split_k(int64_t M, int64_t N, int64_t K, int groups, int BM, int BN, int BK, int requested,
                       size_t available) {
  SplitPlan plan;
  plan.k_tiles = static_cast<int>((K + BK - 1) / BK);
  plan.per_split = plan.k_tiles;
  if (plan.k_tiles <= 1) return plan;
  int64_t s = 1;
  if (requested >= 1) {
    s = requested;
  } else {
    // Split only when the output tiles leave most SMs idle, and keep >= 4 K tiles per split so the
    // pipeline fills; at most 32 partial sums per element.
    const int64_t tiles = ((M + BM - 1) / BM) * ((N + BN - 1) / BN) * groups;
    const int64_t sms = device_sm_count();
    if (2 * tiles < sms) s = std::min<int64_t>({(sms + tiles - 1) / tiles, plan.k_tiles / 4, 32});
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
