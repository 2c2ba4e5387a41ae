// Storage: one block of device memory, owned through shared_ptr by every tensor that views it.
// Memory comes from the device's caching allocator and goes back to it when the last view dies.
//
// Streams: a CUDA block belongs to the stream current at its allocation (core/allocator.h). Code that
// lets another stream read or write it (a copy on the copy stream, a pinned host buffer a copy reads
// asynchronously) calls record_stream(s), so the allocator reuses the block only after that stream's
// work queued so far has finished.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "core/device.h"
#include "kernels/cuda/stream.h"

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
  Allocator* allocator() const { return allocator_; }

  // Work queued on `stream` may use this block: its reuse waits for that work (see above).
  void record_stream(cuda::Stream stream);

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
  Device device_;
  Allocator* allocator_ = nullptr;
  std::mutex streams_mutex_;
  std::vector<cuda::Stream> streams_;  // streams recorded by record_stream, without repeats
};

}  // namespace seg
