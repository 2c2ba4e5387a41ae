// MPI suite: two CPU ranks (ctest runs it as `mpirun --allow-run-as-root --oversubscribe -np 2
// test_mpi`). Every case runs on both ranks and calls the same collectives in the same order, so the
// cases use CHECK, never REQUIRE (a REQUIRE failing on one rank only would leave the other waiting in
// a collective; the communicator's watchdog would end it, but with a worse message).
//
// What is proved here, against one process computing the same thing alone:
//   * the communicator's collectives (sums of f32/f64/f16/bf16, max, gather, broadcast,
//     asynchronous sums); half gradients on either wire;
//   * one data-parallel step: the all-reduced (pre-divided) gradients equal one process's gradients
//     of both sub-batches accumulated (upstream's multi-GPU step) bit for bit, and the buckets start
//     during backward;
//   * SyncBN: output, running statistics and dx equal one BatchNorm over the union, with unequal and
//     with empty sub-batches, in f64, f32, f16 and bf16 (the half ones within one rounding of the
//     storage dtype);
//   * an inf gradient on one rank makes both ranks skip the step with the same new loss scale;
//   * ranks started with different runs stop, naming the difference.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>

#include "core/amp_step.h"
#include "core/comm.h"
#include "core/data_parallel.h"
#include "core/rng.h"
#include "layers/sync_bn.h"
#include "models/registry.h"
#include "models/segmentation_module.h"
#include "tests/common/compare_tensor.h"
#include "tests/layers/test_helpers.h"

using namespace seg;
using seg::test::compare;
using seg::test::Comparison;
using seg::test::randn;
using seg::test::Tolerance;

std::string seg_test_skip_reason() {
  if (!built_with_mpi()) return "built without MPI (-DSEG_MPI=OFF or no libopenmpi-dev)";
  if (!launched_by_mpi()) return "not started by mpirun (ctest runs it as mpirun -np 2 test_mpi)";
  if (world().size() != 2) return "needs exactly 2 ranks, got " + std::to_string(world().size());
  return "";
}

namespace {

Tensor random_labels(const Shape& shape, int64_t classes, uint64_t seed) {
  PhiloxStream rng(seed, RngPurpose::test);
  Tensor t = Tensor::empty(shape, DType::i32, Device::cpu());
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data<int32_t>()[i] = rng.uniform() < 0.1 ? -1 : static_cast<int32_t>(rng.below(static_cast<uint32_t>(classes)));
  return t;
}

ModelConfig small_model() {
  ModelConfig mc;
  mc.arch_encoder = "mobilenetv2dilated";
  mc.arch_decoder = "c1_deepsup";
  mc.fc_dim = 320;
  mc.num_class = 5;
  mc.seed = 7;
  return mc;
}

double max_abs(const Tensor& t) {
  double m = 0;
  for (double v : t.to(DType::f64).to_vector<double>()) m = std::max(m, std::fabs(v));
  return m;
}

}  // namespace

TEST_CASE("the MPI communicator: sums, max, all-gather, broadcast and asynchronous sums over 2 ranks") {
  Communicator& c = world();
  CHECK(c.size() == 2);
  CHECK(c.describe().find("MPI") != std::string::npos);
  std::vector<double> d = {1.0 + c.rank(), 0.5};
  c.allreduce_sum(d.data(), 2);
  CHECK(d == std::vector<double>{3.0, 1.0});
  std::vector<float> f(1000);
  for (size_t i = 0; i < f.size(); ++i) f[i] = static_cast<float>(i) * (c.rank() == 0 ? 1.0f : -2.0f);
  auto pending = c.allreduce_sum_async(f.data(), static_cast<int64_t>(f.size()));
  pending->wait();
  pending->wait();  // idempotent
  bool sums_ok = true;
  for (size_t i = 0; i < f.size(); ++i) sums_ok = sums_ok && f[i] == -static_cast<float>(i);
  CHECK(sums_ok);
  int32_t flag = c.rank() == 1 ? 1 : 0;
  c.allreduce_max(&flag, 1);
  CHECK(flag == 1);
  CHECK(c.allgather(static_cast<uint64_t>(10 + c.rank())) == std::vector<uint64_t>{10, 11});
  CHECK(c.broadcast_string(c.rank() == 0 ? "from rank 0" : "ignored", 0) == "from rank 0");
}

