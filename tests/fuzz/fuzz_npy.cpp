// Fuzz target: .npy files (core/npy.h). An accepted array must serialise back to bytes that parse
// to the same shape, dtype and data.
#include "core/npy.h"

#include <cstring>

#include "core/error.h"
#include "tests/fuzz/fuzz_targets.h"

namespace seg::fuzz {

int npy(const uint8_t* data, size_t size) {
  const std::vector<char> bytes(reinterpret_cast<const char*>(data), reinterpret_cast<const char*>(data) + size);
  try {
    const Tensor t = parse_npy(bytes, "fuzz.npy");
    const Tensor u = parse_npy(serialize_npy(t), "round trip");
    if (u.shape() != t.shape() || u.dtype() != t.dtype() || u.nbytes() != t.nbytes() ||
        (t.nbytes() > 0 && std::memcmp(u.data_ptr(), t.data_ptr(), t.nbytes()) != 0))
      property_failed("npy", "array changed in a round trip");
  } catch (const Error&) {
  }
  return 0;
}

}  // namespace seg::fuzz

SEG_FUZZ_ENTRY(npy)
