// NCCL in the simulator (docs/cuda-simulator.md, "NCCL"): collectives on simulated devices, from
// one host thread (group calls) or one thread per device, their results against a host computation
// of the same rank-order arithmetic, stream ordering with kernels and events, the race detector,
// and the errors where real NCCL would hang or corrupt memory.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tests/sim/sim_test_util.h"
#include "tests/sim/stream_test_kernels.h"

namespace ks = simtest::streams;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Makes `device` current for a scope.
class OnDevice {
 public:
  explicit OnDevice(int device) {
    REQUIRE(cudaGetDevice(&saved_) == cudaSuccess);
    REQUIRE(cudaSetDevice(device) == cudaSuccess);
  }
  ~OnDevice() { cudaSetDevice(saved_); }

 private:
  int saved_ = 0;
};

// cudaMalloc'd bytes on one device.
class DeviceBytes {
 public:
  DeviceBytes(int device, size_t bytes) : device_(device), bytes_(bytes) {
    OnDevice on(device);
    REQUIRE(cudaMalloc(&p_, bytes) == cudaSuccess);
  }
  ~DeviceBytes() { cudaFree(p_); }
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;
  template <class T>
  T* as() const {
    return static_cast<T*>(p_);
  }
  template <class T>
  void upload(const std::vector<T>& host) {
    REQUIRE(host.size() * sizeof(T) <= bytes_);
    OnDevice on(device_);
    REQUIRE(cudaMemcpy(p_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice) == cudaSuccess);
  }
  template <class T>
  std::vector<T> download(size_t n) const {
    std::vector<T> host(n);
    OnDevice on(device_);
    REQUIRE(cudaMemcpy(host.data(), p_, n * sizeof(T), cudaMemcpyDeviceToHost) == cudaSuccess);
    return host;
  }

 private:
  int device_;
  size_t bytes_;
  void* p_ = nullptr;
};

// One communicator over devices 0..n-1 (ncclCommInitAll) and a stream per device.
struct Ranks {
  int n;
  std::vector<ncclComm_t> comms;
  std::vector<cudaStream_t> streams;
  explicit Ranks(int ranks) : n(ranks), comms(ranks), streams(ranks) {
    REQUIRE(ncclCommInitAll(comms.data(), n, nullptr) == ncclSuccess);
    for (int d = 0; d < n; ++d) {
      OnDevice on(d);
      REQUIRE(cudaStreamCreate(&streams[d]) == cudaSuccess);
    }
  }
  ~Ranks() {
    for (int d = 0; d < n; ++d) {
      ncclCommDestroy(comms[d]);
      OnDevice on(d);
      cudaStreamDestroy(streams[d]);
    }
  }
  void sync() {
    for (int d = 0; d < n; ++d) REQUIRE(cudaStreamSynchronize(streams[d]) == cudaSuccess);
  }
};

// Host arithmetic of each element type, written with CUDA's own conversions (not the simulator's).
template <class T>
struct Host;
template <>
struct Host<float> {
  static constexpr ncclDataType_t type = ncclFloat32;
  static float make(float x) { return x; }
  static float get(float x) { return x; }
};
template <>
struct Host<__half> {
  static constexpr ncclDataType_t type = ncclFloat16;
  static __half make(float x) { return __float2half_rn(x); }
  static float get(__half x) { return __half2float(x); }
};
template <>
struct Host<__nv_bfloat16> {
  static constexpr ncclDataType_t type = ncclBfloat16;
  static __nv_bfloat16 make(float x) { return __float2bfloat16_rn(x); }
  static float get(__nv_bfloat16 x) { return __bfloat162float(x); }
};
template <>
struct Host<int32_t> {
  static constexpr ncclDataType_t type = ncclInt32;
  static int32_t make(float x) { return static_cast<int32_t>(std::lround(x)); }
  static float get(int32_t x) { return static_cast<float>(x); }
};

// acc = x[0]; acc = op(acc, x[r]) rounded to T for r = 1..n-1; avg: acc / n.
template <class T>
T reference(const std::vector<T>& x, ncclRedOp_t op) {
  if constexpr (std::is_same_v<T, int32_t>) {
    int64_t acc = x[0];
    for (size_t r = 1; r < x.size(); ++r) acc = op == ncclMax ? std::max<int64_t>(acc, x[r]) : acc + x[r];
    return static_cast<int32_t>(op == ncclAvg ? acc / static_cast<int64_t>(x.size()) : acc);
  } else {
    T acc = x[0];
    for (size_t r = 1; r < x.size(); ++r) {
      const float a = Host<T>::get(acc), b = Host<T>::get(x[r]);
      acc = Host<T>::make(op == ncclMax ? std::max(a, b) : a + b);
    }
    if (op == ncclAvg) acc = Host<T>::make(Host<T>::get(acc) / static_cast<float>(x.size()));
    return acc;
  }
}

// A value with many significant bits, different for every rank and element.
float input_value(int rank, size_t i, bool integral) {
  if (integral) return static_cast<float>(static_cast<int>((rank * 37 + i * 11) % 23) - 11);
  return 100.0f * std::sin(static_cast<float>(rank) * 1.7f + static_cast<float>(i) * 0.37f);
}

