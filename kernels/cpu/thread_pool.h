// The one CPU thread pool: a fixed number of threads and static partitioning (DESIGN decision 11).
//
// Why not OpenMP or work stealing: results must be bit-identical for a given seed and thread count,
// and TSan must be able to check the code. Here thread t always gets the t-th contiguous slice of
// the work, so nothing depends on timing.
//
// Why it lives in kernels/ and not core/: the CPU kernels are what runs on it, and dependencies point
// downward (core -> kernels), so the pool sits with its users. Kernels never throw; a task that does
// (layer code) has its first exception re-thrown on the calling thread.
//
// Rules that keep results independent of the thread count:
//  * elementwise work: parallel_for() splits [begin, end) into one slice per thread; each element is
//    computed the same way whatever the slicing.
//  * reductions: parallel_reduce() cuts the range into chunks of a fixed `grain` (not per thread),
//    reduces each chunk serially, and combines the chunk results in chunk order on the caller. So 1 and
//    8 threads add the same numbers in the same order.
//
// Calls from inside a pool task, or from a thread while another thread is using the pool (loader
// workers), run inline on the calling thread: same results, no deadlock.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace seg {

class ThreadPool {
 public:
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return num_threads_; }

  // Runs task(t) for t in [0, num_tasks), num_tasks <= size(); task t runs on thread t (0 = caller).
  void run(int num_tasks, const std::function<void(int)>& task);

 private:
  void worker_loop(int id);

  int num_threads_;
  std::vector<std::thread> workers_;
  std::mutex run_mutex_;  // one run() at a time; others run inline
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  uint64_t generation_ = 0;
  bool stop_ = false;
  const std::function<void(int)>* task_ = nullptr;
  int num_tasks_ = 0;
  std::atomic<int> pending_{0};
  std::exception_ptr error_;
};

// The process-wide pool. Its size comes from set_num_threads(), else SEG_NUM_THREADS, else the
// number of hardware threads.
ThreadPool& cpu_pool();
void set_num_threads(int n);  // recreates the pool; call between ops, never from a task
int num_threads();

// True inside a pool task (nested parallel calls then run inline).
bool in_parallel_region();

// parallel_for(begin, end, grain, fn(lo, hi)): one contiguous slice per thread; at least `grain`
// elements per slice so small ranges stay on one thread.
template <class F>
void parallel_for(int64_t begin, int64_t end, int64_t grain, F&& fn) {
  const int64_t n = end - begin;
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  const int64_t max_slices = (n + grain - 1) / grain;
  const int slices = static_cast<int>(std::min<int64_t>(max_slices, in_parallel_region() ? 1 : num_threads()));
  if (slices <= 1) {
    fn(begin, end);
    return;
  }
  cpu_pool().run(slices, [&](int t) {
    const int64_t lo = begin + n * t / slices;
    const int64_t hi = begin + n * (t + 1) / slices;
    if (lo < hi) fn(lo, hi);
  });
}

// parallel_reduce(begin, end, grain, init, chunk_fn(lo, hi) -> T, combine(T, T) -> T):
// chunk boundaries are multiples of `grain` from `begin`, fixed whatever the thread count.
template <class T, class ChunkFn, class Combine>
T parallel_reduce(int64_t begin, int64_t end, int64_t grain, T init, ChunkFn&& chunk_fn, Combine&& combine) {
  const int64_t n = end - begin;
  if (n <= 0) return init;
  grain = std::max<int64_t>(grain, 1);
  const int64_t chunks = (n + grain - 1) / grain;
  // One whole object per chunk: std::vector<bool> would pack the partial results of different
  // threads into one word, and their writes would race (TSan found it on the found-inf check of
  // the loss scaler: a lost bit is an overflow not skipped).
  struct Slot {
    T value;
  };
  std::vector<Slot> partial(static_cast<size_t>(chunks), Slot{init});
  parallel_for(0, chunks, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      const int64_t lo = begin + c * grain;
      partial[static_cast<size_t>(c)].value = chunk_fn(lo, std::min(end, lo + grain));
    }
  });
  T acc = init;
  for (const Slot& p : partial) acc = combine(acc, p.value);
  return acc;
}

}  // namespace seg