TEST_CASE("f16 and bf16 sums over 2 ranks: added in f32 and rounded once, blocking and asynchronous") {
  Communicator& c = world();
  const int n = 1000;
  auto value = [](int rank, int i) { return (rank == 0 ? 1.0f : -0.3f) * static_cast<float>(i % 97) * 0.37f + 0.001f * i; };
  auto check = [&](auto tag, DType dt, bool async) {
    using H = decltype(tag);
    std::vector<H> v(n);
    for (int i = 0; i < n; ++i) v[i] = H(value(c.rank(), i));
    if (async) c.allreduce_sum_async_typed(v.data(), n, dt)->wait();
    else c.allreduce_sum_typed(v.data(), n, dt);
    int64_t wrong = 0;
    for (int i = 0; i < n; ++i) {
      const H want(static_cast<float>(H(value(0, i))) + static_cast<float>(H(value(1, i))));
      wrong += v[i].bits == want.bits ? 0 : 1;
    }
    CHECK_MESSAGE(wrong == 0, dtype_name(dt) << (async ? " async" : " blocking") << ": " << wrong << " wrong");
  };
  for (bool async : {false, true}) {
    check(f16{}, DType::f16, async);
    check(bf16{}, DType::bf16, async);
  }
}

TEST_CASE("half gradients travel as half (storage wire) or as f32, and come back in their dtype") {
  Communicator& c = world();
  for (GradientWire wire : {GradientWire::storage, GradientWire::f32}) {
    CAPTURE(static_cast<int>(wire));
    Tensor h = Tensor::from_vector<float>({3}, {1, 2, 3}).to(DType::f16).set_requires_grad(true);
    Tensor f = Tensor::from_vector<float>({2}, {1, 2}).set_requires_grad(true);
    GradientAllReduce reducer(c, {h, f}, GradientAllReduce::kDefaultBucketBytes, wire);
    h.set_grad(Tensor::from_vector<float>({3}, {0.25f, 1.5f, c.rank() == 0 ? 1000.0f : 24.0f}).to(DType::f16));
    f.set_grad(Tensor::from_vector<float>({2}, {1.0f, c.rank() == 0 ? 0.5f : 0.25f}));
    reducer.finish();
    const GradientAllReduce::Stats st = reducer.stats();
    CHECK(st.buckets == (wire == GradientWire::storage ? 2 : 1));  // one dtype per bucket
    CHECK(st.half_buckets == (wire == GradientWire::storage ? 1 : 0));
    CHECK(h.grad().dtype() == DType::f16);
    CHECK(h.grad().to(DType::f32).to_vector<float>() == std::vector<float>{0.5f, 3.0f, 1024.0f});
    CHECK(f.grad().to_vector<float>() == std::vector<float>{2.0f, 0.75f});
  }
}

TEST_CASE("broadcast_from_root: every rank starts from rank 0's parameters and buffers") {
  ModelConfig mc = small_model();
  mc.seed = 100 + static_cast<uint64_t>(world().rank());  // different initialisation on each rank
  reset_global_rng(mc.seed);
  auto model = build_segmentation_module(mc);
  std::vector<Tensor> all = model->parameters();
  for (const NamedTensor& b : model->named_buffers()) all.push_back(*b.tensor);
  broadcast_from_root(world(), all);
  reset_global_rng(100);
  ModelConfig root_mc = small_model();
  root_mc.seed = 100;
  auto root_model = build_segmentation_module(root_mc);
  const auto got = model->named_parameters(), want = root_model->named_parameters();
  int64_t differing = 0;
  for (size_t i = 0; i < got.size(); ++i) differing += compare(*got[i].tensor, *want[i].tensor).ok() ? 0 : 1;
  CHECK(differing == 0);
}

