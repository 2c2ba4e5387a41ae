// Philox4x32-10 counter-based random numbers (Salmon et al., "Parallel random numbers: as easy as
// 1, 2, 3", SC 2011), shared by CPU and CUDA kernels.
//
// A counter-based generator is a pure function (counter, key) -> 4 random 32-bit words. Nothing is
// stored between calls, so every element of a tensor can draw its own numbers independently (any
// thread, any device, any order) and still get the same result: that is what makes dropout masks
// and augmentation identical on 1 or N threads, on the CPU and on the GPU.
//
// Ten rounds of: two 32x32->64 multiplies that mix lanes, then a key bump by the Weyl constants.
#pragma once

#include <cstdint>

#include "kernels/common/hostdevice.h"

namespace seg {

struct PhiloxCounter {
  uint32_t c[4];
};
struct PhiloxKey {
  uint32_t k[2];
};

SEG_HD_INLINE PhiloxCounter philox4x32_10(PhiloxCounter ctr, PhiloxKey key) {
  constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(kMul0) * ctr.c[0];
    const uint64_t p1 = static_cast<uint64_t>(kMul1) * ctr.c[2];
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    PhiloxCounter next;
    next.c[0] = hi1 ^ ctr.c[1] ^ key.k[0];
    next.c[1] = lo1;
    next.c[2] = hi0 ^ ctr.c[3] ^ key.k[1];
    next.c[3] = lo0;
    ctr = next;
    key.k[0] += kWeyl0;
    key.k[1] += kWeyl1;
  }
  return ctr;
}

// The top 24 bits of a word as a float in [0, 1): every value is exactly representable.
SEG_HD_INLINE float philox_uniform(uint32_t word) { return static_cast<float>(word >> 8) * (1.0f / 16777216.0f); }

}  // namespace seg
