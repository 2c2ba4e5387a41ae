// Stream capture and CUDA graphs (docs/cuda-simulator.md, "Graphs"): captured work is recorded,
// not run, and replayed by every launch; what a capture forbids fails as on a GPU and invalidates it.
#include <cuda_runtime.h>

#include <string>
#include <thread>
#include <vector>

#include "tests/sim/sim_test_util.h"
#include "tests/sim/stream_test_kernels.h"

using simtest::DeviceBuffer;
namespace ks = simtest::streams;

namespace {

size_t node_count(cudaGraph_t g) {
  size_t n = 0;
  REQUIRE(cudaGraphGetNodes(g, nullptr, &n) == cudaSuccess);
  return n;
}

cudaStreamCaptureStatus capture_status(cudaStream_t s) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  REQUIRE(cudaStreamIsCapturing(s, &status) == cudaSuccess);
  return status;
}

std::vector<float> filled(size_t n, float v) { return std::vector<float>(n, v); }

// Ends a capture that a forbidden call invalidated: no graph, and the stream stops capturing.
void expect_invalidated_end(cudaStream_t s) {
  CHECK(capture_status(s) == cudaStreamCaptureStatusInvalidated);
  cudaGraph_t g = reinterpret_cast<cudaGraph_t>(0x1);
  CHECK(cudaStreamEndCapture(s, &g) == cudaErrorStreamCaptureInvalidated);
  CHECK(g == nullptr);
  CHECK(capture_status(s) == cudaStreamCaptureStatusNone);
  (void)cudaGetLastError();
}

}  // namespace

TEST_CASE("graphs: captured work is recorded, not run, and replayed by every launch") {
  const int n = 200;
  DeviceBuffer<float> x(filled(n, 0.0f));
  float* out = nullptr;  // pinned: the graph's copy lands here
  REQUIRE(cudaMallocHost(&out, n * sizeof(float)) == cudaSuccess);
  cudaStream_t s;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);

  REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess);
  CHECK(capture_status(s) == cudaStreamCaptureStatusActive);
  ks::add_one(x.get(), n, s);
  ks::add_one(x.get(), n, s);
  REQUIRE(cudaMemcpyAsync(out, x.get(), n * sizeof(float), cudaMemcpyDeviceToHost, s) == cudaSuccess);
  cudaStreamCaptureStatus status;
  unsigned long long id = 0;
  size_t deps = 0;
  REQUIRE(cudaStreamGetCaptureInfo(s, &status, &id, nullptr, nullptr, nullptr, &deps) == cudaSuccess);
  CHECK(status == cudaStreamCaptureStatusActive);
  CHECK(id != 0);
  CHECK(deps == 1);  // the next captured op depends on the copy
  cudaGraph_t graph = nullptr;
  REQUIRE(cudaStreamEndCapture(s, &graph) == cudaSuccess);
  CHECK(capture_status(s) == cudaStreamCaptureStatusNone);
  CHECK(node_count(graph) == 3);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  SEG_CHECK_CLOSE(x.download(), std::vector<float>(x.size(), 0.0f), seg::test::Tolerance{});  // nothing ran

  // Both signatures CUDA 13 has, and the WithFlags variant.
  cudaGraphExec_t exec = nullptr, exec5 = nullptr, exec_flags = nullptr;
  REQUIRE(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess);
  REQUIRE(cudaGraphInstantiate(&exec5, graph, nullptr, nullptr, 0) == cudaSuccess);
  REQUIRE(cudaGraphInstantiateWithFlags(&exec_flags, graph, 0) == cudaSuccess);
  REQUIRE(cudaGraphDestroy(graph) == cudaSuccess);  // the executable graphs keep their own copy

  REQUIRE(cudaGraphLaunch(exec, s) == cudaSuccess);
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  SEG_CHECK_CLOSE(x.download(), std::vector<float>(x.size(), 2.0f), seg::test::Tolerance{});
  CHECK(out[0] == 2.0f);
  REQUIRE(cudaGraphLaunch(exec, s) == cudaSuccess);  // the same graph again: the work again
  REQUIRE(cudaGraphLaunch(exec5, s) == cudaSuccess);
  REQUIRE(cudaGraphLaunch(exec_flags, s) == cudaSuccess);
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  SEG_CHECK_CLOSE(x.download(), std::vector<float>(x.size(), 8.0f), seg::test::Tolerance{});
  CHECK(out[n - 1] == 8.0f);
  CHECK(cudaGraphExecDestroy(exec) == cudaSuccess);
  CHECK(cudaGraphExecDestroy(exec5) == cudaSuccess);
  CHECK(cudaGraphExecDestroy(exec_flags) == cudaSuccess);
  CHECK(cudaGraphExecDestroy(exec) == cudaErrorInvalidValue);
  (void)cudaGetLastError();
  cudaStreamDestroy(s);
  cudaFreeHost(out);
}