TEST_CASE("one data-parallel step: the all-reduced gradients are bit for bit one process accumulating both sub-batches") {
  Communicator& c = world();
  const ModelConfig mc = small_model();
  const int64_t B = 2, S = 32;
  // Sub-batch k of the global batch; the same tensors on both ranks.
  auto images = [&](int k) { return randn({B, S, S, 3}, DType::f32, 10 + static_cast<uint64_t>(k)); };
  auto labels = [&](int k) { return random_labels({B, S / 8, S / 8}, mc.num_class, 20 + static_cast<uint64_t>(k)); };

  // Data parallel: this rank's sub-batch, then the bucketed all-reduce (small buckets: several of them).
  reset_global_rng(mc.seed);
  auto dp = build_segmentation_module(mc);
  dp->train(true);
  GradientAllReduce reducer(c, dp->parameters(), 64 << 10);
  {
    // Pre-divided by the number of ranks, as the trainer does: the all-reduce sums.
    const TrainOutput out = dp->forward_train(images(c.rank()), labels(c.rank()));
    out.loss.backward(Tensor::full(out.loss.shape(), 0.5, out.loss.dtype(), out.loss.device()));
  }
  reducer.finish();
  const GradientAllReduce::Stats st = reducer.stats();
  CHECK(st.buckets > 3);
  // Every parameter got its gradient in backward, so every bucket left from a gradient-ready hook,
  // before backward had finished: communication overlapped computation.
  CHECK(st.started_in_backward == st.buckets);

  // One process: both sub-batches, each loss weighted 1/2 (TRAIN.accum_steps' rule).
  reset_global_rng(mc.seed);
  auto one = build_segmentation_module(mc);
  one->train(true);
  for (int k = 0; k < 2; ++k) {
    const TrainOutput out = one->forward_train(images(k), labels(k));
    out.loss.backward(Tensor::full(out.loss.shape(), 0.5, out.loss.dtype(), out.loss.device()));
  }
  const auto got = dp->named_parameters(), want = one->named_parameters();
  CHECK(got.size() == want.size());
  int64_t bad = 0, checked = 0;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    const Tensor& g = got[i].tensor->grad();
    const Tensor& w = want[i].tensor->grad();
    CHECK_MESSAGE(g.defined() == w.defined(), got[i].name);
    if (!g.defined() || !w.defined()) continue;
    // g0/2 + g1/2 summed by the all-reduce against the same two accumulated by autograd: the same
    // f32 additions, so the same bits (Tolerance 0; max_abs only says what scale a failure has).
    const Comparison cmp = compare(g, w, Tolerance{0, 0});
    if (!cmp.ok()) MESSAGE(got[i].name << ": gradient scale " << max_abs(w));
    ++checked;
    if (!cmp.ok()) {
      ++bad;
      CHECK_MESSAGE(cmp.ok(), (got[i].name + ": " + cmp.str()));
    }
  }
  CHECK(checked == static_cast<int64_t>(want.size()));
  CHECK(bad == 0);
}

TEST_CASE("gradient accumulation: set_sync(false) micro-steps are not all-reduced, the last one is") {
  Communicator& c = world();
  Tensor w = Tensor::from_vector<float>({4}, {1, 2, 3, 4});
  w.set_requires_grad(true);
  GradientAllReduce reducer(c, {w});
  auto micro = [&](float k) {
    const Tensor coef = Tensor::from_vector<float>({4}, {k, k, k, k});
    ops::sum(ops::mul(w, coef)).backward();
  };
  reducer.set_sync(false);
  micro(c.rank() == 0 ? 1.0f : 3.0f);  // rank 0 grads 1, rank 1 grads 3
  CHECK(w.grad().to_vector<float>() == std::vector<float>(4, c.rank() == 0 ? 1.0f : 3.0f));
  reducer.set_sync(true);
  micro(1.0f);  // accumulated: rank 0 has 2, rank 1 has 4
  reducer.finish();
  CHECK(w.grad().to_vector<float>() == std::vector<float>(4, 6.0f));  // summed once, at the last micro-step
  CHECK(reducer.stats().buckets == 1);
  CHECK(reducer.stats().started_in_backward == 0);  // one bucket: a blocking all-reduce in finish()
}

