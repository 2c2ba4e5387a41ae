// Fuzz target: safetensors files (core/safetensors.h). An accepted file must serialise back to bytes
// that parse to the same names, shapes, dtypes, data and metadata.
#include "core/safetensors.h"

#include <cstring>

#include "core/error.h"
#include "tests/fuzz/fuzz_targets.h"

namespace seg::fuzz {

int safetensors(const uint8_t* data, size_t size) {
  const std::vector<char> bytes(reinterpret_cast<const char*>(data), reinterpret_cast<const char*>(data) + size);
  try {
    const SafetensorsFile f = parse_safetensors(bytes, "fuzz.safetensors");
    const SafetensorsFile g = parse_safetensors(serialize_safetensors(f.tensors, f.metadata), "round trip");
    if (g.metadata != f.metadata) property_failed("safetensors", "metadata changed in a round trip");
    for (const auto& [name, t] : f.tensors) {
      const Tensor* u = g.find(name);
      if (!u || u->shape() != t.shape() || u->dtype() != t.dtype() || u->nbytes() != t.nbytes() ||
          (t.nbytes() > 0 && std::memcmp(u->data_ptr(), t.data_ptr(), t.nbytes()) != 0))
        property_failed("safetensors", "tensor '" + name + "' changed in a round trip");
    }
    if (g.tensors.size() != f.tensors.size()) property_failed("safetensors", "tensor count changed in a round trip");
  } catch (const Error&) {
  }
  return 0;
}

}  // namespace seg::fuzz

SEG_FUZZ_ENTRY(safetensors)