TEST_CASE("graphs: a graph launch is ordered with the work around it in its stream") {
  int* log = nullptr;
  int* count = nullptr;
  REQUIRE(cudaMallocHost(&log, 8 * sizeof(int)) == cudaSuccess);
  REQUIRE(cudaMallocHost(&count, sizeof(int)) == cudaSuccess);
  cudaStream_t s;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess);
  ks::append_tag(log, count, 2, s);
  ks::append_tag(log, count, 3, s);
  cudaGraph_t g;
  REQUIRE(cudaStreamEndCapture(s, &g) == cudaSuccess);
  cudaGraphExec_t exec;
  REQUIRE(cudaGraphInstantiate(&exec, g, 0) == cudaSuccess);
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    CAPTURE(seed);
    seg::sim::Options o;
    o.stream_order = seg::sim::StreamOrder::random;
    o.seed = seed;
    seg::sim::ScopedOptions scoped(o);
    *count = 0;
    ks::append_tag(log, count, 1, s);
    REQUIRE(cudaGraphLaunch(exec, s) == cudaSuccess);
    ks::append_tag(log, count, 4, s);
    REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
    CHECK(std::vector<int>(log, log + *count) == std::vector<int>{1, 2, 3, 4});
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(g);
  cudaStreamDestroy(s);
  cudaFreeHost(log);
  cudaFreeHost(count);
}

TEST_CASE("graphs: a capture forks into other streams through events, and must join back") {
  DeviceBuffer<float> a(16), b(16), out(1);
  cudaStream_t s1, s2;
  REQUIRE(cudaStreamCreate(&s1) == cudaSuccess);
  REQUIRE(cudaStreamCreate(&s2) == cudaSuccess);
  cudaEvent_t fork, join;
  REQUIRE(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming) == cudaSuccess);
  REQUIRE(cudaEventCreateWithFlags(&join, cudaEventDisableTiming) == cudaSuccess);
  auto capture = [&](bool rejoin) {
    REQUIRE(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal) == cudaSuccess);
    ks::fill(a.get(), 16, 1.0f, s1);
    REQUIRE(cudaEventRecord(fork, s1) == cudaSuccess);
    REQUIRE(cudaStreamWaitEvent(s2, fork, 0) == cudaSuccess);  // s2 joins the capture
    CHECK(capture_status(s2) == cudaStreamCaptureStatusActive);
    ks::fill(b.get(), 16, 2.0f, s2);
    ks::add_one(a.get(), 16, s1);  // concurrent with the fill of b
    if (rejoin) {
      REQUIRE(cudaEventRecord(join, s2) == cudaSuccess);
      REQUIRE(cudaStreamWaitEvent(s1, join, 0) == cudaSuccess);
    }
    ks::sum_first(a.get(), b.get(), out.get(), s1);
    cudaGraph_t g = nullptr;
    const cudaError_t e = cudaStreamEndCapture(s1, &g);
    CHECK(capture_status(s2) == cudaStreamCaptureStatusNone);  // the end takes every stream out
    return std::make_pair(e, g);
  };

  SUBCASE("joined: the graph replays with its edges, under any stream order") {
    const auto [e, g] = capture(true);
    REQUIRE(e == cudaSuccess);
    CHECK(node_count(g) == 4);
    cudaGraphExec_t exec;
    REQUIRE(cudaGraphInstantiate(&exec, g, 0) == cudaSuccess);
    for (uint64_t seed = 1; seed <= 5; ++seed) {
      CAPTURE(seed);
      seg::sim::Options o;
      o.stream_order = seg::sim::StreamOrder::random;
      o.seed = seed;
      seg::sim::ScopedOptions scoped(o);
      out.upload({0.0f});
      REQUIRE(cudaGraphLaunch(exec, s1) == cudaSuccess);
      REQUIRE(cudaStreamSynchronize(s1) == cudaSuccess);  // throws if the race detector objects
      CHECK(out.download()[0] == 4.0f);                   // (1 + 1) + 2
    }
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(g);
  }
  SUBCASE("not joined: cudaStreamEndCapture fails") {
    const auto [e, g] = capture(false);
    CHECK(e == cudaErrorStreamCaptureUnjoined);
    CHECK(g == nullptr);
    (void)cudaGetLastError();
  }
  cudaEventDestroy(fork);
  cudaEventDestroy(join);
  cudaStreamDestroy(s1);
  cudaStreamDestroy(s2);
}

