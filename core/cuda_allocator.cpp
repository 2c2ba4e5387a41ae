// The stream-aware caching allocators of CUDA builds: device memory (cudaMalloc) per device, and
// pinned host memory (cudaHostAlloc). The rules are in core/allocator.h.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/allocator.h"
#include "core/error.h"
#include "core/profiler.h"
#include "core/stream.h"

#ifdef SEG_WITH_CUDA
#include <cuda_runtime.h>

namespace seg {

namespace {

bool poison_default() {
  const char* v = std::getenv("SEG_CUDA_POISON_FREED");
  return v && *v && std::strcmp(v, "0") != 0;
}
bool& poison_flag() {
  static bool on = poison_default();
  return on;
}

std::string mib(size_t bytes) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

// Events for pending frees, recycled (cudaEventCreate is not free), per device: an event can only
// be recorded on a stream of the device it was created on, and pinned host memory is shared by
// every GPU's streams (several with --gpus 0-3).
class EventPool {
 public:
  // An event of the device `stream` belongs to.
  cudaEvent_t get(cuda::Stream stream) {
    int device = 0;
    check_cuda(cudaStreamGetDevice(stream, &device), "asking which device a stream belongs to");
    std::vector<cudaEvent_t>& free = free_[device];
    if (!free.empty()) {
      cudaEvent_t e = free.back();
      free.pop_back();
      return e;
    }
    int current = 0;
    check_cuda(cudaGetDevice(&current), "asking for the current device");
    if (current != device) check_cuda(cudaSetDevice(device), "selecting a stream's device");
    cudaEvent_t e = nullptr;
    const cudaError_t err = cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
    if (current != device) (void)cudaSetDevice(current);
    check_cuda(err, "creating an allocator event");
    device_of_[e] = device;
    return e;
  }
  void put(cudaEvent_t e) { free_[device_of_.at(e)].push_back(e); }

 private:
  std::map<int, std::vector<cudaEvent_t>> free_;
  std::map<cudaEvent_t, int> device_of_;
};

// A block waiting for events before it may be reused.
struct Pending {
  void* ptr;
  size_t size;
  cuda::Stream home;
  std::vector<cudaEvent_t> events;
};

// Caching allocator for one device or for pinned host memory. Free lists are keyed by (home stream,
// size class); for pinned memory the home is always null.
class StreamCachingAllocator final : public Allocator {
 public:
  StreamCachingAllocator(Device device, bool pinned) : device_(device), pinned_(pinned) {}
  ~StreamCachingAllocator() override = default;  // the process is ending: leave the memory to the driver

  void* allocate(size_t bytes) override {
    const size_t size = allocator_size_class(bytes);
    const cuda::Stream home = pinned_ ? nullptr : current_stream(device_);
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.requests;
    collect_completed_locked();
    void* ptr = nullptr;
    auto it = free_.find({home, size});
    if (it != free_.end() && !it->second.empty()) {
      ptr = it->second.back();
      it->second.pop_back();
      stats_.cached_bytes -= size;
      ++stats_.cache_hits;
    } else {
      ptr = sys_alloc(size);
      if (!ptr) {  // give the cache back to the driver and try once more
        release_cached_locked();
        ptr = sys_alloc(size);
      }
      if (!ptr) throw out_of_memory(size);
      ++stats_.system_allocs;
    }
    live_[ptr] = {size, home};
    stats_.in_use_bytes += size;
    if (stats_.in_use_bytes > stats_.peak_bytes) stats_.peak_bytes = stats_.in_use_bytes;
    return ptr;
  }

  void deallocate(void* ptr, size_t bytes) override { deallocate_after(ptr, bytes, {}); }

  void deallocate_after(void* ptr, size_t bytes, const std::vector<cuda::Stream>& streams) override {
    if (!ptr) return;
    (void)bytes;
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_.find(ptr);
    SEG_ASSERT(it != live_.end(), "freeing a block this allocator does not own");
    const auto [size, home] = it->second;
    live_.erase(it);
    stats_.in_use_bytes -= size;
    Pending p{ptr, size, home, {}};
    for (cuda::Stream s : streams) {
      if (!pinned_ && s == home) continue;  // ordered by the home stream itself
      cudaEvent_t e = events_.get(s);
      check_cuda(cudaEventRecord(e, s), "recording a stream's last use of a freed block");
      p.events.push_back(e);
    }
    if (p.events.empty()) {
      make_free_locked(ptr, size, home);
    } else {
      pending_.push_back(std::move(p));
    }
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

  bool owns(const void* p) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_.upper_bound(const_cast<void*>(p));
    if (it == live_.begin()) return false;
    --it;
    return static_cast<const char*>(p) < static_cast<const char*>(it->first) + it->second.first;
  }