namespace {

// The sub-batch splits SyncBN must handle: unequal, equal, and rank 1 empty.
const std::vector<std::pair<int64_t, int64_t>> kSplits = {{3, 2}, {2, 2}, {4, 0}};

// One SyncBN forward and backward of this rank's rows (n0 images on rank 0, n1 on rank 1) in
// storage dtype `dt`, checked against one f64 BatchNorm over the union. `out` bounds y and dx (activations, stored in
// `dt`); `stats` bounds the running statistics and dgamma/dbeta (parameter dtype: f64 or f32).
void check_sync_bn(Communicator& c, DType dt, int64_t n0, int64_t n1, Tolerance out, Tolerance stats) {
  CommBatchNormReducer reducer(c);
  const int64_t H = 3, W = 4, C = 6, N = n0 + n1;
  CAPTURE(dtype_name(dt));
  CAPTURE(n0);
  CAPTURE(n1);
  // Half runs get the half-rounded inputs; f32 keeps the f64 inputs (its bound covers their rounding).
  const seg::test::UnionBatchNorm ref = seg::test::union_batch_norm(N, H, W, C, is_half(dt) ? dt : DType::f64);
  ops::BatchNormOptions opt = ref.options;
  // This rank's rows of the union.
  const int64_t lo = c.rank() == 0 ? 0 : n0, hi = c.rank() == 0 ? n0 : N;
  const DType pdt = dt == DType::f64 ? DType::f64 : DType::f32;  // BN parameters: f32 under half storage
  Tensor xl = ref.x.slice(0, lo, hi).contiguous().to(dt).set_requires_grad(true);
  Tensor gl = ref.gamma.to(pdt).set_requires_grad(true), bl = ref.beta.to(pdt).set_requires_grad(true);
  Tensor rm = Tensor::zeros({C}, pdt, Device::cpu()), rv = Tensor::full({C}, 1.0, pdt, Device::cpu());
  opt.reducer = &reducer;
  const Tensor y = ops::batch_norm(xl, gl, bl, rm, rv, opt);
  y.backward(ref.dy.slice(0, lo, hi).contiguous().to(dt));
  CHECK(y.dtype() == dt);
  if (hi > lo) {
    SEG_CHECK_CLOSE(y, ref.y.slice(0, lo, hi).contiguous(), out);
    SEG_CHECK_CLOSE(xl.grad(), ref.dx.slice(0, lo, hi).contiguous(), out);
  }
  SEG_CHECK_CLOSE(rm, ref.running_mean, stats);
  SEG_CHECK_CLOSE(rv, ref.running_var, stats);
  // dgamma, dbeta are this rank's parts; their sum over the ranks is the union's.
  std::vector<double> dg = gl.grad().to(DType::f64).to_vector<double>(), db = bl.grad().to(DType::f64).to_vector<double>();
  c.allreduce_sum(dg.data(), C);
  c.allreduce_sum(db.data(), C);
  SEG_CHECK_CLOSE(dg, ref.dgamma.to_vector<double>(), stats);
  SEG_CHECK_CLOSE(db, ref.dbeta.to_vector<double>(), stats);
}

}  // namespace

TEST_CASE("SyncBN over 2 ranks equals one BatchNorm over the union: unequal and empty sub-batches, f32 and f64") {
  for (DType dt : {DType::f64, DType::f32}) {
    // f64: the same sums in another order; f32: the reference's own rounding of x, y and dx.
    const Tolerance tol = dt == DType::f64 ? Tolerance{1e-12, 1e-12} : Tolerance{2e-6, 2e-6};
    for (const auto& [n0, n1] : kSplits) check_sync_bn(world(), dt, n0, n1, tol, tol);
  }
}

