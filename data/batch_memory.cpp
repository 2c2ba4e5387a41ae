#include "data/batch_memory.h"

namespace seg::data {

bool batch_memory_is_pinned() { return false; }

Tensor new_batch_tensor(const Shape& shape, DType dtype) {
  // PINNED-MEMORY HOOK (CUDA builds): allocate from a pinned host allocator here.
  return Tensor::empty(shape, dtype, Device::cpu());
}

}  // namespace seg::data
