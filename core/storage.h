// Storage: one block of device memory, owned through shared_ptr by every tensor that views it.
// Memory comes from the device's caching allocator and goes back to it when the last view dies.
#pragma once

#include <cstddef>
#include <memory>

#include "core/device.h"

namespace seg {

class Allocator;

class Storage {
 public:
  Storage(size_t bytes, Device device);
  // Memory from a specific allocator, e.g. pinned_host_allocator() for a CPU tensor that the GPU
  // copies from asynchronously. The block goes back to the same allocator.
  Storage(size_t bytes, Device device, Allocator& allocator);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  Device device() const { return device_; }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
  Device device_;
  Allocator* allocator_ = nullptr;
};

}  // namespace seg