template <class T>
void check_all_reduce(int nranks, ncclRedOp_t op) {
  constexpr size_t kCount = 200;
  constexpr bool integral = std::is_same_v<T, int32_t>;
  CAPTURE(nranks);
  CAPTURE(static_cast<int>(op));
  Ranks ranks(nranks);
  std::vector<std::vector<T>> in(nranks, std::vector<T>(kCount));
  std::vector<std::unique_ptr<DeviceBytes>> send, recv;
  for (int r = 0; r < nranks; ++r) {
    for (size_t i = 0; i < kCount; ++i) in[r][i] = Host<T>::make(input_value(r, i, integral));
    send.push_back(std::make_unique<DeviceBytes>(r, kCount * sizeof(T)));
    recv.push_back(std::make_unique<DeviceBytes>(r, kCount * sizeof(T)));
    send[r]->upload(in[r]);
  }
  REQUIRE(ncclGroupStart() == ncclSuccess);
  for (int r = 0; r < nranks; ++r)
    REQUIRE(ncclAllReduce(send[r]->as<T>(), recv[r]->as<T>(), kCount, Host<T>::type, op, ranks.comms[r],
                          ranks.streams[r]) == ncclSuccess);
  REQUIRE(ncclGroupEnd() == ncclSuccess);
  ranks.sync();
  for (int r = 0; r < nranks; ++r) {
    const std::vector<T> got = recv[r]->download<T>(kCount);
    size_t wrong = 0;
    for (size_t i = 0; i < kCount; ++i) {
      std::vector<T> column;
      for (int q = 0; q < nranks; ++q) column.push_back(in[q][i]);
      const T want = reference(column, op);
      if (std::memcmp(&got[i], &want, sizeof(T)) != 0 && wrong++ == 0)
        FAIL_CHECK("rank " << r << " element " << i << ": got " << Host<T>::get(got[i]) << ", want "
                           << Host<T>::get(want));
    }
    CHECK(wrong == 0);
  }
}

// Runs `sync`, returns the KernelFault it throws (or fails).
template <class F>
seg::sim::KernelFault expect_fault(F sync) {
  try {
    sync();
  } catch (const seg::sim::KernelFault& f) {
    return f;
  }
  FAIL("no KernelFault");
  return seg::sim::KernelFault(seg::sim::FaultKind::trap, "");
}

