#include "core/storage.h"

#include "core/allocator.h"

namespace seg {

Storage::Storage(size_t bytes, Device device) : Storage(bytes, device, allocator_for(device)) {}

Storage::Storage(size_t bytes, Device device, Allocator& allocator)
    : bytes_(bytes), device_(device), allocator_(&allocator) {
  data_ = allocator.allocate(bytes ? bytes : 1);
}

Storage::~Storage() { allocator_->deallocate(data_, bytes_ ? bytes_ : 1); }

}  // namespace seg
