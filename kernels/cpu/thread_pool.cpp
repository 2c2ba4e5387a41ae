#include "kernels/cpu/thread_pool.h"

#include <cstdlib>
#include <memory>
#include <string>

namespace seg {

namespace {
thread_local bool t_in_task = false;

struct TaskScope {
  bool previous;
  TaskScope() : previous(t_in_task) { t_in_task = true; }
  ~TaskScope() { t_in_task = previous; }
};
}  // namespace

bool in_parallel_region() { return t_in_task; }

ThreadPool::ThreadPool(int num_threads) : num_threads_(std::max(1, num_threads)) {
  for (int id = 1; id < num_threads_; ++id) workers_.emplace_back([this, id] { worker_loop(id); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::worker_loop(int id) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int)>* task = nullptr;
    int num_tasks = 0;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      task = task_;
      num_tasks = num_tasks_;
    }
    if (id < num_tasks) {
      TaskScope scope;
      try {
        (*task)(id);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!error_) error_ = std::current_exception();
      }
    }
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> lock(mutex_);
      done_.notify_one();
    }
  }
}

void ThreadPool::run(int num_tasks, const std::function<void(int)>& task) {
  std::unique_lock<std::mutex> run_lock(run_mutex_, std::try_to_lock);
  if (num_tasks <= 1 || num_threads_ == 1 || t_in_task || !run_lock.owns_lock()) {
    // Inline: the caller runs every task in order (same results, see the header).
    TaskScope scope;
    for (int t = 0; t < num_tasks; ++t) task(t);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    task_ = &task;
    num_tasks_ = std::min(num_tasks, num_threads_);
    pending_.store(num_threads_ - 1, std::memory_order_relaxed);
    error_ = nullptr;
    ++generation_;
  }
  wake_.notify_all();
  std::exception_ptr caller_error;
  {
    TaskScope scope;
    try {
      task(0);
    } catch (...) {
      caller_error = std::current_exception();
    }
  }
  {
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [&] { return pending_.load(std::memory_order_acquire) == 0; });
    if (!caller_error) caller_error = error_;
  }
  if (caller_error) std::rethrow_exception(caller_error);
}

namespace {
std::mutex g_pool_mutex;
std::unique_ptr<ThreadPool> g_pool;
int g_requested = 0;

int default_threads() {
  if (const char* env = std::getenv("SEG_NUM_THREADS")) {
    const int n = std::atoi(env);
    if (n > 0) return n;
  }
  const unsigned hw = std::thread::hardware_concurrency();
  return hw ? static_cast<int>(hw) : 1;
}
}  // namespace

ThreadPool& cpu_pool() {
  std::lock_guard<std::mutex> lock(g_pool_mutex);
  if (!g_pool) g_pool = std::make_unique<ThreadPool>(g_requested > 0 ? g_requested : default_threads());
  return *g_pool;
}

void set_num_threads(int n) {
  std::lock_guard<std::mutex> lock(g_pool_mutex);
  g_requested = std::max(1, n);
  if (!g_pool || g_pool->size() != g_requested) g_pool = std::make_unique<ThreadPool>(g_requested);
}

int num_threads() { return cpu_pool().size(); }

}  // namespace seg
