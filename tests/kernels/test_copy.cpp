#include <doctest/doctest.h>

#include <vector>

#include "kernels/cpu/copy.h"

using namespace seg;
using namespace seg::cpu;

TEST_CASE("coalesce merges dims contiguous in both tensors and drops size-1 dims") {
  CopyLayout L;
  L.ndim = 4;
  const int64_t shape[4] = {2, 1, 3, 4};
  const int64_t s[4] = {12, 12, 4, 1};
  const int64_t d[4] = {24, 24, 8, 1};  // a channel slice: W stride 8 > C = 4
  for (int i = 0; i < 4; ++i) {
    L.shape[i] = shape[i];
    L.src_stride[i] = s[i];
    L.dst_stride[i] = d[i];
  }
  const CopyLayout c = coalesce(L);
  REQUIRE(c.ndim == 2);
  CHECK(c.shape[0] == 6);
  CHECK(c.shape[1] == 4);
  CHECK(c.src_stride[0] == 4);
  CHECK(c.dst_stride[0] == 8);
}

TEST_CASE("copy_strided transposes and converts") {
  std::vector<float> src = {1, 2, 3, 4, 5, 6};  // [2, 3]
  std::vector<double> dst(6);                   // [3, 2] = transpose
  CopyLayout L;
  L.ndim = 2;
  L.shape[0] = 2;
  L.shape[1] = 3;
  L.src_stride[0] = 3;
  L.src_stride[1] = 1;
  L.dst_stride[0] = 1;
  L.dst_stride[1] = 2;
  copy_strided<float, double>(src.data(), dst.data(), L);
  CHECK(dst == std::vector<double>{1, 4, 2, 5, 3, 6});
}
