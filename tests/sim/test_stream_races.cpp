// The stream race detector (docs/cuda-simulator.md, "Stream races"): unordered operations on
// different streams that touch the same bytes, one of them writing, are reported with both call
// sites; everything CUDA orders (events, the legacy stream, host synchronisation, graph edges) is
// not.
#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "tests/sim/sim_test_util.h"
#include "tests/sim/stream_test_kernels.h"

using simtest::DeviceBuffer;
namespace ks = simtest::streams;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

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

// Synchronises the device; returns the report of a stream race it throws ("" when none).
std::string race_after_sync() {
  try {
    cudaDeviceSynchronize();
  } catch (const seg::sim::KernelFault& f) {
    CHECK(f.kind() == seg::sim::FaultKind::stream_race);
    return f.what();
  }
  return "";
}

}  // namespace

TEST_CASE("stream races: a missing cudaStreamWaitEvent is reported with both launch sites and the buffer") {
  const int n = 256;
  DeviceBuffer<float> x(n), y(n);
  Streams st;
  const uint64_t before = seg::sim::stream_race_count();
  ks::fill(x.get(), n, 1.0f, st.a);
  ks::affine(x.get(), y.get(), n, 2.0f, 0.0f, st.b);  // reads x: should wait for the fill
  const std::string report = race_after_sync();
  INFO(report);
  CHECK(seg::sim::stream_race_count() == before + 1);
  CHECK(contains(report, "seg::sim: stream race: two operations on different streams touch the same bytes"));
  CHECK(contains(report, "memory: bytes [0, 1024) of the 1024-byte device allocation at"));
  CHECK(contains(report, "first:  kernel fill_kernel launched at tests/sim/streams.cu:"));
  CHECK(contains(report, "(writes), on stream"));
  CHECK(contains(report, "second: kernel affine_kernel launched at tests/sim/streams.cu:"));
  CHECK(contains(report, "(reads), on stream"));
  CHECK(contains(report, "cudaStreamWaitEvent"));
  CHECK(seg::sim::last_stream_race_report() == report);
}

// Copies and memsets record exactly the bytes they touch in every build (kernels only where kernel
// code is instrumented), so the other side here is a memset.
TEST_CASE("stream races: a cudaMemcpy2DAsync touches its rows, not the pitch padding between them") {
  const int rows = 4, width = 6, pitch = 8;  // floats
  DeviceBuffer<float> src(rows * width), dst(rows * pitch);
  Streams st;
  const uint64_t before = seg::sim::stream_race_count();
  auto copy = [&] {
    REQUIRE(cudaMemcpy2DAsync(dst.get(), pitch * sizeof(float), src.get(), width * sizeof(float),
                              width * sizeof(float), rows, cudaMemcpyDeviceToDevice, st.a) == cudaSuccess);
  };
  copy();
  // every row's padding (floats 6 and 7 of each row), unordered with the copy
  REQUIRE(cudaMemset2DAsync(dst.get() + width, pitch * sizeof(float), 0, (pitch - width) * sizeof(float), rows,
                            st.b) == cudaSuccess);
  CHECK(race_after_sync() == "");
  CHECK(seg::sim::stream_race_count() == before);
  copy();
  REQUIRE(cudaMemsetAsync(dst.get() + pitch + width - 1, 0, sizeof(float), st.b) == cudaSuccess);  // row 1's last copied float
  const std::string report = race_after_sync();
  INFO(report);
  CHECK(seg::sim::stream_race_count() == before + 1);
  CHECK(contains(report, "cudaMemcpy2DAsync (device to device, 96 bytes) called from"));
  CHECK(contains(report, "cudaMemsetAsync (4 bytes) called from"));
  CHECK(contains(report, "memory: bytes [52, 56) of the 128-byte device allocation at"));
}