// Sets the NCCL timeout for a scope.
class ScopedNcclTimeout {
 public:
  explicit ScopedNcclTimeout(double seconds) { seg::sim::set_nccl_timeout(seconds); }
  ~ScopedNcclTimeout() { seg::sim::set_nccl_timeout(0); }
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

TEST_CASE("nccl: version, communicator queries, error strings") {
  seg::sim::ScopedDeviceCount devices(2);
  int version = 0;
  REQUIRE(ncclGetVersion(&version) == ncclSuccess);
  CHECK(version == NCCL_VERSION_CODE);
  const int devlist[2] = {1, 0};
  ncclComm_t comms[2] = {};
  REQUIRE(ncclCommInitAll(comms, 2, devlist) == ncclSuccess);
  for (int r = 0; r < 2; ++r) {
    int count = 0, device = -1, rank = -1;
    REQUIRE(ncclCommCount(comms[r], &count) == ncclSuccess);
    REQUIRE(ncclCommCuDevice(comms[r], &device) == ncclSuccess);
    REQUIRE(ncclCommUserRank(comms[r], &rank) == ncclSuccess);
    CHECK(count == 2);
    CHECK(device == devlist[r]);
    CHECK(rank == r);
    ncclResult_t async = ncclInternalError;
    REQUIRE(ncclCommGetAsyncError(comms[r], &async) == ncclSuccess);
    CHECK(async == ncclSuccess);
  }
  const int bad[1] = {5};
  ncclComm_t none = nullptr;
  CHECK(ncclCommInitAll(&none, 1, bad) == ncclInvalidArgument);
  CHECK(contains(ncclGetLastError(nullptr), "device 5"));
  CHECK(std::string(ncclGetErrorString(ncclSuccess)) != std::string(ncclGetErrorString(ncclRemoteError)));
  CHECK(ncclGroupEnd() == ncclInvalidUsage);  // no ncclGroupStart
  for (ncclComm_t c : comms) CHECK(ncclCommDestroy(c) == ncclSuccess);
}

TEST_CASE("nccl: all-reduce sum, max and avg in f32, f16, bf16 and i32 equal the rank-order host arithmetic") {
  seg::sim::ScopedDeviceCount devices(3);
  for (int nranks : {2, 3})
    for (ncclRedOp_t op : {ncclSum, ncclMax, ncclAvg}) {
      check_all_reduce<float>(nranks, op);
      check_all_reduce<__half>(nranks, op);
      check_all_reduce<__nv_bfloat16>(nranks, op);
      check_all_reduce<int32_t>(nranks, op);
    }
}

TEST_CASE("nccl: float16 sums are rounded after every step (the test's reference is not the exact sum)") {
  // Guards the test above: rounding once at the end gives other results for these inputs.
  size_t differ = 0;
  for (size_t i = 0; i < 200; ++i) {
    std::vector<__half> x;
    float exact = 0;
    for (int r = 0; r < 3; ++r) {
      x.push_back(__float2half_rn(input_value(r, i, false)));
      exact += __half2float(x.back());
    }
    differ += __half2float(reference(x, ncclSum)) != __half2float(__float2half_rn(exact));
  }
  CHECK(differ > 0);
}

TEST_CASE("nccl: broadcast, reduce, reduce-scatter and all-gather on 3 devices") {
  seg::sim::ScopedDeviceCount devices(3);
  constexpr int n = 3;
  constexpr size_t count = 8;
  Ranks ranks(n);
  std::vector<std::unique_ptr<DeviceBytes>> send, recv;
  for (int r = 0; r < n; ++r) {
    send.push_back(std::make_unique<DeviceBytes>(r, n * count * sizeof(float)));
    recv.push_back(std::make_unique<DeviceBytes>(r, n * count * sizeof(float)));
    std::vector<float> v(n * count);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(100 * r + static_cast<int>(i));
    send[r]->upload(v);
  }
  auto run = [&](auto call) {
    REQUIRE(ncclGroupStart() == ncclSuccess);
    for (int r = 0; r < n; ++r) REQUIRE(call(r) == ncclSuccess);
    REQUIRE(ncclGroupEnd() == ncclSuccess);
    ranks.sync();
  };
  auto in = [&](int r, size_t i) { return static_cast<float>(100 * r + static_cast<int>(i)); };

  SUBCASE("broadcast from rank 1") {
    run([&](int r) {
      return ncclBroadcast(send[r]->as<float>(), recv[r]->as<float>(), count, ncclFloat32, 1, ranks.comms[r],
                           ranks.streams[r]);
    });
    for (int r = 0; r < n; ++r) {
      const std::vector<float> got = recv[r]->download<float>(count);
      for (size_t i = 0; i < count; ++i) CHECK(got[i] == in(1, i));
    }
  }
  SUBCASE("reduce (prod) to rank 2 leaves the others' recvbuff alone") {
    recv[0]->upload(std::vector<float>(count, -7.0f));
    run([&](int r) {
      return ncclReduce(send[r]->as<float>(), recv[r]->as<float>(), count, ncclFloat32, ncclProd, 2, ranks.comms[r],
                        ranks.streams[r]);
    });
    const std::vector<float> root = recv[2]->download<float>(count), other = recv[0]->download<float>(count);
    for (size_t i = 0; i < count; ++i) {
      CHECK(root[i] == in(0, i) * in(1, i) * in(2, i));
      CHECK(other[i] == -7.0f);
    }
  }
  SUBCASE("reduce-scatter (min): rank r gets block r") {
    run([&](int r) {
      return ncclReduceScatter(send[r]->as<float>(), recv[r]->as<float>(), count, ncclFloat32, ncclMin,
                               ranks.comms[r], ranks.streams[r]);
    });
    for (int r = 0; r < n; ++r) {
      const std::vector<float> got = recv[r]->download<float>(count);
      for (size_t i = 0; i < count; ++i) CHECK(got[i] == in(0, r * count + i));
    }
  }
  SUBCASE("all-gather: every rank gets every rank's block, in rank order") {
    run([&](int r) {
      return ncclAllGather(send[r]->as<float>(), recv[r]->as<float>(), count, ncclFloat32, ranks.comms[r],
                           ranks.streams[r]);
    });
    for (int r = 0; r < n; ++r) {
      const std::vector<float> got = recv[r]->download<float>(n * count);
      for (int q = 0; q < n; ++q)
        for (size_t i = 0; i < count; ++i) CHECK(got[q * count + i] == in(q, i));
    }
  }
  SUBCASE("in-place all-reduce") {
    run([&](int r) {
      return ncclAllReduce(send[r]->as<float>(), send[r]->as<float>(), count, ncclFloat32, ncclSum, ranks.comms[r],
                           ranks.streams[r]);
    });
    for (int r = 0; r < n; ++r) {
      const std::vector<float> got = send[r]->download<float>(count);
      for (size_t i = 0; i < count; ++i) CHECK(got[i] == in(0, i) + in(1, i) + in(2, i));
    }
  }
}

TEST_CASE("nccl: one host thread drives every device: kernels before and after the collective on each stream") {
  seg::sim::ScopedDeviceCount devices(2);
  constexpr int n = 64;
  Ranks ranks(2);
  DeviceBytes a(0, n * sizeof(float)), b(1, n * sizeof(float));
  float* grad[2] = {a.as<float>(), b.as<float>()};
  REQUIRE(ncclGroupStart() == ncclSuccess);
  for (int r = 0; r < 2; ++r) {
    OnDevice on(r);
    ks::fill(grad[r], n, 1.5f + r, ranks.streams[r]);  // queued before the collective: it sees 1.5 and 2.5
    REQUIRE(ncclAllReduce(grad[r], grad[r], n, ncclFloat32, ncclSum, ranks.comms[r], ranks.streams[r]) ==
            ncclSuccess);
  }
  REQUIRE(ncclGroupEnd() == ncclSuccess);
  for (int r = 0; r < 2; ++r) {
    OnDevice on(r);
    ks::add_one(grad[r], n, ranks.streams[r]);  // queued after: it sees the sum
  }
  // Synchronising rank 1's stream first runs rank 0's fill too (the collective needs it).
  REQUIRE(cudaStreamSynchronize(ranks.streams[1]) == cudaSuccess);
  const std::vector<float> one = b.download<float>(n);
  for (float x : one) CHECK(x == 5.0f);
  ranks.sync();
  for (float x : a.download<float>(n)) CHECK(x == 5.0f);
}

TEST_CASE("nccl: under the random stream order, every seed gives the same results and no race") {
  seg::sim::ScopedDeviceCount devices(3);
  constexpr int n = 32;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    CAPTURE(seed);
    seg::sim::Options o = seg::sim::options();
    o.stream_order = seg::sim::StreamOrder::random;
    o.seed = seed;
    seg::sim::ScopedOptions random_order(o);
    const uint64_t races = seg::sim::stream_race_count();
    Ranks ranks(3);
    std::vector<std::unique_ptr<DeviceBytes>> grad;
    REQUIRE(ncclGroupStart() == ncclSuccess);
    for (int r = 0; r < 3; ++r) {
      OnDevice on(r);
      grad.push_back(std::make_unique<DeviceBytes>(r, n * sizeof(float)));
      ks::fill(grad[r]->as<float>(), n, static_cast<float>(r), ranks.streams[r]);
      REQUIRE(ncclAllReduce(grad[r]->as<float>(), grad[r]->as<float>(), n, ncclFloat32, ncclSum, ranks.comms[r],
                            ranks.streams[r]) == ncclSuccess);
      ks::add_one(grad[r]->as<float>(), n, ranks.streams[r]);  // inside the group: queued at once, before the collective
    }
    REQUIRE(ncclGroupEnd() == ncclSuccess);
    ranks.sync();
    // (0 + 1) + (1 + 1) + (2 + 1); a collective queued at its call instead of at ncclGroupEnd gives 4.
    for (int r = 0; r < 3; ++r) CHECK(grad[r]->download<float>(n) == std::vector<float>(n, 6.0f));
    CHECK(seg::sim::stream_race_count() == races);
  }
}

