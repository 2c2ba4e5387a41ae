// Streams and events have a GPU's semantics in the simulator (docs/cuda-simulator.md, "Streams and
// events"): work runs in order per stream, asynchronously to the host, ordered across streams only
// by events, the legacy default stream and host synchronisation.
#include <cuda_runtime.h>

#include <cmath>
#include <cstring>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "tests/sim/sim_test_util.h"
#include "tests/sim/stream_test_kernels.h"

using simtest::DeviceBuffer;
namespace ks = simtest::streams;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Pinned host memory: kernels may write it directly, and the host sees when they did.
template <class T>
class PinnedBuffer {
 public:
  explicit PinnedBuffer(size_t n) : n_(n) { REQUIRE(cudaMallocHost(&p_, n * sizeof(T)) == cudaSuccess); }
  ~PinnedBuffer() { cudaFreeHost(p_); }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  T* get() const { return static_cast<T*>(p_); }
  T& operator[](size_t i) const { return get()[i]; }
  std::vector<T> values() const { return std::vector<T>(get(), get() + n_); }

 private:
  void* p_ = nullptr;
  size_t n_;
};

// `races`: whether the race detector runs. The tests of unordered work turn it off: their kernels
// append to one log with atomics, unordered on purpose, which the detector (rightly, as far as it
// can tell from the pointer arguments) reports.
seg::sim::Options stream_order(seg::sim::StreamOrder order, uint64_t seed = 1, bool races = true) {
  seg::sim::Options o;
  o.stream_order = order;
  o.seed = seed;
  o.race_check = races;
  return o;
}

// The tags of a log written by append_tag kernels, after synchronising.
std::vector<int> tags(const PinnedBuffer<int>& log, const PinnedBuffer<int>& count) {
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  return std::vector<int>(log.get(), log.get() + count[0]);
}

struct Streams {
  cudaStream_t a = nullptr, b = nullptr;
  explicit Streams(unsigned flags = cudaStreamDefault) {
    REQUIRE(cudaStreamCreateWithFlags(&a, flags) == cudaSuccess);
    REQUIRE(cudaStreamCreateWithFlags(&b, flags) == cudaSuccess);
  }
  ~Streams() {
    cudaStreamDestroy(a);
    cudaStreamDestroy(b);
  }
};

}  // namespace

TEST_CASE("streams: a launch runs when the host synchronises, in stream order") {
  const int n = 100;
  PinnedBuffer<float> y(n);  // cudaMallocHost memory starts as 0xFF bytes (NaN)
  cudaStream_t s;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  ks::fill(y.get(), n, 1.0f, s);
  ks::add_one(y.get(), n, s);
  // SEG_LAUNCH returned, but the kernels are still queued: the host sees the old bytes.
  CHECK(std::isnan(y[0]));
  CHECK(std::isnan(y[n - 1]));
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  SEG_CHECK_CLOSE(y.values(), std::vector<float>(n, 2.0f), seg::test::Tolerance{});  // fill, then add_one: in order

  PinnedBuffer<int> log(16), count(1);
  count[0] = 0;
  for (int t = 0; t < 10; ++t) ks::append_tag(log.get(), count.get(), t, s);
  std::vector<int> want(10);
  std::iota(want.begin(), want.end(), 0);
  CHECK(tags(log, count) == want);
  REQUIRE(cudaStreamDestroy(s) == cudaSuccess);
}

TEST_CASE("streams: queries answer not-ready while work is queued and make progress") {
  PinnedBuffer<int> log(8), count(1);
  count[0] = 0;
  cudaStream_t s;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  CHECK(cudaStreamQuery(s) == cudaSuccess);  // nothing queued
  for (int t = 0; t < 3; ++t) ks::append_tag(log.get(), count.get(), t, s);
  cudaEvent_t e;
  REQUIRE(cudaEventCreate(&e) == cudaSuccess);
  REQUIRE(cudaEventRecord(e, s) == cudaSuccess);
  CHECK(cudaEventQuery(e) == cudaErrorNotReady);  // ran the first launch
  CHECK(count[0] == 1);
  int polls = 1;
  while (cudaStreamQuery(s) == cudaErrorNotReady) ++polls;  // each poll runs one queued op
  CHECK(polls == 4);                                        // three launches and the record
  CHECK(count[0] == 3);
  CHECK(cudaEventQuery(e) == cudaSuccess);
  cudaEventDestroy(e);
  cudaStreamDestroy(s);
}

