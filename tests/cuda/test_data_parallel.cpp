// Data parallel between GPUs (issue 16's GPU half): the NCCL communicator (core/comm_nccl.cpp) and
// the bucketed gradient all-reduce on device tensors (core/data_parallel.cpp), with one host thread
// per GPU as `--gpus 0-1` runs them. In the simulated build (label sim) the two GPUs are
// kernels/sim's simulated devices and NCCL is the simulator's (kernels/sim/nccl_*.cpp); on a real
// machine (label gpu) the cases need two GPUs and are reported as skipped on one. On the simulator
// every data-parallel case also checks that its stream race detector reported nothing.
#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <mutex>
#include <thread>

#include "core/amp_step.h"
#include "core/comm.h"
#include "core/data_parallel.h"
#include "core/error.h"
#include "core/loss_scaler.h"
#include "core/optim.h"
#include "core/stream.h"
#include "layers/conv2d.h"
#include "layers/ops.h"
#include "layers/sync_bn.h"
#include "tests/common/compare_tensor.h"
#include "tests/common/requirement.h"
#include "tests/cuda/cuda_backend_util.h"
#include "tests/layers/test_helpers.h"

using namespace seg;

namespace {

constexpr int kRanks = 2;

// Two devices for the case: the simulator makes them (for the rest of the process: core/'s caching
// allocator and per-device streams keep device 1's memory and streams, so the count cannot be set
// back); a real machine must have them.
struct TwoDevices {
  TwoDevices() {
#ifndef SEG_TEST_ON_GPU
    if (sim::device_count() < kRanks) sim::set_device_count(kRanks);
#endif
  }
};

}  // namespace

// The cases form the CTest tests test_cuda_two_gpus (the simulator: always two devices) and
// test_cuda_gpu_two_gpus, reported as Skipped on a machine with fewer than two GPUs.
static std::string two_gpus_missing() {
#ifdef SEG_TEST_ON_GPU
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n < kRanks) return "fewer than 2 GPUs";
#endif
  return "";
}
SEG_TEST_REQUIREMENT(two_gpus, [] { return two_gpus_missing(); });