TEST_CASE("nccl: one host thread per device, communicators from ncclCommInitAll or ncclCommInitRank") {
  seg::sim::ScopedDeviceCount devices(3);
  constexpr int n = 3, count = 32;
  for (const bool init_rank : {false, true}) {
  CAPTURE(init_rank);
  std::vector<ncclComm_t> comms(n);
  ncclUniqueId id;
  if (!init_rank) REQUIRE(ncclCommInitAll(comms.data(), n, nullptr) == ncclSuccess);
  if (init_rank) REQUIRE(ncclGetUniqueId(&id) == ncclSuccess);
  std::vector<std::vector<float>> results(n);
  std::vector<ncclResult_t> status(n, ncclInternalError);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      if (cudaSetDevice(r) != cudaSuccess) return;
      if (init_rank && ncclCommInitRank(&comms[r], n, id, r) != ncclSuccess) return;  // blocks for all ranks
      cudaStream_t s = nullptr;
      float* grad = nullptr;
      cudaStreamCreate(&s);
      cudaMalloc(&grad, count * sizeof(float));
      ks::fill(grad, count, static_cast<float>(r + 1), s);
      status[r] = ncclAllReduce(grad, grad, count, ncclFloat32, ncclSum, comms[r], s);
      ks::add_one(grad, count, s);
      results[r].resize(count);
      cudaMemcpyAsync(results[r].data(), grad, count * sizeof(float), cudaMemcpyDeviceToHost, s);
      cudaStreamSynchronize(s);  // waits for the other threads' calls
      cudaFree(grad);
      cudaStreamDestroy(s);
    });
  for (std::thread& t : threads) t.join();
  for (int r = 0; r < n; ++r) {
    CHECK(status[r] == ncclSuccess);
    REQUIRE(results[r].size() == static_cast<size_t>(count));
    for (float x : results[r]) CHECK(x == 1 + 2 + 3 + 1);
    int device = -1;
    REQUIRE(ncclCommCuDevice(comms[r], &device) == ncclSuccess);
    CHECK(device == r);
    ncclCommDestroy(comms[r]);
  }
  }
}

TEST_CASE("nccl: ncclCommInitRank of every rank from one thread inside a group") {
  seg::sim::ScopedDeviceCount devices(2);
  ncclUniqueId id;
  REQUIRE(ncclGetUniqueId(&id) == ncclSuccess);
  ncclComm_t comms[2] = {};
  REQUIRE(ncclGroupStart() == ncclSuccess);
  for (int r = 0; r < 2; ++r) {
    OnDevice on(r);
    REQUIRE(ncclCommInitRank(&comms[r], 2, id, r) == ncclSuccess);  // does not block inside a group
  }
  REQUIRE(ncclGroupEnd() == ncclSuccess);
  DeviceBytes x0(0, 4 * sizeof(int32_t)), x1(1, 4 * sizeof(int32_t));
  x0.upload(std::vector<int32_t>{1, 2, 3, 4});
  x1.upload(std::vector<int32_t>{10, 20, 30, 40});
  REQUIRE(ncclGroupStart() == ncclSuccess);
  REQUIRE(ncclAllReduce(x0.as<int32_t>(), x0.as<int32_t>(), 4, ncclInt32, ncclSum, comms[0], nullptr) == ncclSuccess);
  {
    OnDevice on(1);  // stream 0 is the legacy stream of the current device
    REQUIRE(ncclAllReduce(x1.as<int32_t>(), x1.as<int32_t>(), 4, ncclInt32, ncclSum, comms[1], nullptr) ==
            ncclSuccess);
  }
  REQUIRE(ncclGroupEnd() == ncclSuccess);
  CHECK(x0.download<int32_t>(4) == std::vector<int32_t>{11, 22, 33, 44});
  CHECK(x1.download<int32_t>(4) == std::vector<int32_t>{11, 22, 33, 44});
  for (ncclComm_t c : comms) ncclCommDestroy(c);
}

