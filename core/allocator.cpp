#include "core/allocator.h"

#include <cstdlib>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/error.h"


namespace seg {

size_t allocator_size_class(size_t bytes) {
  if (bytes <= 64) return 64;
  if (bytes <= 4096) return (bytes + 63) / 64 * 64;
  size_t pow2 = 4096;
  while (pow2 * 2 <= bytes) pow2 *= 2;
  const size_t step = pow2 / 4;
  return (bytes + step - 1) / step * step;
}

namespace {

// A caching allocator over a pair of system functions. Thread-safe: loader threads allocate too.
class CachingAllocator final : public Allocator {
 public:
  using SysAlloc = void* (*)(size_t bytes, int device_index);
  using SysFree = void (*)(void* ptr, int device_index);

  CachingAllocator(Device device, SysAlloc sys_alloc, SysFree sys_free)
      : device_(device), sys_alloc_(sys_alloc), sys_free_(sys_free) {}
  ~CachingAllocator() override { release_cached(); }

  void* allocate(size_t bytes) override {
    const size_t size = allocator_size_class(bytes);
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.requests;
    void* ptr = nullptr;
    auto it = free_lists_.find(size);
    if (it != free_lists_.end() && !it->second.empty()) {
      ptr = it->second.back();
      it->second.pop_back();
      stats_.cached_bytes -= size;
      ++stats_.cache_hits;
    } else {
      ptr = sys_alloc_(size, device_.index);
      if (!ptr) {  // give the cache back to the system and try once more
        release_cached_locked();
        ptr = sys_alloc_(size, device_.index);
      }
      if (!ptr)
        throw Error(ErrorKind::device, str("out of memory on ", device_.str(), " allocating ", size, " bytes (",
                                           stats_.in_use_bytes, " bytes in use)"))
            .hint("reduce TRAIN.batch_size_per_gpu or the image sizes, or use --amp O2 to halve activation memory");
      ++stats_.system_allocs;
    }
    stats_.in_use_bytes += size;
    if (stats_.in_use_bytes > stats_.peak_bytes) stats_.peak_bytes = stats_.in_use_bytes;
    return ptr;
  }

  void deallocate(void* ptr, size_t bytes) override {
    if (!ptr) return;
    const size_t size = allocator_size_class(bytes);
    std::lock_guard<std::mutex> lock(mutex_);
    free_lists_[size].push_back(ptr);
    stats_.cached_bytes += size;
    stats_.in_use_bytes -= size;
  }

  AllocatorStats stats() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }

  void reset_peak() override {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.peak_bytes = stats_.in_use_bytes;
  }

  void release_cached() override {
    std::lock_guard<std::mutex> lock(mutex_);
    release_cached_locked();
  }

 private:
  void release_cached_locked() {
    for (auto& [size, list] : free_lists_) {
      for (void* p : list) sys_free_(p, device_.index);
      stats_.cached_bytes -= size * list.size();
      list.clear();
    }
  }

  Device device_;
  SysAlloc sys_alloc_;
  SysFree sys_free_;
  mutable std::mutex mutex_;
  std::unordered_map<size_t, std::vector<void*>> free_lists_;
  AllocatorStats stats_;
};

void* cpu_sys_alloc(size_t bytes, int) { return std::aligned_alloc(64, bytes); }
void cpu_sys_free(void* ptr, int) { std::free(ptr); }

}  // namespace

Allocator& allocator_for(Device device) {
  if (device.is_cpu()) {
    static CachingAllocator cpu(Device::cpu(), cpu_sys_alloc, cpu_sys_free);
    return cpu;
  }
#ifdef SEG_WITH_CUDA
  return cuda_device_allocator(device);
#else
  throw Error(ErrorKind::device, str("device ", device.str(), " requested, but this segtrain was built without CUDA"))
      .hint("rebuild with -DSEG_CUDA=ON on a machine with the CUDA toolkit, or use --device cpu");
#endif
}

bool pinned_host_memory_available() { return cuda_compiled() && cuda_device_count() > 0; }

Allocator& pinned_host_allocator() {
  if (!pinned_host_memory_available())
    throw Error(ErrorKind::device, "pinned host memory needs a CUDA build and a CUDA device")
        .hint("check pinned_host_memory_available() first");
#ifdef SEG_WITH_CUDA
  return cuda_pinned_allocator();
#else
  SEG_FAIL(runtime, "unreachable: pinned memory reported available in a build without CUDA");
#endif
}

bool is_pinned_host_pointer(const void* ptr) {
#ifdef SEG_WITH_CUDA
  return cuda_pinned_owns(ptr);
#else
  (void)ptr;
  return false;
#endif
}

}  // namespace seg
