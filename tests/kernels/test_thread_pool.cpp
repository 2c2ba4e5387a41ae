#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "kernels/cpu/thread_pool.h"

using namespace seg;

namespace {
// A float reduction whose result depends on the order of additions: the test would catch any
// partitioning that changes with the thread count.
float chunked_sum(const std::vector<float>& v) {
  return parallel_reduce(
      int64_t{0}, static_cast<int64_t>(v.size()), 4096, 0.0f,
      [&](int64_t lo, int64_t hi) {
        float s = 0;
        for (int64_t i = lo; i < hi; ++i) s += v[static_cast<size_t>(i)];
        return s;
      },
      [](float a, float b) { return a + b; });
}

std::vector<float> elementwise(const std::vector<float>& v) {
  std::vector<float> out(v.size());
  parallel_for(0, static_cast<int64_t>(v.size()), 1000, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) out[i] = std::tanh(v[i]) * 3.0f + std::sqrt(std::abs(v[i]));
  });
  return out;
}
}  // namespace

TEST_CASE("1 and 2 (and 3) threads give bit-identical results") {
  std::vector<float> v(1000003);
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(static_cast<float>(i) * 0.37f) * 1e4f + 1e-3f * i;
  const int saved = num_threads();
  set_num_threads(1);
  const float sum1 = chunked_sum(v);
  const std::vector<float> ew1 = elementwise(v);
  set_num_threads(2);
  CHECK(num_threads() == 2);
  const float sum2 = chunked_sum(v);
  const std::vector<float> ew2 = elementwise(v);
  set_num_threads(3);
  const float sum3 = chunked_sum(v);
  CHECK(std::memcmp(&sum1, &sum2, sizeof(float)) == 0);
  CHECK(std::memcmp(&sum1, &sum3, sizeof(float)) == 0);
  CHECK(ew1 == ew2);
  // A naive per-thread split would differ: show the test data is order-sensitive.
  float forward = 0, backward = 0;
  for (float x : v) forward += x;
  for (size_t i = v.size(); i-- > 0;) backward += v[i];
  CHECK(forward != backward);
  set_num_threads(saved);
}

TEST_CASE("static partitioning: thread t always gets slice t") {
  set_num_threads(2);
  std::vector<int> owner(100, -1);
  std::atomic<int> calls{0};
  cpu_pool().run(2, [&](int t) {
    ++calls;
    for (int i = t * 50; i < (t + 1) * 50; ++i) owner[i] = t;
  });
  CHECK(calls == 2);
  for (int i = 0; i < 100; ++i) CHECK(owner[i] == i / 50);
}

TEST_CASE("nested parallel_for runs inline and exceptions reach the caller") {
  set_num_threads(2);
  std::atomic<int64_t> total{0};
  parallel_for(0, 4, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      CHECK(in_parallel_region());
      parallel_for(0, 1000, 1, [&](int64_t a, int64_t b) { total += b - a; });
    }
  });
  CHECK(total == 4000);
  CHECK_FALSE(in_parallel_region());
  CHECK_THROWS_AS(parallel_for(0, 100, 1,
                               [&](int64_t lo, int64_t) {
                                 if (lo > 0) throw std::runtime_error("task failed");
                               }),
                  std::runtime_error);
  // The pool still works after a failed task.
  std::atomic<int> n{0};
  parallel_for(0, 10, 1, [&](int64_t lo, int64_t hi) { n += static_cast<int>(hi - lo); });
  CHECK(n == 10);
}

TEST_CASE("many small runs in a row (pool reuse, no lost wake-ups)") {
  set_num_threads(2);
  int64_t sum = 0;
  for (int rep = 0; rep < 5000; ++rep) {
    std::vector<int64_t> part(2, 0);
    cpu_pool().run(2, [&](int t) { part[t] = t + rep; });
    sum += part[0] + part[1];
  }
  CHECK(sum == 5000 * 1 + 2 * (4999 * 5000 / 2));
}

// A bool reduction (the loss scaler's found-inf check, kernels/cpu/amp.cpp) with neighbouring chunks
// on different threads: the partial results must not share a word (std::vector<bool> did, and TSan
// reported the threads' writes racing; a lost bit is an overflow that is not skipped).
TEST_CASE("parallel_reduce of bools: every chunk's result counts, with several threads") {
  const int saved = num_threads();
  set_num_threads(2);
  for (int64_t hit = 0; hit < 64; ++hit) {
    const bool any = parallel_reduce(
        int64_t{0}, int64_t{64}, 1, false, [&](int64_t lo, int64_t hi) { return lo <= hit && hit < hi; },
        [](bool a, bool b) { return a || b; });
    CHECK_MESSAGE(any, "the chunk of element " << hit << " was lost");
  }
  set_num_threads(saved);
}