TEST_CASE("nccl: compute stream -> event -> comm stream all-reduce -> event -> compute stream, and a missing wait") {
  seg::sim::ScopedDeviceCount devices(2);
  constexpr int n = 64;
  for (const bool skip_second_wait : {false, true}) {
  CAPTURE(skip_second_wait);
  Ranks ranks(2);  // ranks.streams: the comm streams
  cudaStream_t compute[2] = {};
  cudaEvent_t produced[2] = {}, reduced[2] = {};
  DeviceBytes a(0, n * sizeof(float)), b(1, n * sizeof(float));
  float* grad[2] = {a.as<float>(), b.as<float>()};
  for (int r = 0; r < 2; ++r) {
    OnDevice on(r);
    REQUIRE(cudaStreamCreate(&compute[r]) == cudaSuccess);
    REQUIRE(cudaEventCreateWithFlags(&produced[r], cudaEventDisableTiming) == cudaSuccess);
    REQUIRE(cudaEventCreateWithFlags(&reduced[r], cudaEventDisableTiming) == cudaSuccess);
  }
  const uint64_t races = seg::sim::stream_race_count();
  for (int r = 0; r < 2; ++r) {
    OnDevice on(r);
    ks::fill(grad[r], n, 2.0f, compute[r]);
    REQUIRE(cudaEventRecord(produced[r], compute[r]) == cudaSuccess);
    REQUIRE(cudaStreamWaitEvent(ranks.streams[r], produced[r], 0) == cudaSuccess);
  }
  REQUIRE(ncclGroupStart() == ncclSuccess);
  for (int r = 0; r < 2; ++r)
    REQUIRE(ncclAllReduce(grad[r], grad[r], n, ncclFloat32, ncclSum, ranks.comms[r], ranks.streams[r]) ==
            ncclSuccess);
  REQUIRE(ncclGroupEnd() == ncclSuccess);
  for (int r = 0; r < 2; ++r) {
    OnDevice on(r);
    REQUIRE(cudaEventRecord(reduced[r], ranks.streams[r]) == cudaSuccess);
    if (!skip_second_wait || r == 1) REQUIRE(cudaStreamWaitEvent(compute[r], reduced[r], 0) == cudaSuccess);
    ks::add_one(grad[r], n, compute[r]);
  }
  std::string report;
  for (int r = 0; r < 2; ++r) {
    OnDevice on(r);
    try {
      cudaDeviceSynchronize();
    } catch (const seg::sim::KernelFault& f) {
      CHECK(f.kind() == seg::sim::FaultKind::stream_race);
      report += f.what();
    }
  }
  if (!skip_second_wait) {
    CHECK(report.empty());
    CHECK(seg::sim::stream_race_count() == races);
    CHECK(b.download<float>(n) == std::vector<float>(n, 5.0f));
  } else {
    CHECK(seg::sim::stream_race_count() == races + 1);
    CHECK(contains(report, "ncclAllReduce(count=64, float32, sum) rank 0 of 2"));
    CHECK(contains(report, "add_one"));
  }
  for (int r = 0; r < 2; ++r) {
    OnDevice on(r);
    cudaEventDestroy(produced[r]);
    cudaEventDestroy(reduced[r]);
    cudaStreamDestroy(compute[r]);
  }
  }
}