TEST_CASE("graphs: the calls a capture forbids fail and invalidate it") {
  DeviceBuffer<float> x(filled(32, 0.0f));
  cudaStream_t s;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);  // a blocking stream
  REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess);
  ks::add_one(x.get(), 32, s);

  SUBCASE("cudaMalloc") {
    void* p = nullptr;
    CHECK(cudaMalloc(&p, 64) == cudaErrorStreamCaptureUnsupported);
    CHECK(p == nullptr);
  }
  SUBCASE("a synchronous copy") {
    std::vector<float> host(32);
    CHECK(cudaMemcpy(host.data(), x.get(), 32 * sizeof(float), cudaMemcpyDeviceToHost) ==
          cudaErrorStreamCaptureUnsupported);
  }
  SUBCASE("synchronising or querying the capturing stream") {
    CHECK(cudaStreamSynchronize(s) == cudaErrorStreamCaptureUnsupported);
    CHECK(cudaStreamQuery(s) == cudaErrorStreamCaptureUnsupported);
  }
  SUBCASE("synchronising the device") { CHECK(cudaDeviceSynchronize() == cudaErrorStreamCaptureUnsupported); }
  SUBCASE("querying an event recorded in the capture") {
    cudaEvent_t e;
    REQUIRE(cudaEventCreate(&e) == cudaSuccess);
    REQUIRE(cudaEventRecord(e, s) == cudaSuccess);
    CHECK(cudaEventQuery(e) == cudaErrorCapturedEvent);
    CHECK(cudaEventSynchronize(e) == cudaErrorCapturedEvent);
    cudaEventDestroy(e);
  }
  SUBCASE("a launch on the legacy stream, which would wait for the capturing blocking stream") {
    bool thrown = false;
    try {
      ks::add_one(x.get(), 32, 0);
    } catch (const seg::sim::KernelFault& f) {
      thrown = f.kind() == seg::sim::FaultKind::stream_capture &&
               std::string(f.what()).find("cudaErrorStreamCaptureImplicit") != std::string::npos;
    }
    CHECK(thrown);
  }
  // After that, work on the capturing stream fails too, and the end gives no graph.
  bool refused = false;
  try {
    ks::add_one(x.get(), 32, s);
  } catch (const seg::sim::KernelFault& f) {
    refused = std::string(f.what()).find("cudaErrorStreamCaptureInvalidated") != std::string::npos;
  }
  CHECK(refused);
  expect_invalidated_end(s);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  SEG_CHECK_CLOSE(x.download(), std::vector<float>(x.size(), 0.0f), seg::test::Tolerance{});  // nothing captured ran
  cudaStreamDestroy(s);
}

