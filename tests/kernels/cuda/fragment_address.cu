// See fragment_address.h. Simulator build only (host code calling the __device__ address helpers,
// which the simulator compiles for the host).
#include <type_traits>

#include "kernels/cuda/gemm/mma_fragment.h"
#include "tests/kernels/cuda/fragment_address.h"

namespace seg::test {

namespace {
using namespace seg::cuda::tc;

const char* kind_name(SmemKind k) {
  switch (k) {
    case SmemKind::swizzled: return "swizzled";
    case SmemKind::padded: return "padded";
    case SmemKind::skewed: return "skewed";
    default: return "plain";
  }
}

// The address each lane hands to ldmatrix, computed directly from the fragment's row and column
// (what mma_fragment.h computed before the base-and-move form). A K-contiguous row's second 8x8
// matrix starts one 16-byte chunk on: k 8 for halves, k 4 for TF32.
template <Major Mj, class Tile, class T>
int direct_a(int m0, int k0, int lane) {
  if constexpr (Mj == Major::k) return Tile::offset(m0 + lane % 16, k0 + (lane / 16) * Element<T>::kChunk);
  const int q = lane / 8, r = lane % 8;
  return Tile::offset(k0 + (q / 2) * 8 + r, m0 + (q % 2) * 8);
}
template <Major Mj, class Tile, class T>
int direct_b(int n0, int k0, int lane) {
  const int q = lane / 8, r = lane % 8;
  if constexpr (Mj == Major::k) return Tile::offset(n0 + (q / 2) * 8 + r, k0 + (q % 2) * Element<T>::kChunk);
  return Tile::offset(k0 + (q % 2) * 8 + r, n0 + (q / 2) * 8);
}

// One operand tile: MN x BK (rows or columns by orientation), warp tiles of W along MN. T = float:
// the TF32 m16n8k8 ldmatrix loads of K-contiguous tiles (k steps of 8).
template <SmemKind Kind, Major Mj, int MN, int BK, int W, class T = __half>
void check(FragmentAddressReport& rep) {
  using Tile = OperandTile<Kind, Mj, MN, BK, T>;
  constexpr int kStep = std::is_same_v<T, float> ? 8 : 16;
  auto note = [&](const char* op, int lane, int corner, int d, int k0, int got, int want) {
    ++rep.wrong;
    if (rep.first_wrong.empty())
      rep.first_wrong = std::string(op) + " " + kind_name(Kind) + (Mj == Major::k ? " K-major " : " MN-major ") +
                        (std::is_same_v<T, float> ? "float " : "") + std::to_string(MN) + "x" + std::to_string(BK) +
                        " warp " + std::to_string(W) + ": lane " +
                        std::to_string(lane) + " corner " + std::to_string(corner) + " +" + std::to_string(d) +
                        " k " + std::to_string(k0) + ": " + std::to_string(got) + " != " + std::to_string(want);
  };
  for (int corner = 0; corner < MN; corner += W)
    for (int lane = 0; lane < 32; ++lane) {
      const int a_base = a_fragment_base<Mj, Tile>(corner, lane), b_base = b_fragment_base<Mj, Tile>(corner, lane);
      for (int k0 = 0; k0 < BK; k0 += kStep)
        for (int d = 0; d < W; d += 16) {
          const int a = Mj == Major::k ? Tile::moved(a_base, d, k0) : Tile::moved(a_base, k0, d);
          const int b = Mj == Major::k ? Tile::moved(b_base, d, k0) : Tile::moved(b_base, k0, d);
          rep.checked += 2;
          const int want_a = direct_a<Mj, Tile, T>(corner + d, k0, lane);
          const int want_b = direct_b<Mj, Tile, T>(corner + d, k0, lane);
          if (a != want_a) note("A", lane, corner, d, k0, a, want_a);
          if (b != want_b) note("B", lane, corner, d, k0, b, want_b);
        }
    }
}

template <SmemKind Kind, Major Mj>
void check_shapes(FragmentAddressReport& rep) {
  check<Kind, Mj, 64, 32, 32>(rep);    // Small: 64x64x32, 2x2 warps
  check<Kind, Mj, 128, 32, 64>(rep);   // Large, A: 128 rows, 2 warps
  check<Kind, Mj, 128, 32, 32>(rep);   // Large, B: 128 columns, 4 warps
  check<Kind, Mj, 256, 32, 64>(rep);   // lab v9: 128x256
  check<Kind, Mj, 128, 64, 64>(rep);   // lab v10, v13: 64-deep K tiles
  check<Kind, Mj, 256, 64, 64>(rep);
}
}  // namespace

FragmentAddressReport check_fragment_addresses() {
  FragmentAddressReport rep;
  check_shapes<SmemKind::swizzled, Major::k>(rep);
  check_shapes<SmemKind::swizzled, Major::mn>(rep);
  check_shapes<SmemKind::padded, Major::k>(rep);
  check_shapes<SmemKind::padded, Major::mn>(rep);
  check_shapes<SmemKind::plain, Major::k>(rep);
  check_shapes<SmemKind::plain, Major::mn>(rep);
  // TF32 (MmaSyncTf32WarpTile): K-contiguous skewed tiles, i.e. swizzled rows of 4 chunks (BK 16),
  // of 2 chunks (BK 8, the backward tile) and of 8 (BK 32); warp tiles of 32 and 64.
  check<SmemKind::skewed, Major::k, 64, 16, 32, float>(rep);
  check<SmemKind::skewed, Major::k, 128, 16, 64, float>(rep);
  check<SmemKind::skewed, Major::k, 128, 16, 32, float>(rep);
  check<SmemKind::skewed, Major::k, 128, 8, 64, float>(rep);
  check<SmemKind::skewed, Major::k, 128, 8, 32, float>(rep);
  check<SmemKind::skewed, Major::k, 128, 32, 32, float>(rep);
  return rep;
}

}  // namespace seg::test