TEST_CASE("nccl: the op trace shows the all-reduce on the comm stream starting before a later kernel on the compute stream") {
  seg::sim::ScopedDeviceCount devices(2);
  // In queue order, as a GPU starts work (SEG_SIM_STREAM_ORDER=random may run the later kernels first).
  seg::sim::Options fifo = seg::sim::options();
  fifo.stream_order = seg::sim::StreamOrder::fifo;
  seg::sim::ScopedOptions in_queue_order(fifo);
  constexpr int n = 64;
  Ranks ranks(2);
  cudaStream_t compute[2] = {};
  cudaEvent_t produced[2] = {};
  DeviceBytes g0(0, n * sizeof(float)), g1(1, n * sizeof(float)), h0(0, n * sizeof(float)), h1(1, n * sizeof(float));
  float* grad[2] = {g0.as<float>(), g1.as<float>()};
  float* next[2] = {h0.as<float>(), h1.as<float>()};
  for (int r = 0; r < 2; ++r) {
    OnDevice on(r);
    REQUIRE(cudaStreamCreate(&compute[r]) == cudaSuccess);
    REQUIRE(cudaEventCreateWithFlags(&produced[r], cudaEventDisableTiming) == cudaSuccess);
  }
  seg::sim::start_op_trace();
  // The backward pass of one layer produced `grad`; its all-reduce overlaps the next layer's work.
  for (int r = 0; r < 2; ++r) {
    OnDevice on(r);
    ks::fill(grad[r], n, 1.0f, compute[r]);
    REQUIRE(cudaEventRecord(produced[r], compute[r]) == cudaSuccess);
    REQUIRE(cudaStreamWaitEvent(ranks.streams[r], produced[r], 0) == cudaSuccess);
  }
  REQUIRE(ncclGroupStart() == ncclSuccess);
  for (int r = 0; r < 2; ++r)
    REQUIRE(ncclAllReduce(grad[r], grad[r], n, ncclFloat32, ncclSum, ranks.comms[r], ranks.streams[r]) ==
            ncclSuccess);
  REQUIRE(ncclGroupEnd() == ncclSuccess);
  for (int r = 0; r < 2; ++r) {
    OnDevice on(r);
    ks::fill(next[r], n, 3.0f, compute[r]);
    ks::add_one(next[r], n, compute[r]);
  }
  for (int r = 0; r < 2; ++r) {
    OnDevice on(r);
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  }
  const std::vector<seg::sim::TracedOp> trace = seg::sim::take_op_trace();
  const seg::sim::TracedOp* all_reduce = nullptr;
  const seg::sim::TracedOp* last_kernel = nullptr;
  int reduce_entries = 0;
  for (const seg::sim::TracedOp& t : trace) {
    if (contains(t.description, "ncclAllReduce")) {
      ++reduce_entries;
      if (t.device == 0) all_reduce = &t;
    }
    if (t.device == 0 && t.stream == compute[0] && contains(t.description, "add_one")) last_kernel = &t;
  }
  CHECK(reduce_entries == 2);  // one per rank
  REQUIRE(all_reduce);
  REQUIRE(last_kernel);
  CHECK(all_reduce->stream == ranks.streams[0]);
  CHECK(contains(all_reduce->description, "rank 0 of 2 on stream"));
  CHECK(contains(all_reduce->description, "called from"));
  CHECK(all_reduce->finish != 0);
  CHECK(all_reduce->start < last_kernel->start);
  CHECK(seg::sim::take_op_trace().empty());  // recording stopped
  for (int r = 0; r < 2; ++r) {
    OnDevice on(r);
    cudaEventDestroy(produced[r]);
    cudaStreamDestroy(compute[r]);
  }
}

TEST_CASE("nccl: mismatched n-th calls of two ranks are an error naming both calls") {
  seg::sim::ScopedDeviceCount devices(2);
  Ranks ranks(2);
  DeviceBytes a(0, 64), b(1, 64);
  REQUIRE(ncclGroupStart() == ncclSuccess);
  REQUIRE(ncclAllReduce(a.as<float>(), a.as<float>(), 4, ncclFloat32, ncclSum, ranks.comms[0], ranks.streams[0]) ==
          ncclSuccess);
  REQUIRE(ncclAllReduce(b.as<float>(), b.as<float>(), 8, ncclFloat32, ncclSum, ranks.comms[1], ranks.streams[1]) ==
          ncclSuccess);
  CHECK(ncclGroupEnd() == ncclInvalidUsage);
  const std::string message = ncclGetLastError(ranks.comms[1]);
  CHECK(contains(message, "mismatched NCCL calls in collective #1 of communicator"));
  CHECK(contains(message, "rank 0 called ncclAllReduce(count=4, float32, sum)"));
  CHECK(contains(message, "rank 1 called ncclAllReduce(count=8, float32, sum)"));
  for (ncclComm_t c : ranks.comms) {
    ncclResult_t async = ncclSuccess;
    REQUIRE(ncclCommGetAsyncError(c, &async) == ncclSuccess);
    CHECK(async == ncclInvalidUsage);
  }
  // Rank 0's queued op reports the failure instead of waiting for rank 1 forever.
  const seg::sim::KernelFault f = expect_fault([&] { cudaStreamSynchronize(ranks.streams[0]); });
  CHECK(f.kind() == seg::sim::FaultKind::bad_argument);
  CHECK(contains(f.what(), "rank 1 called ncclAllReduce(count=8"));
  ranks.sync();
}

TEST_CASE("nccl: a different collective or op as the n-th call is a mismatch too") {
  seg::sim::ScopedDeviceCount devices(2);
  Ranks ranks(2);
  DeviceBytes a(0, 64), b(1, 64);
  for (const bool other_op : {false, true}) {
  CAPTURE(other_op);
  REQUIRE(ncclGroupStart() == ncclSuccess);
  REQUIRE(ncclAllReduce(a.as<float>(), a.as<float>(), 4, ncclFloat32, ncclSum, ranks.comms[0], ranks.streams[0]) ==
          ncclSuccess);
  if (other_op)
    REQUIRE(ncclAllReduce(b.as<float>(), b.as<float>(), 4, ncclFloat32, ncclMax, ranks.comms[1], ranks.streams[1]) ==
            ncclSuccess);
  else
    REQUIRE(ncclBroadcast(b.as<float>(), b.as<float>(), 4, ncclFloat32, 0, ranks.comms[1], ranks.streams[1]) ==
            ncclSuccess);
  CHECK(ncclGroupEnd() == ncclInvalidUsage);
  CHECK(contains(ncclGetLastError(nullptr), other_op ? "ncclAllReduce(count=4, float32, max)"
                                                     : "ncclBroadcast(count=4, float32, root=0)"));
  expect_fault([&] { cudaStreamSynchronize(ranks.streams[0]); });
  ranks.sync();
  }
}