TEST_CASE("streams: cudaMemcpyAsync stages pageable sources at the call, pinned ones are read when the copy runs") {
  const int n = 64;
  DeviceBuffer<float> d(n);
  cudaStream_t s;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);

  SUBCASE("pageable: the copy has its own copy of the source, a later host write is not seen") {
    std::vector<float> src(n, 1.0f);
    REQUIRE(cudaMemcpyAsync(d.get(), src.data(), n * sizeof(float), cudaMemcpyHostToDevice, s) == cudaSuccess);
    std::fill(src.begin(), src.end(), 2.0f);  // the host reuses its buffer at once: allowed
    REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
    SEG_CHECK_CLOSE(d.download(), std::vector<float>(d.size(), 1.0f), seg::test::Tolerance{});
  }
  SUBCASE("pinned: the DMA happens in stream order, so a write before the sync is seen") {
    PinnedBuffer<float> src(n);
    for (int i = 0; i < n; ++i) src[i] = 1.0f;
    REQUIRE(cudaMemcpyAsync(d.get(), src.get(), n * sizeof(float), cudaMemcpyHostToDevice, s) == cudaSuccess);
    for (int i = 0; i < n; ++i) src[i] = 2.0f;  // a bug on a GPU: the copy may read either value
    REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
    SEG_CHECK_CLOSE(d.download(), std::vector<float>(d.size(), 2.0f), seg::test::Tolerance{});
  }
  SUBCASE("device to pinned: the destination holds the old bytes until the stream is synchronised") {
    d.upload(std::vector<float>(n, 3.0f));
    PinnedBuffer<float> dst(n);
    for (int i = 0; i < n; ++i) dst[i] = -1.0f;
    REQUIRE(cudaMemcpyAsync(dst.get(), d.get(), n * sizeof(float), cudaMemcpyDeviceToHost, s) == cudaSuccess);
    CHECK(dst[0] == -1.0f);
    REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
    CHECK(dst[0] == 3.0f);
    CHECK(dst[n - 1] == 3.0f);
  }
  SUBCASE("device to pageable: synchronous, the data is there when the call returns") {
    d.upload(std::vector<float>(n, 4.0f));
    std::vector<float> dst(n, -1.0f);
    ks::add_one(d.get(), n, s);
    REQUIRE(cudaMemcpyAsync(dst.data(), d.get(), n * sizeof(float), cudaMemcpyDeviceToHost, s) == cudaSuccess);
    // waited for the kernel before it, too
    SEG_CHECK_CLOSE(dst, std::vector<float>(dst.size(), 5.0f), seg::test::Tolerance{});
  }
  cudaStreamDestroy(s);
}

TEST_CASE("streams: cudaMemcpy2DAsync copies pitched rows in stream order and leaves the pitch padding alone") {
  // 5 rows of 6 floats, from pinned memory with a pitch of 10 floats into device memory with a pitch of 8.
  const int rows = 5, width = 6, spitch = 10, dpitch = 8;
  PinnedBuffer<float> src(rows * spitch);
  for (int i = 0; i < rows * spitch; ++i) src[i] = static_cast<float>(i);
  DeviceBuffer<float> d(rows * dpitch);
  d.upload(std::vector<float>(d.size(), -1.0f));
  cudaStream_t s;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  ks::add_one(d.get(), rows * dpitch, s);  // queued before the copy: the copy overwrites its rows after it
  REQUIRE(cudaMemcpy2DAsync(d.get(), dpitch * sizeof(float), src.get(), spitch * sizeof(float), width * sizeof(float),
                            rows, cudaMemcpyHostToDevice, s) == cudaSuccess);
  src[spitch + 1] = 100.0f;  // pinned: read when the copy runs, so a write before the sync is seen (a bug on a GPU)
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  std::vector<float> want(d.size());
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < dpitch; ++c) want[r * dpitch + c] = c < width ? static_cast<float>(r * spitch + c) : 0.0f;
  want[dpitch + 1] = 100.0f;
  SEG_CHECK_CLOSE(d.download(), want, seg::test::Tolerance{});  // padding: -1 + 1 from add_one, never copied

  // Device to pageable host: synchronous with the stream's earlier work, the rows in place at the return.
  ks::add_one(d.get(), rows * dpitch, s);
  std::vector<float> back(rows * spitch, -5.0f);
  REQUIRE(cudaMemcpy2DAsync(back.data(), spitch * sizeof(float), d.get(), dpitch * sizeof(float), width * sizeof(float),
                            rows, cudaMemcpyDeviceToHost, s) == cudaSuccess);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < spitch; ++c) {
      const float expected = c < width ? want[r * dpitch + c] + 1.0f : -5.0f;
      CHECK(back[r * spitch + c] == expected);
    }
  CHECK(cudaMemcpy2DAsync(d.get(), 4, src.get(), 8, 8, 2, cudaMemcpyHostToDevice, s) == cudaErrorInvalidValue);
  cudaStreamDestroy(s);
}