 private:
  void* sys_alloc(size_t size) {
    void* ptr = nullptr;
    if (pinned_) {
      // Portable: pinned for every device of the process, not only the current one.
      if (cudaHostAlloc(&ptr, size, cudaHostAllocPortable) != cudaSuccess) ptr = nullptr;
    } else {
      set_current_cuda_device(device_.index);
      if (cudaMalloc(&ptr, size) != cudaSuccess) ptr = nullptr;
    }
    if (!ptr) (void)cudaGetLastError();
    return ptr;
  }

  void sys_free(void* ptr) {
    if (pinned_) {
      cudaFreeHost(ptr);
    } else {
      set_current_cuda_device(device_.index);
      cudaFree(ptr);
    }
  }

  void make_free_locked(void* ptr, size_t size, cuda::Stream home) {
    if (!pinned_ && poison_flag())
      check_cuda(cudaMemsetAsync(ptr, 0xFF, size, home), "poisoning a freed block (SEG_CUDA_POISON_FREED)");
    free_[{home, size}].push_back(ptr);
    stats_.cached_bytes += size;
  }

  void collect_completed_locked() {
    for (size_t i = 0; i < pending_.size();) {
      Pending& p = pending_[i];
      bool done = true;
      for (cudaEvent_t e : p.events) {
        const cudaError_t err = cudaEventQuery(e);
        if (err == cudaErrorNotReady) {
          done = false;
          break;
        }
        check_cuda(err, "querying a freed block's event");
      }
      if (!done) {
        ++i;
        continue;
      }
      for (cudaEvent_t e : p.events) events_.put(e);
      make_free_locked(p.ptr, p.size, p.home);
      pending_[i] = std::move(pending_.back());
      pending_.pop_back();
    }
  }

  void release_cached_locked() {
    if (!pinned_) {
      set_current_cuda_device(device_.index);
      (void)cudaDeviceSynchronize();  // poisoning memsets may still be queued
    }
    for (auto& [key, list] : free_) {
      for (void* p : list) sys_free(p);
      stats_.cached_bytes -= key.second * list.size();
      list.clear();
    }
  }

  Error out_of_memory(size_t size) const {
    const prof::OpContext op = prof::current_op();
    size_t free_bytes = 0, total_bytes = 0;
    if (!pinned_ && cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) (void)cudaGetLastError();
    std::string where = pinned_ ? "pinned host memory" : device_.str();
    std::string msg = str("out of memory on ", where, op.op ? str(" in op '", op.op, "' (", op.phase, ")") : std::string(),
                          ": allocating ", mib(size), " with ", mib(stats_.in_use_bytes), " in use by tensors");
    if (total_bytes) msg += str(" (the device has ", mib(total_bytes), ", ", mib(free_bytes), " free)");
    Error e(ErrorKind::device, msg);
    if (op.op) e.op(op.op);
    e.with("request", mib(size)).with("in use", mib(stats_.in_use_bytes));
    e.hint("reduce TRAIN.batch_size_per_gpu or the image sizes, or use --amp O2 to halve activation memory");
    return e;
  }

  struct KeyHash {
    size_t operator()(const std::pair<cuda::Stream, size_t>& k) const {
      return std::hash<const void*>()(k.first) ^ (k.second * 0x9E3779B97F4A7C15ull);
    }
  };

  Device device_;
  bool pinned_;
  mutable std::mutex mutex_;
  std::unordered_map<std::pair<cuda::Stream, size_t>, std::vector<void*>, KeyHash> free_;
  std::map<void*, std::pair<size_t, cuda::Stream>> live_;  // ordered: owns() finds the block of an inner pointer
  std::vector<Pending> pending_;
  EventPool events_;
  AllocatorStats stats_;
};

StreamCachingAllocator& pinned_instance() {
  static StreamCachingAllocator pinned(Device::cpu(), true);
  return pinned;
}

}  // namespace

void set_cuda_poison_freed(bool on) { poison_flag() = on; }
bool cuda_poison_freed() { return poison_flag(); }

Allocator& cuda_device_allocator(Device device) {
  static std::mutex mutex;
  static std::vector<std::unique_ptr<StreamCachingAllocator>> gpus;
  std::lock_guard<std::mutex> lock(mutex);
  const int count = cuda_device_count();
  if (device.index < 0 || device.index >= count)
    throw Error(ErrorKind::device, str("device ", device.str(), " is not available (", count, " CUDA device(s) found)"))
        .hint("check --gpus, CUDA_VISIBLE_DEVICES and nvidia-smi");
  if (gpus.size() < static_cast<size_t>(count)) gpus.resize(count);
  if (!gpus[device.index]) gpus[device.index] = std::make_unique<StreamCachingAllocator>(device, false);
  return *gpus[device.index];
}

Allocator& cuda_pinned_allocator() { return pinned_instance(); }

bool cuda_pinned_owns(const void* ptr) {
#ifdef SEG_SIMULATED_GPU
  return pinned_instance().owns(ptr);
#else
  // Ask the driver: the truth about the page, not only this allocator's records.
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, ptr) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return attr.type == cudaMemoryTypeHost;
#endif
}

}  // namespace seg

#endif  // SEG_WITH_CUDA