TEST_CASE("graphs: capture modes decide whose unsafe calls are forbidden") {
  cudaStream_t s;
  REQUIRE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
  auto malloc_in_other_thread = [](cudaStreamCaptureMode mode) {
    cudaError_t e = cudaSuccess;
    std::thread t([&] {
      cudaStreamCaptureMode m = mode;
      REQUIRE(cudaThreadExchangeStreamCaptureMode(&m) == cudaSuccess);
      void* p = nullptr;
      e = cudaMalloc(&p, 64);
      if (p) cudaFree(p);
    });
    t.join();
    return e;
  };
  auto end_ok = [&] {
    cudaGraph_t g = nullptr;
    REQUIRE(cudaStreamEndCapture(s, &g) == cudaSuccess);
    cudaGraphDestroy(g);
  };
  void* p = nullptr;

  SUBCASE("global: another thread (in the default global mode) may not either, unless it is relaxed") {
    REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess);
    CHECK(malloc_in_other_thread(cudaStreamCaptureModeRelaxed) == cudaSuccess);
    CHECK(capture_status(s) == cudaStreamCaptureStatusActive);
    CHECK(malloc_in_other_thread(cudaStreamCaptureModeGlobal) == cudaErrorStreamCaptureUnsupported);
    expect_invalidated_end(s);
  }
  SUBCASE("thread-local: other threads may, the capturing thread may not") {
    REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
    CHECK(malloc_in_other_thread(cudaStreamCaptureModeGlobal) == cudaSuccess);
    CHECK(capture_status(s) == cudaStreamCaptureStatusActive);
    CHECK(cudaMalloc(&p, 64) == cudaErrorStreamCaptureUnsupported);
    expect_invalidated_end(s);
  }
  SUBCASE("relaxed: everyone may") {
    REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed) == cudaSuccess);
    REQUIRE(cudaMalloc(&p, 64) == cudaSuccess);
    CHECK(malloc_in_other_thread(cudaStreamCaptureModeGlobal) == cudaSuccess);
    end_ok();
    cudaFree(p);
  }
  SUBCASE("a thread that exchanged its mode to relaxed may, even in its own global capture") {
    REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess);
    cudaStreamCaptureMode m = cudaStreamCaptureModeRelaxed;
    REQUIRE(cudaThreadExchangeStreamCaptureMode(&m) == cudaSuccess);
    CHECK(m == cudaStreamCaptureModeGlobal);
    REQUIRE(cudaMalloc(&p, 64) == cudaSuccess);
    REQUIRE(cudaThreadExchangeStreamCaptureMode(&m) == cudaSuccess);
    end_ok();
    cudaFree(p);
  }
  cudaStreamDestroy(s);
}

TEST_CASE("graphs: capture start and end are checked") {
  cudaStream_t s;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  cudaGraph_t g = nullptr;
  CHECK(cudaStreamBeginCapture(0, cudaStreamCaptureModeGlobal) == cudaErrorStreamCaptureUnsupported);
  CHECK(cudaStreamEndCapture(s, &g) == cudaErrorIllegalState);  // not capturing
  REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess);
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaErrorIllegalState);
  cudaError_t wrong_thread = cudaSuccess;
  std::thread t([&] { wrong_thread = cudaStreamEndCapture(s, &g); });
  t.join();
  CHECK(wrong_thread == cudaErrorStreamCaptureWrongThread);
  REQUIRE(cudaStreamEndCapture(s, &g) == cudaSuccess);
  CHECK(node_count(g) == 0);
  cudaGraphExec_t exec;
  REQUIRE(cudaGraphInstantiate(&exec, g, 0) == cudaSuccess);
  REQUIRE(cudaGraphLaunch(exec, s) == cudaSuccess);  // an empty graph
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  (void)cudaGetLastError();
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(g);
  cudaStreamDestroy(s);
}

TEST_CASE("graphs: a graph launched into a capture becomes part of the captured graph") {
  DeviceBuffer<float> x(filled(10, 0.0f));
  cudaStream_t s;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess);
  ks::add_one(x.get(), 10, s);
  cudaGraph_t inner;
  REQUIRE(cudaStreamEndCapture(s, &inner) == cudaSuccess);
  cudaGraphExec_t inner_exec;
  REQUIRE(cudaGraphInstantiate(&inner_exec, inner, 0) == cudaSuccess);
  REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess);
  REQUIRE(cudaGraphLaunch(inner_exec, s) == cudaSuccess);
  REQUIRE(cudaGraphLaunch(inner_exec, s) == cudaSuccess);
  ks::add_one(x.get(), 10, s);
  cudaGraph_t outer;
  REQUIRE(cudaStreamEndCapture(s, &outer) == cudaSuccess);
  CHECK(node_count(outer) == 3);
  cudaGraphExec_t outer_exec;
  REQUIRE(cudaGraphInstantiate(&outer_exec, outer, 0) == cudaSuccess);
  REQUIRE(cudaGraphLaunch(outer_exec, s) == cudaSuccess);
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  SEG_CHECK_CLOSE(x.download(), std::vector<float>(x.size(), 3.0f), seg::test::Tolerance{});
  cudaGraphExecDestroy(inner_exec);
  cudaGraphExecDestroy(outer_exec);
  cudaGraphDestroy(inner);
  cudaGraphDestroy(outer);
  cudaStreamDestroy(s);
}
