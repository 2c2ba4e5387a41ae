// run_launch: runs the blocks of a queued launch on one or more workers (when the stream executor
// gets to it), and turns a fault into a KernelFault exception on the executing thread.
// validate_launch: the checks SEG_LAUNCH makes at the call.
#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include "kernels/sim/access_check.h"
#include "kernels/sim/counter_hooks.h"
#include "kernels/sim/device_memory.h"
#include "kernels/sim/sanitizer_hooks.h"
#include "kernels/sim/worker.h"

namespace seg::sim::detail {

void install_segv_handler();                         // signals.cpp
int max_dynamic_smem_attribute(const void* kernel);  // runtime_api.cpp

namespace {

constexpr size_t kDefaultDynamicSmem = 48 * 1024;
constexpr size_t kMaxDynamicSmem = 232448;

size_t default_stack_bytes() { return (san::asan || san::tsan) ? 1024 * 1024 : 256 * 1024; }

[[noreturn]] void config_error(const LaunchRequest& r, const char* cuda_error, const std::string& what) {
  throw KernelFault(FaultKind::launch_config, std::string("seg::sim: ") + cuda_error + ": kernel " + r.kernel_name +
                                                  " launched at " + relative_path(r.file) + ":" +
                                                  std::to_string(r.line) + ": " + what);
}

}  // namespace

void validate_launch(const LaunchRequest& r) {
  const dim3 b = r.block, g = r.grid;
  if (b.x == 0 || b.y == 0 || b.z == 0 || g.x == 0 || g.y == 0 || g.z == 0)
    config_error(r, "cudaErrorInvalidConfiguration",
                 "grid " + dim_text(g) + " or block " + dim_text(b) + " has a zero dimension");
  const uint64_t threads = static_cast<uint64_t>(b.x) * b.y * b.z;
  if (threads > 1024 || b.x > 1024 || b.y > 1024 || b.z > 64)
    config_error(r, "cudaErrorInvalidConfiguration",
                 "block " + dim_text(b) + " has " + std::to_string(threads) +
                     " threads; the limits are 1024 threads per block and (1024, 1024, 64) per dimension");
  if (g.x > 2147483647u || g.y > 65535 || g.z > 65535)
    config_error(r, "cudaErrorInvalidConfiguration",
                 "grid " + dim_text(g) + " exceeds the limits (2^31-1, 65535, 65535)");
  const int attribute = max_dynamic_smem_attribute(r.kernel);
  const size_t limit = attribute > 0 ? static_cast<size_t>(attribute) : kDefaultDynamicSmem;
  if (r.dynamic_smem > limit) {
    if (r.dynamic_smem > kMaxDynamicSmem)
      config_error(r, "cudaErrorInvalidValue",
                   std::to_string(r.dynamic_smem) +
                       " bytes of dynamic shared memory requested; sm_90 allows at most 232448 (227 KiB)");
    config_error(r, "cudaErrorInvalidValue",
                 std::to_string(r.dynamic_smem) + " bytes of dynamic shared memory requested, more than the " +
                     std::to_string(limit) +
                     " allowed for this kernel; above 48 KiB call cudaFuncSetAttribute(kernel, "
                     "cudaFuncAttributeMaxDynamicSharedMemorySize, bytes) first");
  }
}

namespace {

// Runs blocks first, first + stride, ... of the launch on worker w. Static assignment keeps each
// block's schedule reproducible and, under TSan, leaves consecutive blocks on different workers
// with no happens-before edge between them, so races between blocks are reported.
void run_worker(Worker& w, LaunchState& launch, uint64_t first, uint64_t stride) {
  prepare_worker(w, launch);
  for (uint64_t b = first; b < launch.total_blocks; b += stride) {
    if (launch.failed.load(std::memory_order_relaxed)) break;
    run_block(w, b);
    if (w.block.faulted) {
      std::lock_guard<std::mutex> lock(launch.mutex);
      if (!launch.fault || b < launch.fault_block) {
        launch.fault.emplace(w.block.fault_kind, w.block.fault_report);
        launch.fault_block = b;
      }
      launch.failed.store(true, std::memory_order_relaxed);
      break;
    }
  }
  access_release_worker(w);
  counters_release_worker(w);
  std::lock_guard<std::mutex> lock(launch.mutex);
  LaunchStats& s = launch.stats;
  s.blocks += w.stats.blocks;
  s.threads += w.stats.threads;
  s.context_switches += w.stats.context_switches;
  s.barriers += w.stats.barriers;
  s.warp_collectives += w.stats.warp_collectives;
  s.inactive_lane_reads += w.stats.inactive_lane_reads;
  w.launch = nullptr;
}

// Persistent OS threads for Options::workers > 1. The launching thread is worker 0.
class WorkerPool {
 public:
  static WorkerPool& instance() {
    static WorkerPool pool;
    return pool;
  }