TEST_CASE("streams: event times follow stream order") {
  const int n = 1 << 14;
  DeviceBuffer<float> x(n), y(n);
  cudaStream_t s;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  cudaEvent_t e[3], untimed;
  for (cudaEvent_t& ev : e) REQUIRE(cudaEventCreate(&ev) == cudaSuccess);
  REQUIRE(cudaEventCreateWithFlags(&untimed, cudaEventDisableTiming) == cudaSuccess);
  float ms = 0.0f;
  CHECK(cudaEventElapsedTime(&ms, e[0], e[1]) == cudaErrorInvalidResourceHandle);  // not recorded
  REQUIRE(cudaEventRecord(e[0], s) == cudaSuccess);
  ks::fill(x.get(), n, 1.0f, s);
  REQUIRE(cudaEventRecord(e[1], s) == cudaSuccess);
  ks::affine(x.get(), y.get(), n, 2.0f, 1.0f, s);
  ks::add_one(y.get(), n, s);
  REQUIRE(cudaEventRecord(e[2], s) == cudaSuccess);
  REQUIRE(cudaEventRecord(untimed, s) == cudaSuccess);
  CHECK(cudaEventElapsedTime(&ms, e[0], e[1]) == cudaErrorNotReady);  // recorded, not yet reached
  REQUIRE(cudaEventSynchronize(e[2]) == cudaSuccess);
  float t01 = 0, t12 = 0, t02 = 0, t20 = 0;
  REQUIRE(cudaEventElapsedTime(&t01, e[0], e[1]) == cudaSuccess);
  REQUIRE(cudaEventElapsedTime(&t12, e[1], e[2]) == cudaSuccess);
  REQUIRE(cudaEventElapsedTime(&t02, e[0], e[2]) == cudaSuccess);
  REQUIRE(cudaEventElapsedTime(&t20, e[2], e[0]) == cudaSuccess);
  // Simulated device time: the time the simulator spent on the work between the events.
  CHECK(t01 > 0.0f);
  CHECK(t12 > 0.0f);
  CHECK(t02 == doctest::Approx(t01 + t12).epsilon(1e-4));
  CHECK(t20 == -t02);
  CHECK(cudaEventElapsedTime(&ms, e[0], untimed) == cudaErrorInvalidResourceHandle);
  (void)cudaGetLastError();
  for (cudaEvent_t ev : e) cudaEventDestroy(ev);
  cudaEventDestroy(untimed);
  cudaStreamDestroy(s);
}

TEST_CASE("streams: cudaStreamWaitEvent orders one stream after another's recorded work") {
  const int n = 300;
  DeviceBuffer<float> x(n), y(n);
  std::vector<double> want(n, 2.0 * 5.0 + 1.0);
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    CAPTURE(seed);
    seg::sim::ScopedOptions scoped(stream_order(seg::sim::StreamOrder::random, seed));
    Streams st;
    cudaEvent_t ready;
    REQUIRE(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming) == cudaSuccess);
    ks::fill(x.get(), n, 5.0f, st.a);
    REQUIRE(cudaEventRecord(ready, st.a) == cudaSuccess);
    REQUIRE(cudaStreamWaitEvent(st.b, ready, 0) == cudaSuccess);
    ks::affine(x.get(), y.get(), n, 2.0f, 1.0f, st.b);
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    SEG_CHECK_CLOSE(y.download(), want, seg::test::Tolerance{0, 0});  // affine after the wait: exact
    cudaEventDestroy(ready);
  }
}