TEST_CASE("stream races: what CUDA orders is not a race") {
  const int n = 128;
  DeviceBuffer<float> x(n), y(n);
  const uint64_t before = seg::sim::stream_race_count();

  SUBCASE("an event record and wait") {
    Streams st;
    cudaEvent_t e;
    REQUIRE(cudaEventCreate(&e) == cudaSuccess);
    ks::fill(x.get(), n, 1.0f, st.a);
    REQUIRE(cudaEventRecord(e, st.a) == cudaSuccess);
    REQUIRE(cudaStreamWaitEvent(st.b, e, 0) == cudaSuccess);
    ks::affine(x.get(), y.get(), n, 2.0f, 0.0f, st.b);
    ks::fill(x.get(), n, 3.0f, st.b);  // also after the fill on a
    CHECK(race_after_sync() == "");
    cudaEventDestroy(e);
  }
  SUBCASE("the host synchronising in between") {
    Streams st;
    ks::fill(x.get(), n, 1.0f, st.a);
    REQUIRE(cudaStreamSynchronize(st.a) == cudaSuccess);
    ks::affine(x.get(), y.get(), n, 2.0f, 0.0f, st.b);
    CHECK(race_after_sync() == "");
  }
  SUBCASE("a query that answered done") {
    Streams st;
    ks::fill(x.get(), n, 1.0f, st.a);
    while (cudaStreamQuery(st.a) == cudaErrorNotReady) {
    }
    ks::affine(x.get(), y.get(), n, 2.0f, 0.0f, st.b);
    CHECK(race_after_sync() == "");
  }
  SUBCASE("the legacy default stream between two blocking streams") {
    Streams st;
    ks::fill(x.get(), n, 1.0f, st.a);
    ks::add_one(x.get(), n, 0);
    ks::affine(x.get(), y.get(), n, 2.0f, 0.0f, st.b);
    CHECK(race_after_sync() == "");
  }
  SUBCASE("two streams that only read") {
    Streams st;
    ks::fill(x.get(), n, 1.0f, 0);
    ks::affine(x.get(), y.get(), n, 2.0f, 0.0f, st.a);
    REQUIRE(cudaStreamSynchronize(st.a) == cudaSuccess);
    DeviceBuffer<float> z(n);
    ks::affine(x.get(), z.get(), n, 3.0f, 0.0f, st.b);
    ks::affine(x.get(), y.get(), n, 4.0f, 0.0f, st.a);  // x is const in both: reads only
    CHECK(race_after_sync() == "");
  }
  SUBCASE("a graph's edges") {
    Streams st;
    cudaEvent_t fork, join;
    REQUIRE(cudaEventCreate(&fork) == cudaSuccess);
    REQUIRE(cudaEventCreate(&join) == cudaSuccess);
    REQUIRE(cudaStreamBeginCapture(st.a, cudaStreamCaptureModeGlobal) == cudaSuccess);
    ks::fill(x.get(), n, 1.0f, st.a);
    REQUIRE(cudaEventRecord(fork, st.a) == cudaSuccess);
    REQUIRE(cudaStreamWaitEvent(st.b, fork, 0) == cudaSuccess);
    ks::affine(x.get(), y.get(), n, 2.0f, 0.0f, st.b);  // after the fill: an edge
    REQUIRE(cudaEventRecord(join, st.b) == cudaSuccess);
    REQUIRE(cudaStreamWaitEvent(st.a, join, 0) == cudaSuccess);
    cudaGraph_t g;
    REQUIRE(cudaStreamEndCapture(st.a, &g) == cudaSuccess);
    cudaGraphExec_t exec;
    REQUIRE(cudaGraphInstantiate(&exec, g, 0) == cudaSuccess);
    REQUIRE(cudaGraphLaunch(exec, st.a) == cudaSuccess);
    REQUIRE(cudaGraphLaunch(exec, st.a) == cudaSuccess);
    CHECK(race_after_sync() == "");
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(g);
    cudaEventDestroy(fork);
    cudaEventDestroy(join);
  }
  CHECK(seg::sim::stream_race_count() == before);
}