  void run(LaunchState& launch, unsigned workers) {
    std::lock_guard<std::mutex> one_at_a_time(run_mutex_);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      while (threads_.size() + 1 < workers) {
        const unsigned index = static_cast<unsigned>(threads_.size()) + 1;
        threads_.emplace_back([this, index] { loop(index); });
      }
      job_ = &launch;
      job_workers_ = workers;
      remaining_ = workers - 1;
      ++generation_;
    }
    start_.notify_all();
    run_worker(this_worker(), launch, 0, workers);
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [this] { return remaining_ == 0; });
    job_ = nullptr;
  }

  ~WorkerPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    start_.notify_all();
    for (std::thread& t : threads_) t.join();
  }

 private:
  void loop(unsigned index) {
    uint64_t seen = 0;
    for (;;) {
      LaunchState* job = nullptr;
      unsigned workers = 0;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        start_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
        job = job_;
        workers = job_workers_;
      }
      if (index < workers) {
        install_segv_handler();
        run_worker(this_worker(), *job, index, workers);
        std::lock_guard<std::mutex> lock(mutex_);
        if (--remaining_ == 0) done_.notify_all();
      }
    }
  }

  std::mutex run_mutex_;
  std::mutex mutex_;
  std::condition_variable start_, done_;
  std::vector<std::thread> threads_;
  LaunchState* job_ = nullptr;
  unsigned job_workers_ = 0;
  unsigned remaining_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

}  // namespace

LaunchResult run_launch(const LaunchRequest& request, const LaunchContext& context) {
  LaunchState launch;
  launch.request = &request;
  launch.context = context;
  launch.options = options();
  launch.block_threads = request.block.x * request.block.y * request.block.z;
  launch.total_blocks = static_cast<uint64_t>(request.grid.x) * request.grid.y * request.grid.z;
  launch.stack_bytes = launch.options.stack_bytes ? launch.options.stack_bytes : default_stack_bytes();
  launch.switch_impl =
      (launch.options.use_ucontext || !has_assembly_switch()) ? SwitchImpl::ucontext : SwitchImpl::assembly;
  install_segv_handler();
  counters_begin_launch(launch);

  const uint64_t workers = std::min<uint64_t>(static_cast<uint64_t>(launch.options.workers), launch.total_blocks);
  if (workers <= 1) {
    run_worker(this_worker(), launch, 0, 1);
  } else {
    WorkerPool::instance().run(launch, static_cast<unsigned>(workers));
  }
  if (launch.options.verbose) {
    const LaunchStats& s = launch.stats;
    std::fprintf(stderr,
                 "seg::sim: %s: %llu blocks, %llu threads, %llu switches, %llu barriers, %llu warp collectives, %llu "
                 "inactive-lane reads\n",
                 request.kernel_name, static_cast<unsigned long long>(s.blocks),
                 static_cast<unsigned long long>(s.threads), static_cast<unsigned long long>(s.context_switches),
                 static_cast<unsigned long long>(s.barriers), static_cast<unsigned long long>(s.warp_collectives),
                 static_cast<unsigned long long>(s.inactive_lane_reads));
  }
  const std::string slack = launch.fault ? std::string() : check_allocation_slack();
  LaunchResult result;
  result.counters = counters_end_launch(launch, launch.fault.has_value() || !slack.empty());
  if (launch.fault) throw *launch.fault;
  if (!slack.empty())
    throw KernelFault(FaultKind::out_of_bounds, std::string("seg::sim: out-of-bounds write: kernel ") +
                                                    request.kernel_name + " launched at " +
                                                    relative_path(request.file) + ":" + std::to_string(request.line) +
                                                    " wrote past the end of device allocations:\n" + slack);
  result.stats = launch.stats;
  if (context.record_accesses) result.touched = merge_accesses(std::move(launch.touched));
  return result;
}

int launch_device() { return running_worker("launch_device").launch->context.device; }
bool launch_may_access_device(int device) {
  const LaunchContext& c = running_worker("launch_may_access_device").launch->context;
  return device >= 0 && device < 64 && (c.accessible_devices >> device & 1u);
}

}  // namespace seg::sim::detail