TEST_CASE("streams: a wait waits for the record made before it, not a later one") {
  // Stream a: tag 1, record, tag 2, record again. Stream b waits between the two records: its tag
  // 3 follows tag 1 under every order, and precedes tag 2 under some.
  bool three_before_two = false;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    CAPTURE(seed);
    seg::sim::ScopedOptions scoped(stream_order(seg::sim::StreamOrder::random, seed, false));
    PinnedBuffer<int> log(8), count(1);
    count[0] = 0;
    Streams st;
    cudaEvent_t e;
    REQUIRE(cudaEventCreate(&e) == cudaSuccess);
    ks::append_tag(log.get(), count.get(), 1, st.a);
    REQUIRE(cudaEventRecord(e, st.a) == cudaSuccess);
    REQUIRE(cudaStreamWaitEvent(st.b, e, 0) == cudaSuccess);
    ks::append_tag(log.get(), count.get(), 2, st.a);
    REQUIRE(cudaEventRecord(e, st.a) == cudaSuccess);
    ks::append_tag(log.get(), count.get(), 3, st.b);
    const std::vector<int> order = tags(log, count);
    REQUIRE(order.size() == 3);
    CHECK(order[0] == 1);
    three_before_two = three_before_two || order[1] == 3;
    cudaEventDestroy(e);
  }
  CHECK(three_before_two);
  // An event never recorded: the wait is a no-op.
  cudaEvent_t never;
  cudaStream_t s;
  REQUIRE(cudaEventCreate(&never) == cudaSuccess);
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  CHECK(cudaStreamWaitEvent(s, never, 0) == cudaSuccess);
  CHECK(cudaStreamQuery(s) == cudaSuccess);
  cudaEventDestroy(never);
  cudaStreamDestroy(s);
}

TEST_CASE("streams: the legacy default stream synchronises with blocking streams, not with non-blocking ones") {
  bool nonblocking_overtaken = false;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    CAPTURE(seed);
    seg::sim::ScopedOptions scoped(stream_order(seg::sim::StreamOrder::random, seed, false));
    PinnedBuffer<int> log(8), count(1);
    {
      count[0] = 0;
      cudaStream_t blocking;
      REQUIRE(cudaStreamCreate(&blocking) == cudaSuccess);
      ks::append_tag(log.get(), count.get(), 1, blocking);
      ks::append_tag(log.get(), count.get(), 2, 0);         // waits for blocking's work before it
      ks::append_tag(log.get(), count.get(), 3, blocking);  // waits for the legacy stream's work
      CHECK(tags(log, count) == std::vector<int>{1, 2, 3});
      cudaStreamDestroy(blocking);
    }
    {
      count[0] = 0;
      ks::append_tag(log.get(), count.get(), 1, cudaStreamPerThread);  // blocking, too
      ks::append_tag(log.get(), count.get(), 2, cudaStreamLegacy);
      CHECK(tags(log, count) == std::vector<int>{1, 2});
    }
    {
      count[0] = 0;
      cudaStream_t nonblocking;
      REQUIRE(cudaStreamCreateWithFlags(&nonblocking, cudaStreamNonBlocking) == cudaSuccess);
      ks::append_tag(log.get(), count.get(), 1, nonblocking);
      ks::append_tag(log.get(), count.get(), 2, 0);  // unordered with the non-blocking stream
      const std::vector<int> order = tags(log, count);
      REQUIRE(order.size() == 2);
      nonblocking_overtaken = nonblocking_overtaken || order[0] == 2;
      cudaStreamDestroy(nonblocking);
    }
  }
  CHECK(nonblocking_overtaken);
}

TEST_CASE("streams: a synchronous cudaMemcpy waits for blocking streams' work, not for non-blocking streams'") {
  const int n = 32;
  DeviceBuffer<float> d(n);
  d.upload(std::vector<float>(n, 0.0f));
  cudaStream_t blocking, nonblocking;
  REQUIRE(cudaStreamCreate(&blocking) == cudaSuccess);
  REQUIRE(cudaStreamCreateWithFlags(&nonblocking, cudaStreamNonBlocking) == cudaSuccess);
  ks::fill(d.get(), n, 7.0f, blocking);
  // the legacy stream waited
  SEG_CHECK_CLOSE(d.download(), std::vector<float>(d.size(), 7.0f), seg::test::Tolerance{});

  seg::sim::Options no_races;
  no_races.race_check = false;  // the race detector reports this bug (test_stream_races.cpp)
  seg::sim::ScopedOptions scoped(no_races);
  ks::fill(d.get(), n, 9.0f, nonblocking);
  // the fill has not run yet
  SEG_CHECK_CLOSE(d.download(), std::vector<float>(d.size(), 7.0f), seg::test::Tolerance{});
  REQUIRE(cudaStreamSynchronize(nonblocking) == cudaSuccess);
  SEG_CHECK_CLOSE(d.download(), std::vector<float>(d.size(), 9.0f), seg::test::Tolerance{});
  cudaStreamDestroy(blocking);
  cudaStreamDestroy(nonblocking);
}

