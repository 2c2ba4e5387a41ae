#include "data/batch_memory.h"

#include "core/allocator.h"

namespace seg::data {

bool batch_memory_is_pinned() {
  static const bool pinned = pinned_host_memory_available();
  return pinned;
}

Tensor new_batch_tensor(const Shape& shape, DType dtype) {
  return batch_memory_is_pinned() ? Tensor::empty_pinned(shape, dtype) : Tensor::empty(shape, dtype, Device::cpu());
}

}  // namespace seg::data
