#include "core/storage.h"

#include "core/allocator.h"

namespace seg {

Storage::Storage(size_t bytes, Device device) : bytes_(bytes), device_(device) {
  data_ = allocator_for(device).allocate(bytes ? bytes : 1);
}

Storage::~Storage() { allocator_for(device_).deallocate(data_, bytes_ ? bytes_ : 1); }

}  // namespace seg