TEST_CASE("nccl: a rank that never calls makes the collective time out instead of hanging") {
  seg::sim::ScopedDeviceCount devices(2);
  ScopedNcclTimeout timeout(1.0);
  Ranks ranks(2);
  DeviceBytes a(0, 64);
  REQUIRE(ncclAllReduce(a.as<float>(), a.as<float>(), 4, ncclFloat32, ncclSum, ranks.comms[0], ranks.streams[0]) ==
          ncclSuccess);
  const auto t0 = std::chrono::steady_clock::now();
  const seg::sim::KernelFault f = expect_fault([&] { cudaStreamSynchronize(ranks.streams[0]); });
  const double waited = seconds_since(t0);
  CHECK(waited >= 0.9);
  CHECK(waited < 30.0);
  CHECK(f.kind() == seg::sim::FaultKind::deadlock);
  CHECK(contains(f.what(), "collective #1 of communicator"));
  CHECK(contains(f.what(), "timed out after 1 s"));
  CHECK(contains(f.what(), "rank 0 called ncclAllReduce(count=4, float32, sum)"));
  CHECK(contains(f.what(), "rank(s) 1 never called it"));
  for (ncclComm_t c : ranks.comms) {
    ncclResult_t async = ncclSuccess;
    REQUIRE(ncclCommGetAsyncError(c, &async) == ncclSuccess);
    CHECK(async == ncclRemoteError);
  }
  ranks.sync();  // the fault was reported: the streams work again
}

TEST_CASE("nccl: ncclCommInitRank times out when a rank never joins") {
  seg::sim::ScopedDeviceCount devices(2);
  ScopedNcclTimeout timeout(1.0);
  ncclUniqueId id;
  REQUIRE(ncclGetUniqueId(&id) == ncclSuccess);
  ncclComm_t comm = nullptr;
  CHECK(ncclCommInitRank(&comm, 2, id, 0) == ncclRemoteError);
  CHECK(comm == nullptr);
  CHECK(contains(ncclGetLastError(nullptr), "rank(s) 1 never joined"));
}

