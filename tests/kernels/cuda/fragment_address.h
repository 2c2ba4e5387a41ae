// The mma.sync fragment addresses (kernels/cuda/gemm/mma_fragment.h) checked against the tile's own
// offset() (fragment_address.cu): the test of SmemTile::moved's conditions.
#pragma once

#include <string>

namespace seg::test {

struct FragmentAddressReport {
  long checked = 0, wrong = 0;
  std::string first_wrong;  // the first mismatch: tile, orientation, lane, fragment, k step
};

// Every lane, warp corner, fragment and k step of the swizzled, padded and plain __half tiles of
// the tile shapes the kernels and the lab use (BM or BN 64/128/256, BK 32/64, warp tiles 32/64),
// for A and B in both orientations.
FragmentAddressReport check_fragment_addresses();

}  // namespace seg::test