TEST_CASE("streams: each host thread has its own per-thread default stream") {
  cudaStream_t s;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  unsigned long long main_id = 0, other_id = 0, user_id = 0;
  REQUIRE(cudaStreamGetId(cudaStreamPerThread, &main_id) == cudaSuccess);
  REQUIRE(cudaStreamGetId(s, &user_id) == cudaSuccess);
  std::thread t([&] { REQUIRE(cudaStreamGetId(cudaStreamPerThread, &other_id) == cudaSuccess); });
  t.join();
  CHECK(main_id != other_id);
  CHECK(main_id != user_id);
  unsigned flags = 1;
  CHECK(cudaStreamGetFlags(s, &flags) == cudaSuccess);
  CHECK(flags == cudaStreamDefault);
  int priority = 1, least = 0, greatest = 0, device = -1;
  CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest) == cudaSuccess);
  CHECK(cudaStreamGetPriority(s, &priority) == cudaSuccess);
  CHECK(priority == least);
  CHECK(cudaStreamGetDevice(s, &device) == cudaSuccess);
  CHECK(device == 0);
  cudaStreamDestroy(s);
}

namespace {
struct HostLog {
  const int* count;  // pinned: kernels write it, host functions read it
  std::vector<int> seen;
  cudaError_t nested = cudaSuccess;
};
void host_function(void* data) {
  auto* log = static_cast<HostLog*>(data);
  log->seen.push_back(*log->count);
  int* scratch = nullptr;
  log->nested = cudaMalloc(reinterpret_cast<void**>(&scratch), 4);  // not allowed from a host function
}
}  // namespace

TEST_CASE("streams: host functions run in stream order, when the host synchronises") {
  PinnedBuffer<int> log(8), count(1);
  count[0] = 0;
  HostLog host{count.get(), {}, cudaSuccess};
  cudaStream_t s;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  ks::append_tag(log.get(), count.get(), 1, s);
  REQUIRE(cudaLaunchHostFunc(s, &host_function, &host) == cudaSuccess);
  ks::append_tag(log.get(), count.get(), 2, s);
  REQUIRE(cudaLaunchHostFunc(s, &host_function, &host) == cudaSuccess);
  CHECK(host.seen.empty());  // queued, not run
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  CHECK(host.seen == std::vector<int>{1, 2});  // each after the launch before it
  CHECK(host.nested == cudaErrorNotPermitted);
  cudaStreamDestroy(s);
}

TEST_CASE("streams: a destroyed stream's queued work still runs") {
  const int n = 16;
  DeviceBuffer<float> d(n);
  cudaStream_t s;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  ks::fill(d.get(), n, 4.0f, s);
  REQUIRE(cudaStreamDestroy(s) == cudaSuccess);
  CHECK(cudaStreamQuery(s) == cudaErrorInvalidResourceHandle);
  (void)cudaGetLastError();
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  SEG_CHECK_CLOSE(d.download(), std::vector<float>(d.size(), 4.0f), seg::test::Tolerance{});
}

