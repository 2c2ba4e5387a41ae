// OrderedWorkers: a fixed set of worker threads that run jobs in parallel and hand the results back
// in submission order, with a bounded number of jobs in flight. It is the loader's engine.
//
//   OrderedWorkers<Plan, Batch> w(2, [&](const Plan& p) { return dataset.load(p); });
//   w.submit(plan0); w.submit(plan1);  // caller thread: tickets 0, 1
//   Batch b0 = w.take();                // ticket 0's result, however the workers raced
//
// Why results come back in order: the training loop must see the same batches whatever the number
// of workers (DESIGN decision 11). Jobs may finish out of order; take() waits for the oldest.
// Bounding: the caller decides how many jobs to submit ahead (the loader keeps `prefetch` in
// flight), so memory stays bounded by prefetch + workers results.
// Errors: an exception thrown by a job is stored with its ticket and rethrown by the take() that
// reaches it, on the caller's thread; later jobs are unaffected.
// With 0 workers, take() runs the oldest job on the calling thread (no threads at all).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "core/error.h"

namespace seg::data {

template <class Job, class Result>
class OrderedWorkers {
 public:
  using Fn = std::function<Result(const Job&)>;

  OrderedWorkers(int num_workers, Fn fn) : fn_(std::move(fn)) {
    for (int i = 0; i < num_workers; ++i) threads_.emplace_back([this] { worker_loop(); });
  }

  ~OrderedWorkers() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    job_ready_.notify_all();
    for (std::thread& t : threads_) t.join();
  }

  OrderedWorkers(const OrderedWorkers&) = delete;
  OrderedWorkers& operator=(const OrderedWorkers&) = delete;

  int num_workers() const { return static_cast<int>(threads_.size()); }

  // Queues a job; its result will be the (pending()+1)-th take() from now.
  void submit(Job job) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      jobs_.emplace_back(next_ticket_++, std::move(job));
    }
    job_ready_.notify_one();
  }

  // Jobs submitted and not yet taken.
  int64_t pending() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return static_cast<int64_t>(next_ticket_ - next_take_);
  }

  // The oldest job's result; blocks until it is ready. Rethrows the job's exception.
  // `waited` receives the seconds spent blocked (the loader's data-wait time).
  Result take(double* waited = nullptr) {
    const auto t0 = std::chrono::steady_clock::now();
    std::unique_lock<std::mutex> lock(mutex_);
    SEG_ASSERT(next_take_ < next_ticket_, "take() without a submitted job");
    const uint64_t ticket = next_take_++;
    if (threads_.empty()) {
      // No workers: run it here. The job is the front of the queue by construction.
      std::pair<uint64_t, Job> job = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      if (waited) *waited = 0.0;  // the caller did the work itself; that is not waiting
      return fn_(job.second);
    }
    result_ready_.wait(lock, [&] { return done_.count(ticket) > 0; });
    Done d = std::move(done_.at(ticket));
    done_.erase(ticket);
    lock.unlock();
    if (waited) *waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (d.error) std::rethrow_exception(d.error);
    return std::move(*d.result);
  }

 private:
  struct Done {
    std::optional<Result> result;
    std::exception_ptr error;
  };

  void worker_loop() {
    for (;;) {
      std::pair<uint64_t, Job> job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        job_ready_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
        if (stop_) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      Done d;
      try {
        d.result.emplace(fn_(job.second));
      } catch (...) {
        d.error = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> lock(mutex_);
        done_.emplace(job.first, std::move(d));
      }
      result_ready_.notify_all();
    }
  }

  Fn fn_;
  mutable std::mutex mutex_;
  std::condition_variable job_ready_;
  std::condition_variable result_ready_;
  std::deque<std::pair<uint64_t, Job>> jobs_;  // submitted, not started
  std::map<uint64_t, Done> done_;              // finished, not taken
  uint64_t next_ticket_ = 0;
  uint64_t next_take_ = 0;
  bool stop_ = false;
  std::vector<std::thread> threads_;  // last member: threads start after everything above exists
};

}  // namespace seg::data