TEST_CASE("nccl: ncclCommAbort wakes a thread waiting for the collective") {
  seg::sim::ScopedDeviceCount devices(2);
  Ranks ranks(2);  // the default 60 s timeout: the abort, not the timeout, ends the wait
  DeviceBytes a(0, 64);
  REQUIRE(ncclAllReduce(a.as<float>(), a.as<float>(), 4, ncclFloat32, ncclSum, ranks.comms[0], ranks.streams[0]) ==
          ncclSuccess);
  std::string fault;
  const auto t0 = std::chrono::steady_clock::now();
  std::thread waiter([&] {
    try {
      cudaStreamSynchronize(ranks.streams[0]);
    } catch (const seg::sim::KernelFault& f) {
      fault = f.what();
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  REQUIRE(ncclCommAbort(ranks.comms[1]) == ncclSuccess);
  ranks.comms[1] = nullptr;  // ncclCommDestroy(nullptr) in ~Ranks does nothing
  waiter.join();
  CHECK(seconds_since(t0) < 30.0);
  CHECK(contains(fault, "can never complete: rank 1 called ncclCommAbort"));
  ncclResult_t async = ncclSuccess;
  REQUIRE(ncclCommGetAsyncError(ranks.comms[0], &async) == ncclSuccess);
  CHECK(async == ncclRemoteError);
}

TEST_CASE("nccl: a rank destroying its communicator before calling fails the collective its peers wait in") {
  seg::sim::ScopedDeviceCount devices(2);
  Ranks ranks(2);
  DeviceBytes a(0, 64);
  REQUIRE(ncclAllReduce(a.as<float>(), a.as<float>(), 4, ncclFloat32, ncclSum, ranks.comms[0], ranks.streams[0]) ==
          ncclSuccess);
  REQUIRE(ncclCommDestroy(ranks.comms[1]) == ncclSuccess);
  ranks.comms[1] = nullptr;
  const auto t0 = std::chrono::steady_clock::now();
  const seg::sim::KernelFault f = expect_fault([&] { cudaStreamSynchronize(ranks.streams[0]); });
  CHECK(seconds_since(t0) < 30.0);
  CHECK(contains(f.what(), "rank 1 destroyed its communicator (ncclCommDestroy) first"));
  ncclResult_t async = ncclSuccess;
  REQUIRE(ncclCommGetAsyncError(ranks.comms[0], &async) == ncclSuccess);
  CHECK(async == ncclRemoteError);
}

TEST_CASE("nccl: a rank's earlier stream work waiting for the collective itself is a cycle, reported at once") {
  seg::sim::ScopedDeviceCount devices(2);
  Ranks ranks(2);
  DeviceBytes a(0, 64), b(1, 64);
  cudaEvent_t after_rank0 = nullptr;
  REQUIRE(cudaEventCreateWithFlags(&after_rank0, cudaEventDisableTiming) == cudaSuccess);
  REQUIRE(ncclAllReduce(a.as<float>(), a.as<float>(), 4, ncclFloat32, ncclSum, ranks.comms[0], ranks.streams[0]) ==
          ncclSuccess);
  REQUIRE(cudaEventRecord(after_rank0, ranks.streams[0]) == cudaSuccess);
  REQUIRE(cudaStreamWaitEvent(ranks.streams[1], after_rank0, 0) == cudaSuccess);  // rank 1 waits for rank 0's end
  REQUIRE(ncclAllReduce(b.as<float>(), b.as<float>(), 4, ncclFloat32, ncclSum, ranks.comms[1], ranks.streams[1]) ==
          ncclSuccess);
  const auto t0 = std::chrono::steady_clock::now();
  const seg::sim::KernelFault f = expect_fault([&] { cudaStreamSynchronize(ranks.streams[1]); });
  CHECK(seconds_since(t0) < 30.0);
  CHECK(f.kind() == seg::sim::FaultKind::deadlock);
  CHECK(contains(f.what(), "can never start"));
  ranks.sync();
  cudaEventDestroy(after_rank0);
}

TEST_CASE("nccl: two communicators' collectives queued in opposite orders on the same streams are a cycle") {
  seg::sim::ScopedDeviceCount devices(2);
  Ranks first(2), second(2);
  DeviceBytes a(0, 64), b(1, 64);
  // Rank 0 queues first's collective then second's, rank 1 the other way round, each on one stream.
  REQUIRE(ncclAllReduce(a.as<float>(), a.as<float>(), 4, ncclFloat32, ncclSum, first.comms[0], first.streams[0]) ==
          ncclSuccess);
  REQUIRE(ncclAllReduce(a.as<float>(), a.as<float>(), 4, ncclFloat32, ncclSum, second.comms[0], first.streams[0]) ==
          ncclSuccess);
  REQUIRE(ncclAllReduce(b.as<float>(), b.as<float>(), 4, ncclFloat32, ncclSum, second.comms[1], first.streams[1]) ==
          ncclSuccess);
  REQUIRE(ncclAllReduce(b.as<float>(), b.as<float>(), 4, ncclFloat32, ncclSum, first.comms[1], first.streams[1]) ==
          ncclSuccess);
  const seg::sim::KernelFault one = expect_fault([&] { cudaStreamSynchronize(first.streams[0]); });
  const seg::sim::KernelFault two = expect_fault([&] { cudaStreamSynchronize(first.streams[1]); });
  CHECK(contains(one.what(), "can never start"));
  CHECK(contains(two.what(), "can never start"));
  first.sync();
}

TEST_CASE("nccl: buffers that are not device memory of the communicator's device are ncclInvalidArgument") {
  seg::sim::ScopedDeviceCount devices(2);
  Ranks ranks(2);
  DeviceBytes on0(0, 64), on1(1, 64);
  std::vector<float> host(16);
  float* pinned = nullptr;
  REQUIRE(cudaMallocHost(&pinned, 64) == cudaSuccess);
  auto all_reduce = [&](const void* send, void* recv, size_t count) {
    return ncclAllReduce(send, recv, count, ncclFloat32, ncclSum, ranks.comms[0], ranks.streams[0]);
  };
  CHECK(all_reduce(host.data(), on0.as<float>(), 4) == ncclInvalidArgument);
  CHECK(contains(ncclGetLastError(nullptr), "sendbuff"));
  CHECK(all_reduce(on0.as<float>(), on1.as<float>(), 4) == ncclInvalidArgument);
  CHECK(contains(ncclGetLastError(nullptr), "is memory of device 1, but the rank's device is 0"));
  CHECK(all_reduce(pinned, pinned, 4) == ncclInvalidArgument);
  CHECK(all_reduce(on0.as<float>(), on0.as<float>(), 1000) == ncclInvalidArgument);
  CHECK(contains(ncclGetLastError(nullptr), "too small"));
  CHECK(ncclAllReduce(on0.as<float>(), on0.as<float>(), 4, ncclFloat32, ncclSum, ranks.comms[0], ranks.streams[1]) ==
        ncclInvalidArgument);  // a stream of another device
  CHECK(ncclAllReduce(on0.as<float>(), on0.as<float>(), 4, ncclFloat8e4m3, ncclSum, ranks.comms[0],
                      ranks.streams[0]) == ncclInvalidArgument);
  CHECK(ncclBroadcast(on0.as<float>(), on0.as<float>(), 4, ncclFloat32, 2, ranks.comms[0], ranks.streams[0]) ==
        ncclInvalidArgument);  // root out of range
  // Nothing was queued: a valid collective afterwards is still collective #1 of both ranks.
  REQUIRE(ncclGroupStart() == ncclSuccess);
  REQUIRE(all_reduce(on0.as<float>(), on0.as<float>(), 4) == ncclSuccess);
  REQUIRE(ncclAllReduce(on1.as<float>(), on1.as<float>(), 4, ncclFloat32, ncclSum, ranks.comms[1], ranks.streams[1]) ==
          ncclSuccess);
  REQUIRE(ncclGroupEnd() == ncclSuccess);
  ranks.sync();
  cudaFreeHost(pinned);
}
