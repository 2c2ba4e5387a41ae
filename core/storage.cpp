#include "core/storage.h"

#include <algorithm>

#include "core/allocator.h"

namespace seg {

Storage::Storage(size_t bytes, Device device) : Storage(bytes, device, allocator_for(device)) {}

Storage::Storage(size_t bytes, Device device, Allocator& allocator)
    : bytes_(bytes), device_(device), allocator_(&allocator) {
  data_ = allocator.allocate(bytes ? bytes : 1);
}

Storage::~Storage() {
  if (streams_.empty()) allocator_->deallocate(data_, bytes_ ? bytes_ : 1);
  else allocator_->deallocate_after(data_, bytes_ ? bytes_ : 1, streams_);
}

void Storage::record_stream(cuda::Stream stream) {
  std::lock_guard<std::mutex> lock(streams_mutex_);
  if (std::find(streams_.begin(), streams_.end(), stream) == streams_.end()) streams_.push_back(stream);
}

}  // namespace seg