TEST_CASE("SyncBN over 2 ranks in f16 and bf16 equals one f64 BatchNorm over the union: unequal and empty sub-batches") {
  // The seed's users saw fp16 SyncBN hang across GPUs. Here the statistics travel in f64 whatever
  // the storage, so a half run differs from the f64 union only by
  //   * its f32 arithmetic (parameters, statistics and the per-element formulas are f32): the f32
  //     case's bound, 2e-6 absolute and relative;
  //   * one rounding of y and dx to the storage dtype: at most half an ulp, i.e. the unit roundoff
  //     u = 2^-11 (f16, 11 significant bits) or 2^-8 (bf16, 8) relative to the value. f16's
  //     subnormals (spacing 2^-24 below 2^-14) round by at most 2^-25 absolute, inside 2e-6.
  // The inputs are the reference's exactly (rounded to the storage dtype before the reference ran),
  // so no input rounding enters the bound. Running statistics and dgamma/dbeta are f32 results of
  // f64 sums: the f32 bound.
  const Tolerance f32_bound{2e-6, 2e-6};
  for (const auto& [dt, u] : std::vector<std::pair<DType, double>>{{DType::f16, 0x1p-11}, {DType::bf16, 0x1p-8}}) {
    const Tolerance out{f32_bound.atol, u + f32_bound.rtol};
    for (const auto& [n0, n1] : kSplits) check_sync_bn(world(), dt, n0, n1, out, f32_bound);
  }
}

TEST_CASE("an inf gradient on one rank makes both ranks skip the step and halve the scale") {
  Communicator& c = world();
  Tensor w = Tensor::from_vector<float>({3}, {1, 2, 3});
  w.set_requires_grad(true);
  SGD sgd({ParamGroup{"all", {w}, 0.0}}, 0.1, 0.0);
  LossScalerOptions so;
  so.enabled = true;
  LossScaler scaler(so);
  const float inf = std::numeric_limits<float>::infinity();
  w.set_grad(Tensor::from_vector<float>({3}, {1, c.rank() == 1 ? inf : 1.0f, 1}));
  const StepOutcome out = unscale_and_step(scaler, {&sgd}, nullptr, &c);
  CHECK_FALSE(out.stepped);
  CHECK(scaler.scale() == 32768.0);
  CHECK(w.to_vector<float>() == std::vector<float>{1, 2, 3});
  std::vector<double> scales = {scaler.scale(), scaler.scale() * scaler.scale()};
  c.allreduce_sum(scales.data(), 2);
  CHECK(scales[0] == 2 * 32768.0);  // both ranks hold the same scale
}

TEST_CASE("ranks started with different runs stop on every rank, with the differing lines named") {
  Communicator& c = world();
  const std::string same = "MODEL.num_class = 150\nTRAIN.amp = O1\n";
  CHECK_NOTHROW(check_same_run(c, same));
  const std::string mine = c.rank() == 0 ? "MODEL.arch_encoder = resnet50dilated\nMODEL.num_class = 150\n"
                                         : "MODEL.arch_encoder = mobilenetv2dilated\nMODEL.num_class = 150\n";
  std::string message;
  try {
    check_same_run(c, mine);
  } catch (const Error& e) {
    message = e.what();
    CHECK(e.kind() == ErrorKind::usage);
  }
  CHECK_FALSE(message.empty());
  // The same complete message on every rank: whichever stops the job first tells the whole story.
  CHECK(message.find("rank 1 of 2 started with a different run than rank 0") != std::string::npos);
  CHECK(message.find("rank 0: 'MODEL.arch_encoder = resnet50dilated'") != std::string::npos);
  CHECK(message.find("rank 1: 'MODEL.arch_encoder = mobilenetv2dilated'") != std::string::npos);
  CHECK(message.find("num_class") == std::string::npos);  // equal lines are not named
}