namespace {

// Runs body(rank, comm) on one thread per rank, each thread's current device its rank's GPU, and
// re-throws the first exception.
void on_ranks(std::vector<std::unique_ptr<Communicator>>& comms, const std::function<void(int, Communicator&)>& body) {
  std::vector<std::exception_ptr> errors(comms.size());
  std::vector<std::thread> threads;
  for (size_t r = 0; r < comms.size(); ++r)
    threads.emplace_back([&, r] {
      try {
        set_current_cuda_device(comms[r]->device().index);
        body(static_cast<int>(r), *comms[r]);
        synchronize(comms[r]->device());
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

// Deterministic values that differ by rank and position.
Tensor host_values(const Shape& shape, int rank, float scale, DType dtype = DType::f32) {
  std::vector<float> v(static_cast<size_t>(shape.numel()));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = scale * (static_cast<float>((i * 7 + static_cast<size_t>(rank) * 13) % 17) - 8.0f) / 8.0f;
  Tensor t = Tensor::from_vector<float>(shape, v);
  return dtype == DType::f32 ? t : t.to(dtype);
}

// A two-convolution net whose gradients come out of real backward kernels.
struct Net {
  Conv2d conv1{3, 8, 3, 1, 1, 1, 1, true};
  Conv2d conv2{8, 4, 1, 1, 0, 1, 1, false};
  std::vector<Tensor> parameters() const {
    std::vector<Tensor> p = conv1.parameters();
    for (const Tensor& t : conv2.parameters()) p.push_back(t);
    return p;
  }
  void init(int rank) {
    for (Tensor& p : parameters()) p.copy_(host_values(p.shape(), rank, 0.3f));
  }
  void to(Device d) {
    conv1.to(d);
    conv2.to(d);
  }
  Tensor loss(const Tensor& x) { return ops::mean(conv2.forward(ops::relu(conv1.forward(x)))); }
};

std::vector<std::vector<float>> grads_on_host(const Net& net) {
  std::vector<std::vector<float>> out;
  for (const Tensor& p : net.parameters()) out.push_back(p.grad().to(Device::cpu()).to_vector<float>());
  return out;
}

// The simulator's stream race detector (kernels/sim/race_detector.h) watches every kernel, copy and
// collective of the case: work on the compute stream and on the communicator's stream that touches
// the same bytes must be ordered by events. A race would also throw at the next synchronising call,
// but a case that catches errors (or one whose race is found after its last synchronisation) would
// hide it, so each case also checks the count it started with. (On a real GPU nothing counts.)
struct NoStreamRaces {
#ifndef SEG_TEST_ON_GPU
  uint64_t before = sim::stream_race_count();
  void check() const {
    const uint64_t now = sim::stream_race_count();
    CHECK_MESSAGE(now == before, (now - before) << " stream race(s); the last: " << sim::last_stream_race_report());
  }
#else
  void check() const {}
#endif
};

}  // namespace

TEST_CASE("NCCL communicators: one per GPU, describe themselves, sum and max on device memory" * SEG_REQUIRES(two_gpus)) {
  TwoDevices two;
  REQUIRE(built_with_nccl());
  auto comms = make_nccl_communicators({0, 1});
  REQUIRE(comms.size() == 2);
  CHECK(comms[1]->rank() == 1);
  CHECK(comms[1]->size() == 2);
  CHECK(comms[1]->device() == Device::cuda(1));
  CHECK(comms[0]->describe().find("NCCL 2.") == 0);
  CHECK(comms[0]->describe().find("rank 0 of 2, cuda:0") != std::string::npos);
  std::vector<std::vector<float>> sums(2);
  std::vector<std::vector<int32_t>> maxes(2);
  std::vector<std::vector<uint64_t>> gathered(2);
  on_ranks(comms, [&](int r, Communicator& c) {
    Tensor x = host_values({1000}, r, 1.0f).to(c.device());
    c.allreduce_sum(x.data<float>(), x.numel());
    sums[r] = x.to(Device::cpu()).to_vector<float>();
    Tensor m = Tensor::from_vector<int32_t>({3}, {r, 5 - r, 0}).to(c.device());
    c.allreduce_max(m.data<int32_t>(), 3);
    maxes[r] = m.to(Device::cpu()).to_vector<int32_t>();
    gathered[r] = c.allgather(100 + static_cast<uint64_t>(r));  // host memory: staged
    int32_t host_flag = r == 1 ? 1 : 0;
    c.allreduce_max(&host_flag, 1);
    CHECK(host_flag == 1);
    c.barrier();
  });
  const std::vector<float> a = host_values({1000}, 0, 1.0f).to_vector<float>();
  const std::vector<float> b = host_values({1000}, 1, 1.0f).to_vector<float>();
  for (int r = 0; r < 2; ++r) {
    for (size_t i = 0; i < a.size(); ++i) REQUIRE(sums[r][i] == a[i] + b[i]);
    CHECK(maxes[r] == std::vector<int32_t>{1, 5, 0});
    CHECK(gathered[r] == std::vector<uint64_t>{100, 101});
  }
}

TEST_CASE("NCCL data parallel: rank 0's parameters reach every GPU, and each gradient becomes the sum of the ranks'" * SEG_REQUIRES(two_gpus)) {
  TwoDevices two;
  // 16 bytes: every parameter its own bucket, so the hooks start all-reduces during backward
  // (asynchronous, on the communicator's stream); the default size makes one bucket (one
  // stream-ordered all-reduce after backward).
  for (const int64_t bucket_bytes : {int64_t{16}, GradientAllReduce::kDefaultBucketBytes}) {
    CAPTURE(bucket_bytes);
    const NoStreamRaces races;
    auto comms = make_nccl_communicators({0, 1});
    std::vector<std::vector<std::vector<float>>> local(2), summed(2), params(2);
    std::vector<GradientAllReduce::Stats> stats(2);
    on_ranks(comms, [&](int r, Communicator& c) {
      Net net;
      net.init(r);  // the ranks start different ...
      net.to(c.device());
      broadcast_from_root(c, net.parameters());  // ... and all take rank 0's
      for (const Tensor& p : net.parameters()) params[r].push_back(p.to(Device::cpu()).to_vector<float>());
      const Tensor x = host_values({2, 6, 6, 3}, r, 1.0f).to(c.device());
      // This rank's own gradients (no all-reduce) ...
      net.loss(x).backward();
      local[r] = grads_on_host(net);
      for (Tensor& p : net.parameters()) p.zero_grad();
      // ... and the same backward with the all-reduce: the sum of both ranks' gradients.
      GradientAllReduce allreduce(c, net.parameters(), bucket_bytes);
      net.loss(x).backward();
      allreduce.finish();
      stats[r] = allreduce.stats();
      summed[r] = grads_on_host(net);
    });
    races.check();
    CHECK(params[0] == params[1]);
    CHECK(stats[0].buckets == (bucket_bytes == 16 ? 3 : 1));
    CHECK(stats[0].started_in_backward == (bucket_bytes == 16 ? 3 : 0));
    for (size_t k = 0; k < local[0].size(); ++k) {
      CAPTURE(k);
      REQUIRE(local[0][k].size() == summed[0][k].size());
      CHECK(local[0][k] != local[1][k]);  // the ranks' inputs differ, so must their gradients
      for (size_t i = 0; i < local[0][k].size(); ++i) {
        // Two ranks: the sum is one f32 addition, the same on every rank.
        REQUIRE(summed[0][k][i] == local[0][k][i] + local[1][k][i]);
        REQUIRE(summed[1][k][i] == summed[0][k][i]);
      }
    }
  }
}

TEST_CASE("NCCL data parallel: half gradients travel as half (summed in f32, rounded once per step) or as f32" * SEG_REQUIRES(two_gpus)) {
  TwoDevices two;
  for (const GradientWire wire : {GradientWire::storage, GradientWire::f32}) {
    const NoStreamRaces races;
    auto comms = make_nccl_communicators({0, 1});
    std::vector<std::vector<float>> grad(2), local(2);
    std::vector<GradientAllReduce::Stats> stats(2);
    on_ranks(comms, [&](int r, Communicator& c) {
      Tensor w = host_values({300}, 0, 0.5f, DType::f16).to(c.device());
      w.set_requires_grad(true);
      const Tensor x = host_values({300}, r, 0.7f, DType::f16).to(c.device());
      ops::sum(ops::mul(w, x)).backward();  // dw = x, exactly
      local[r] = w.grad().to(DType::f32).to(Device::cpu()).to_vector<float>();
      w.zero_grad();
      GradientAllReduce allreduce(c, {w}, GradientAllReduce::kDefaultBucketBytes, wire);
      ops::sum(ops::mul(w, x)).backward();
      allreduce.finish();
      stats[r] = allreduce.stats();
      grad[r] = w.grad().to(DType::f32).to(Device::cpu()).to_vector<float>();
    });
    races.check();
    CHECK(stats[0].half_buckets == (wire == GradientWire::storage ? 1 : 0));
    CHECK(stats[0].bytes == 300 * (wire == GradientWire::storage ? 2 : 4));
    for (size_t i = 0; i < grad[0].size(); ++i) {
      // Both wires give the correctly rounded half of the exact sum of two halves.
      const float expect = static_cast<float>(f16(local[0][i] + local[1][i]));
      REQUIRE(grad[0][i] == expect);
      REQUIRE(grad[1][i] == expect);
    }
  }
}

TEST_CASE("NCCL: ranks started with different runs all stop with the difference named" * SEG_REQUIRES(two_gpus)) {
  TwoDevices two;
  auto comms = make_nccl_communicators({0, 1});
  std::vector<std::string> messages(2);
  on_ranks(comms, [&](int r, Communicator& c) {
    try {
      check_same_run(c, r == 0 ? "model = a\nbatch = 2\n" : "model = a\nbatch = 4\n");
    } catch (const Error& e) {
      messages[r] = e.message();
    }
  });
  for (const std::string& m : messages) {
    CHECK(m.find("rank 1 of 2 started with a different run than rank 0") != std::string::npos);
    CHECK(m.find("rank 0: 'batch = 2', rank 1: 'batch = 4'") != std::string::npos);
  }
}

namespace {

// One SyncBN forward and backward on each GPU of its rows of the union (n0 images on cuda:0, n1 on
// cuda:1) in storage dtype `dt`, against one f64 BatchNorm over the union on the CPU. `out` bounds y
// and dx (stored in `dt`), `stats` the f32 running statistics and the summed dgamma/dbeta.
void check_sync_bn(DType dt, int64_t n0, int64_t n1, seg::test::Tolerance out, seg::test::Tolerance stats) {
  CAPTURE(dtype_name(dt));
  CAPTURE(n0);
  CAPTURE(n1);
  const NoStreamRaces races;
  auto comms = make_nccl_communicators({0, 1});
  const int64_t H = 3, W = 4, C = 6, N = n0 + n1;
  // Half runs get the half-rounded inputs (tests/layers/test_helpers.h); f32 keeps the f64 inputs
  // (its bound covers their rounding).
  const seg::test::UnionBatchNorm ref = seg::test::union_batch_norm(N, H, W, C, is_half(dt) ? dt : DType::f64);
  struct RankResult {
    Tensor y, dx, rm, rv, dgamma, dbeta;
  };
  std::vector<RankResult> res(2);
  on_ranks(comms, [&](int r, Communicator& c) {
    CommBatchNormReducer reducer(c);
    const int64_t lo = r == 0 ? 0 : n0, hi = r == 0 ? n0 : N;
    const Device d = c.device();
    Tensor xl = ref.x.slice(0, lo, hi).contiguous().to(dt).to(d).set_requires_grad(true);
    Tensor gl = ref.gamma.to(DType::f32).to(d).set_requires_grad(true), bl = ref.beta.to(DType::f32).to(d).set_requires_grad(true);
    Tensor rm = Tensor::zeros({C}, DType::f32, d), rv = Tensor::full({C}, 1.0, DType::f32, d);
    ops::BatchNormOptions o = ref.options;
    o.reducer = &reducer;
    const Tensor y = ops::batch_norm(xl, gl, bl, rm, rv, o);
    CHECK(y.dtype() == dt);
    y.backward(ref.dy.slice(0, lo, hi).contiguous().to(dt).to(d));
    auto host = [](const Tensor& t) { return t.to(Device::cpu()).to(DType::f64); };
    res[r] = RankResult{host(y), host(xl.grad()), host(rm), host(rv), host(gl.grad()), host(bl.grad())};
  });
  races.check();
  for (int r = 0; r < 2; ++r) {
    CAPTURE(r);
    const int64_t lo = r == 0 ? 0 : n0, hi = r == 0 ? n0 : N;
    if (hi > lo) {
      SEG_CHECK_CLOSE(res[r].y, ref.y.slice(0, lo, hi).contiguous(), out);
      SEG_CHECK_CLOSE(res[r].dx, ref.dx.slice(0, lo, hi).contiguous(), out);
    }
    SEG_CHECK_CLOSE(res[r].rm, ref.running_mean, stats);
    SEG_CHECK_CLOSE(res[r].rv, ref.running_var, stats);
  }
  // dgamma, dbeta are each rank's part; their sum over the ranks is the union's.
  SEG_CHECK_CLOSE(ops::add(res[0].dgamma, res[1].dgamma), ref.dgamma, stats);
  SEG_CHECK_CLOSE(ops::add(res[0].dbeta, res[1].dbeta), ref.dbeta, stats);
}

const std::vector<std::pair<int64_t, int64_t>> kSplits = {{3, 2}, {2, 2}, {4, 0}};  // unequal, equal, empty

}  // namespace

TEST_CASE("SyncBN over 2 GPUs equals one BatchNorm over the union: unequal and empty sub-batches, f32" * SEG_REQUIRES(two_gpus)) {
  TwoDevices two;
  // f32 on each GPU against the f64 reference: the reference's own rounding of x, y and dx.
  const seg::test::Tolerance tol{2e-6, 2e-6};
  for (const auto& [n0, n1] : kSplits) check_sync_bn(DType::f32, n0, n1, tol, tol);
}

TEST_CASE("SyncBN over 2 GPUs in f16 and bf16 equals one f64 BatchNorm over the union: unequal and empty sub-batches" *
          SEG_REQUIRES(two_gpus)) {
  TwoDevices two;
  // The seed's users saw fp16 SyncBN hang across GPUs. The statistics travel in f64 whatever the
  // storage (layers/sync_bn.h), so a half run differs from the f64 union only by its f32 arithmetic
  // (the f32 case's bound, 2e-6 absolute and relative) and one rounding of y and dx to the storage
  // dtype: at most half an ulp, the unit roundoff u = 2^-11 (f16) or 2^-8 (bf16) relative (f16's
  // subnormals: at most 2^-25 absolute, inside 2e-6). Its inputs are the reference's exactly (x and
  // dy rounded to the storage dtype before the reference ran). Running statistics and dgamma/dbeta
  // are f32 results of f64 sums: the f32 bound.
  const seg::test::Tolerance f32_bound{2e-6, 2e-6};
  for (const auto& [dt, u] : std::vector<std::pair<DType, double>>{{DType::f16, 0x1p-11}, {DType::bf16, 0x1p-8}}) {
    const seg::test::Tolerance out{f32_bound.atol, u + f32_bound.rtol};
    for (const auto& [n0, n1] : kSplits) check_sync_bn(dt, n0, n1, out, f32_bound);
  }
}

TEST_CASE("NCCL: an inf gradient on one GPU makes both skip the step and keep equal loss scales" * SEG_REQUIRES(two_gpus)) {
  TwoDevices two;
  const NoStreamRaces races;
  auto comms = make_nccl_communicators({0, 1});
  std::vector<StepOutcome> outcomes(2);
  std::vector<double> scales(2);
  std::vector<std::vector<float>> weights(2);
  on_ranks(comms, [&](int r, Communicator& c) {
    Tensor w = Tensor::from_vector<float>({3}, {1, 2, 3}).to(c.device());
    w.set_requires_grad(true);
    SGD sgd({ParamGroup{"all", {w}, 0.0}}, 0.1, 0.0);
    LossScalerOptions so;
    so.enabled = true;
    LossScaler scaler(so);
    const float inf = std::numeric_limits<float>::infinity();
    w.set_grad(Tensor::from_vector<float>({3}, {1, r == 1 ? inf : 1.0f, 1}).to(c.device()));
    // The flag's max travels on the device, before the step's one read-back (core/amp_step.cpp).
    outcomes[r] = unscale_and_step(scaler, {&sgd}, nullptr, &c);
    scales[r] = scaler.scale();
    weights[r] = w.to(Device::cpu()).to_vector<float>();
  });
  races.check();
  for (int r = 0; r < 2; ++r) {
    CHECK_FALSE(outcomes[r].stepped);
    CHECK(scales[r] == 32768.0);
    CHECK(weights[r] == std::vector<float>{1, 2, 3});
  }
}

#ifndef SEG_TEST_ON_GPU
// Overlap, as the simulator's op trace shows it: with a bucket per parameter, the all-reduce of the
// last layer's gradient (queued from its hook on the communicator's stream) starts before the
// first layer's backward convolution kernels on the compute stream. One host thread queues rank
// 0's step, then rank 1's, then synchronises (fifo order), so the trace is deterministic. Rank 1 is
// the one to look at: its collectives find rank 0's half ready, so they start as soon as its own
// stream allows, while on rank 0 the executor runs rank 0's remaining kernels before rank 1 is
// queued far enough. (Simulator only: real NCCL would want ncclGroupStart/End around one thread's
// calls for several GPUs; the test exercises the simulator's scheduling, not that pattern.)
TEST_CASE("NCCL data parallel: bucket all-reduces start during backward (the simulator's op trace)" * SEG_REQUIRES(two_gpus)) {
  TwoDevices two;
  sim::Options fifo = sim::options();
  fifo.stream_order = sim::StreamOrder::fifo;
  sim::ScopedOptions in_queue_order(fifo);
  const NoStreamRaces races;
  auto comms = make_nccl_communicators({0, 1});
  std::vector<Net> nets(kRanks);
  std::vector<std::unique_ptr<GradientAllReduce>> allreduces;
  sim::start_op_trace();
  for (int r = 0; r < kRanks; ++r) {
    Communicator& c = *comms[r];
    set_current_cuda_device(r);
    nets[r].init(0);
    nets[r].to(c.device());
    const Tensor x = host_values({2, 6, 6, 3}, r, 1.0f).to(c.device());
    allreduces.push_back(std::make_unique<GradientAllReduce>(c, nets[r].parameters(), 16));
    nets[r].loss(x).backward();
  }
  for (int r = 0; r < kRanks; ++r) {
    set_current_cuda_device(r);
    allreduces[r]->finish();
  }
  for (int r = 0; r < kRanks; ++r) synchronize(Device::cuda(r));
  const std::vector<sim::TracedOp> trace = sim::take_op_trace();
  races.check();
  uint64_t first_allreduce = 0, last_conv = 0;
  int allreduce_count = 0;
  for (const sim::TracedOp& op : trace) {
    if (op.device != 1) continue;
    if (op.description.rfind("ncclAllReduce", 0) == 0) {
      ++allreduce_count;
      if (first_allreduce == 0) first_allreduce = op.start;
    }
    if (op.description.rfind("kernel ", 0) == 0 && op.description.find("conv2d") != std::string::npos)
      last_conv = std::max(last_conv, op.start);
  }
  MESSAGE("device 1: ", allreduce_count, " all-reduces; the first started at ", first_allreduce,
          ", the last convolution kernel at ", last_conv, " (of ", trace.size(), " traced ops)");
  CHECK(allreduce_count == 3);
  REQUIRE(first_allreduce > 0);
  REQUIRE(last_conv > 0);
  CHECK(first_allreduce < last_conv);
}
#endif