TEST_CASE("stream races: the unordered cases are reported") {
  const int n = 64;
  DeviceBuffer<float> x(n), y(n);
  SUBCASE("a non-blocking stream is not ordered by the legacy stream") {
    Streams st(cudaStreamNonBlocking);
    ks::fill(x.get(), n, 1.0f, st.a);
    ks::add_one(x.get(), n, 0);
    CHECK(contains(race_after_sync(), "on the legacy default stream (device 0)"));
  }
  SUBCASE("a copy on one stream and a kernel on another") {
    Streams st;
    ks::fill(x.get(), n, 1.0f, st.a);
    REQUIRE(cudaMemcpyAsync(y.get(), x.get(), n * sizeof(float), cudaMemcpyDeviceToDevice, st.b) == cudaSuccess);
    const std::string report = race_after_sync();
    INFO(report);
    CHECK(contains(report, "second: cudaMemcpyAsync (device to device, 256 bytes) called from "));
    CHECK(contains(report, "(reads)"));
  }
  SUBCASE("a memset racing with a kernel that writes other bytes of the same allocation is not a race") {
    Streams st;
    // The copy and memset ranges are exact: halves of y do not overlap.
    REQUIRE(cudaMemsetAsync(y.get(), 0, n / 2 * sizeof(float), st.a) == cudaSuccess);
    REQUIRE(cudaMemsetAsync(y.get() + n / 2, 0, n / 2 * sizeof(float), st.b) == cudaSuccess);
    CHECK(race_after_sync() == "");
  }
  SUBCASE("two branches of a graph without an edge between them") {
    Streams st;
    cudaEvent_t fork, join;
    REQUIRE(cudaEventCreate(&fork) == cudaSuccess);
    REQUIRE(cudaEventCreate(&join) == cudaSuccess);
    REQUIRE(cudaStreamBeginCapture(st.a, cudaStreamCaptureModeGlobal) == cudaSuccess);
    REQUIRE(cudaEventRecord(fork, st.a) == cudaSuccess);
    REQUIRE(cudaStreamWaitEvent(st.b, fork, 0) == cudaSuccess);
    ks::fill(x.get(), n, 1.0f, st.a);
    ks::fill(x.get(), n, 2.0f, st.b);  // concurrent with the fill on a, in the graph
    REQUIRE(cudaEventRecord(join, st.b) == cudaSuccess);
    REQUIRE(cudaStreamWaitEvent(st.a, join, 0) == cudaSuccess);
    cudaGraph_t g;
    REQUIRE(cudaStreamEndCapture(st.a, &g) == cudaSuccess);
    cudaGraphExec_t exec;
    REQUIRE(cudaGraphInstantiate(&exec, g, 0) == cudaSuccess);
    REQUIRE(cudaGraphLaunch(exec, st.a) == cudaSuccess);
    CHECK(contains(race_after_sync(), "kernel fill_kernel"));
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(g);
    cudaEventDestroy(fork);
    cudaEventDestroy(join);
  }
  SUBCASE("a stream-ordered free while another stream still uses the memory") {
    Streams st;
    float* tmp = nullptr;
    REQUIRE(cudaMallocAsync(reinterpret_cast<void**>(&tmp), n * sizeof(float), st.a) == cudaSuccess);
    ks::fill(tmp, n, 1.0f, st.a);
    REQUIRE(cudaStreamSynchronize(st.a) == cudaSuccess);
    ks::affine(tmp, y.get(), n, 1.0f, 0.0f, st.b);
    REQUIRE(cudaFreeAsync(tmp, st.a) == cudaSuccess);  // st.a does not wait for st.b's read
    CHECK(contains(race_after_sync(), "cudaFreeAsync"));
  }
}

// Where kernel code is instrumented (the default build) the launch records the bytes it loads and
// stores; the ASan and TSan builds, and SEG_SIM_CHECK_POINTERS=0, take the conservative sets of the
// next test.
TEST_CASE("stream races: a kernel's accesses are the bytes it touched where kernel code is instrumented" *
          doctest::skip(!SEG_SIM_TEST_INSTRUMENTED)) {
  const int n = 128;
  DeviceBuffer<float> pool(2 * n);  // two buffers carved out of one allocation
  float* first = pool.get();
  float* second = pool.get() + n;
  Streams st;
  // Disjoint halves: no race, without any annotation.
  ks::fill(first, n, 1.0f, st.a);
  ks::fill(second, n, 2.0f, st.b);
  CHECK(race_after_sync() == "");
  // One float of overlap: the second kernel writes floats n-1 and n of the pool, and float n-1
  // (bytes 508 to 511) is also the first kernel's last.
  ks::fill(first, n, 1.0f, st.a);
  ks::fill(second - 1, 2, 2.0f, st.b);
  const std::string report = race_after_sync();
  INFO(report);
  CHECK(contains(report, "memory: bytes [508, 512) of the 1024-byte device allocation at"));
  CHECK(!contains(report, "taken conservatively"));
}

TEST_CASE("stream races: without pointer checks, kernels' accesses are whole allocations unless annotated") {
  seg::sim::Options o;
  o.check_pointers = false;  // no effect where kernel code is not instrumented: conservative anyway
  seg::sim::ScopedOptions scoped(o);
  const int n = 128;
  DeviceBuffer<float> pool(2 * n), out(1);  // two buffers carved out of one allocation
  float* first = pool.get();
  float* second = pool.get() + n;
  Streams st;
  ks::fill(first, n, 1.0f, st.a);
  ks::fill(second, n, 2.0f, st.b);
  CHECK(contains(race_after_sync(), "a kernel's accesses are taken conservatively"));

  seg::sim::annotate_buffer(first, n * sizeof(float));
  seg::sim::annotate_buffer(second, n * sizeof(float));
  ks::fill(first, n, 1.0f, st.a);
  ks::fill(second, n, 2.0f, st.b);
  CHECK(race_after_sync() == "");
  seg::sim::forget_buffer(first);
  seg::sim::forget_buffer(second);
}

TEST_CASE("stream races: SEG_SIM_RACE_CHECK=0 turns the detector off") {
  const int n = 32;
  DeviceBuffer<float> x(n), y(n);
  seg::sim::Options o;
  o.race_check = false;
  seg::sim::ScopedOptions scoped(o);
  const uint64_t before = seg::sim::stream_race_count();
  Streams st;
  ks::fill(x.get(), n, 1.0f, st.a);
  ks::affine(x.get(), y.get(), n, 2.0f, 0.0f, st.b);
  CHECK(race_after_sync() == "");
  CHECK(seg::sim::stream_race_count() == before);
}