TEST_CASE("streams: a kernel fault comes out of the next synchronising call, and later work is skipped") {
  const int n = 32;
  DeviceBuffer<float> y(n), z(n);
  y.upload(std::vector<float>(n, 0.0f));
  z.upload(std::vector<float>(n, 0.0f));
  cudaStream_t s;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);

  SUBCASE("cudaStreamSynchronize throws it; the queries and cudaFree return the error code") {
    ks::trap(y.get(), s);
    ks::fill(z.get(), n, 1.0f, s);
    CHECK(cudaStreamQuery(s) == cudaErrorLaunchFailure);  // ran the trap
    CHECK(cudaGetLastError() == cudaErrorLaunchFailure);  // sticky until thrown
    CHECK(cudaPeekAtLastError() == cudaErrorLaunchFailure);
    bool thrown = false;
    try {
      cudaStreamSynchronize(s);
    } catch (const seg::sim::KernelFault& f) {
      thrown = true;
      CHECK(f.kind() == seg::sim::FaultKind::trap);
      CHECK(std::string(f.what()).find("__trap() called") != std::string::npos);
    }
    CHECK(thrown);
    CHECK(cudaGetLastError() == cudaSuccess);
    // the fill after the fault was skipped
    SEG_CHECK_CLOSE(z.download(), std::vector<float>(z.size(), 0.0f), seg::test::Tolerance{});
  }
  SUBCASE("the next SEG_LAUNCH throws it") {
    ks::trap(y.get(), s);
    CHECK(cudaStreamQuery(s) == cudaErrorLaunchFailure);
    bool thrown = false;
    try {
      ks::fill(z.get(), n, 1.0f, s);
    } catch (const seg::sim::KernelFault& f) {
      thrown = f.kind() == seg::sim::FaultKind::trap;
    }
    CHECK(thrown);
  }
  SUBCASE("SEG_SIM_SYNC_LAUNCH runs the launch at the call, which throws") {
    seg::sim::Options o;
    o.sync_launch = true;
    seg::sim::ScopedOptions scoped(o);
    bool thrown = false;
    try {
      ks::trap(y.get(), s);
    } catch (const seg::sim::KernelFault& f) {
      thrown = f.kind() == seg::sim::FaultKind::trap;
    }
    CHECK(thrown);
    ks::fill(z.get(), n, 1.0f, s);
    SEG_CHECK_CLOSE(z.download(), std::vector<float>(z.size(), 1.0f), seg::test::Tolerance{});  // ran at the call
  }
  // Afterwards the simulator is usable again.
  ks::fill(z.get(), n, 6.0f, s);
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  SEG_CHECK_CLOSE(z.download(), std::vector<float>(z.size(), 6.0f), seg::test::Tolerance{});
  cudaStreamDestroy(s);
}

TEST_CASE("streams: cudaMallocAsync and cudaFreeAsync act in stream order") {
  const int n = 1 << 18;  // 1 MiB
  cudaStream_t s;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  size_t free0 = 0, free1 = 0, free2 = 0, total = 0;
  REQUIRE(cudaMemGetInfo(&free0, &total) == cudaSuccess);
  float* p = nullptr;
  REQUIRE(cudaMallocAsync(reinterpret_cast<void**>(&p), n * sizeof(float), s) == cudaSuccess);
  ks::fill(p, n, 1.0f, s);
  REQUIRE(cudaFreeAsync(p, s) == cudaSuccess);
  REQUIRE(cudaMemGetInfo(&free1, &total) == cudaSuccess);
  CHECK(free0 - free1 == n * sizeof(float));  // the free is queued behind the fill
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  REQUIRE(cudaMemGetInfo(&free2, &total) == cudaSuccess);
  CHECK(free2 == free0);

  // A kernel queued after the free, on the same stream, is given released memory: a fault, not a
  // read of unmapped pages. Where kernel code is instrumented the pointer checks stop the first
  // store into the freed block; elsewhere the launch checks its pointer arguments.
  REQUIRE(cudaMallocAsync(reinterpret_cast<void**>(&p), n * sizeof(float), s) == cudaSuccess);
  REQUIRE(cudaFreeAsync(p, s) == cudaSuccess);
  ks::fill(p, n, 1.0f, s);
  bool thrown = false;
  try {
    cudaStreamSynchronize(s);
  } catch (const seg::sim::KernelFault& f) {
    const std::string what = f.what();
    INFO(what);
    if (SEG_SIM_TEST_INSTRUMENTED) {
      CHECK(f.kind() == seg::sim::FaultKind::use_after_free);
      CHECK(contains(what, "freed by cudaFreeAsync before the kernel ran (a use after a stream-ordered free"));
      CHECK(contains(what, "in kernel fill_kernel"));
    } else {
      CHECK(f.kind() == seg::sim::FaultKind::bad_address);
      CHECK(contains(what, "use after a stream-ordered free: kernel fill_kernel"));
    }
    thrown = true;
  }
  CHECK(thrown);
  cudaStreamDestroy(s);
}
