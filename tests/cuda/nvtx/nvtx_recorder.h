// What tests/cuda/nvtx/nvtx_recorder.cpp records: each nvtxRangePushA with the depth it was pushed at.
#pragma once

#include <string>
#include <vector>

namespace seg::test {
struct NvtxRange {
  int depth;         // 0 = outermost
  std::string name;
};
// seg_nvtx_take(&ranges, &open, &unbalanced_pops): the ranges pushed since the last call, the depth
// still open on the calling thread, and pops without a push so far. Found with dlsym.
using NvtxTakeFn = void (*)(std::vector<NvtxRange>*, int*, int*);
}  // namespace seg::test
