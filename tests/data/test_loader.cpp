// The sampler and the threaded loader: aspect grouping, the upstream scale choice, determinism
// whatever the number of workers, resume by iteration, data-wait time, and bad-sample counting.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "core/allocator.h"
#include "data/batch_memory.h"
#include "data/train_loader.h"
#include "data/train_sampler.h"
#include "test_helpers.h"
#include "tiny_dataset.h"

using namespace seg::data;
using namespace seg::data::test;

namespace {

DatasetOptions tiny_options(const TinyDataset& tiny) {
  DatasetOptions o;
  o.root_dataset = tiny.root;
  o.list_train = tiny.list;
  o.num_class = 5;
  o.imgSizes = {16, 20, 24, 28};
  o.imgMaxSize = 40;
  o.padding_constant = 8;
  o.segm_downsampling_rate = 4;
  o.batch_size_per_gpu = 2;
  o.num_gpus = 2;
  o.seed = 11;
  return o;
}

bool same_tensor(const seg::Tensor& a, const seg::Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()) == 0;
}

bool same_batch(const TrainBatch& a, const TrainBatch& b) {
  if (a.iteration != b.iteration || a.sub_batches.size() != b.sub_batches.size()) return false;
  for (size_t g = 0; g < a.sub_batches.size(); ++g) {
    const TrainSubBatch& x = a.sub_batches[g];
    const TrainSubBatch& y = b.sub_batches[g];
    if (x.plan.samples != y.plan.samples || x.plan.flips != y.plan.flips || x.plan.short_side != y.plan.short_side)
      return false;
    if (!same_tensor(x.images, y.images) || !same_tensor(x.labels, y.labels)) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("the sampler groups by orientation, covers every record each pass, and draws upstream's choices") {
  ScratchDir dir;
  const TinyDataset tiny = make_tiny_dataset(dir.path(), 12);
  DatasetOptions o = tiny_options(tiny);
  o.num_gpus = 1;
  o.batch_size_per_gpu = 2;
  const TrainDataset dataset(o);
  TrainSampler sampler(dataset);
  std::multiset<int64_t> seen;
  std::set<int> shorts;
  int flips = 0, draws = 0;
  // 12 records = 4 portrait + 8 landscape: one pass is exactly 6 sub-batches of 2, no leftovers
  for (int it = 0; it < 6; ++it) {
    const auto plans = sampler.next();
    REQUIRE(plans.size() == 1);
    const SubBatchPlan& p = plans[0];
    CHECK(p.iteration == it);
    REQUIRE(p.samples.size() == 2);
    CHECK(dataset.is_portrait(p.samples[0]) == dataset.is_portrait(p.samples[1]));
    CHECK(std::count(o.imgSizes.begin(), o.imgSizes.end(), p.short_side) == 1);
    shorts.insert(p.short_side);
    for (int64_t s : p.samples) seen.insert(s);
    for (uint8_t f : p.flips) flips += f, ++draws;
  }
  CHECK(seen.size() == 12);
  CHECK(std::set<int64_t>(seen.begin(), seen.end()).size() == 12);  // each record exactly once
  // Over many iterations every short side and both flip values appear.
  for (int it = 0; it < 200; ++it)
    for (const auto& p : sampler.next()) {
      shorts.insert(p.short_side);
      for (uint8_t f : p.flips) flips += f, ++draws;
    }
  CHECK(shorts.size() == o.imgSizes.size());
  CHECK(flips > draws / 3);
  CHECK(flips < 2 * draws / 3);
}

TEST_CASE("random_flip = false never flips") {
  ScratchDir dir;
  const TinyDataset tiny = make_tiny_dataset(dir.path(), 9);
  DatasetOptions o = tiny_options(tiny);
  o.random_flip = false;
  const TrainDataset dataset(o);
  TrainSampler sampler(dataset);
  for (int it = 0; it < 50; ++it)
    for (const auto& p : sampler.next())
      for (uint8_t f : p.flips) REQUIRE(f == 0);
}

TEST_CASE("the sampler depends on the seed, and seek(i) equals i steps") {
  ScratchDir dir;
  const TinyDataset tiny = make_tiny_dataset(dir.path(), 10);
  DatasetOptions o = tiny_options(tiny);
  const TrainDataset dataset(o);
  auto plans_of = [](const TrainDataset& d, int64_t start, int n) {
    TrainSampler s(d);
    s.seek(start);
    std::vector<std::tuple<std::vector<int64_t>, std::vector<uint8_t>, int>> out;
    for (int i = 0; i < n; ++i)
      for (const auto& p : s.next()) out.emplace_back(p.samples, p.flips, p.short_side);
    return out;
  };
  const auto all = plans_of(dataset, 0, 40);
  const auto tail = plans_of(dataset, 25, 15);
  CHECK(std::equal(tail.begin(), tail.end(), all.begin() + 25 * o.num_gpus));
  CHECK(plans_of(dataset, 0, 40) == all);
  o.seed = 12;
  const TrainDataset other(o);
  CHECK(plans_of(other, 0, 40) != all);
}

TEST_CASE("0, 1, 2 and 3 workers produce the same batches, bit for bit") {
  ScratchDir dir;
  const TinyDataset tiny = make_tiny_dataset(dir.path(), 14);
  std::vector<TrainBatch> reference;
  for (int workers : {0, 1, 2, 3}) {
    DatasetOptions o = tiny_options(tiny);
    o.workers = workers;
    o.prefetch = workers == 3 ? 5 : 0;  // an odd prefetch depth too
    const TrainDataset dataset(o);
    TrainLoader loader(dataset);
    CHECK(loader.workers() == workers);
    for (int it = 0; it < 12; ++it) {
      TrainBatch b = loader.next();
      CAPTURE(workers);
      CAPTURE(it);
      CHECK(b.iteration == it);
      REQUIRE(b.sub_batches.size() == 2);
      CHECK(b.wait_seconds >= 0.0);
      if (workers == 0) {
        reference.push_back(std::move(b));
      } else {
        CHECK(same_batch(b, reference[it]));
      }
    }
    CHECK(loader.stats().batches == 12);
    CHECK(loader.stats().images == 12 * 2 * 2);
    CHECK(loader.stats().wait_seconds >= 0.0);
  }
}

TEST_CASE("a loader resumed at iteration i continues exactly where an uninterrupted one is") {
  ScratchDir dir;
  const TinyDataset tiny = make_tiny_dataset(dir.path(), 11);
  DatasetOptions o = tiny_options(tiny);
  o.workers = 2;
  const TrainDataset dataset(o);
  TrainLoader full(dataset);
  std::vector<TrainBatch> batches;
  for (int it = 0; it < 9; ++it) batches.push_back(full.next());
  TrainLoader resumed(dataset, 6);
  for (int it = 6; it < 9; ++it) CHECK(same_batch(resumed.next(), batches[it]));
}

TEST_CASE("bad samples: the loader stops with the data error, or skips and counts them deterministically") {
  ScratchDir dir;
  const TinyDataset tiny = make_tiny_dataset(dir.path(), 12);
  std::filesystem::remove(dir / "images/img4.png");      // landscape
  save_png(dir / "labels/img6.png", Image(3, 3, 1));      // portrait: size mismatch
  const std::set<int64_t> bad = {4, 6};
  const int iterations = 20;

  DatasetOptions o = tiny_options(tiny);
  o.workers = 2;
  {
    const TrainDataset dataset(o);
    TrainLoader loader(dataset);
    const seg::Error e = expect_error([&] {
      for (int it = 0; it < iterations; ++it) loader.next();
    });
    CHECK(e.kind() == seg::ErrorKind::data);
    CHECK((e.context("file").find("img4.png") != std::string::npos ||
           e.context("file").find("img6.png") != std::string::npos));
    CHECK(expect_error([&] { loader.next(); }).kind() == seg::ErrorKind::runtime);  // no silent continuation
  }

  // How often the sampler draws a bad record in these iterations: the count the loader must report.
  o.on_bad_sample = BadSamplePolicy::skip;
  const TrainDataset dataset(o);
  TrainSampler sampler(dataset);
  int64_t expected = 0;
  for (int it = 0; it < iterations; ++it)
    for (const auto& p : sampler.next())
      for (int64_t s : p.samples) expected += bad.count(s);
  REQUIRE(expected > 0);

  std::vector<TrainBatch> reference;
  for (int workers : {0, 3}) {
    o.workers = workers;
    const TrainDataset d(o);
    TrainLoader loader(d);
    for (int it = 0; it < iterations; ++it) {
      TrainBatch b = loader.next();
      for (const auto& s : b.sub_batches) {
        CHECK(s.batch_size() == 2);  // replaced, not dropped
        for (int64_t idx : s.plan.samples) CHECK(bad.count(idx) == 0);
      }
      if (workers == 0)
        reference.push_back(std::move(b));
      else
        CHECK(same_batch(b, reference[it]));
    }
    CHECK(loader.stats().skipped == expected);
    REQUIRE(!loader.stats().first_skipped.empty());
    CHECK(bad.count(loader.stats().first_skipped[0].index) == 1);
  }
}

TEST_CASE("batch tensors are pinned host memory exactly where the build and machine have a GPU") {
  ScratchDir dir;
  const TinyDataset tiny = make_tiny_dataset(dir.path(), 6);
  DatasetOptions o = tiny_options(tiny);
  o.workers = 1;
  const TrainDataset dataset(o);
  TrainLoader loader(dataset);
  const TrainBatch b = loader.next();
  CHECK(batch_memory_is_pinned() == seg::pinned_host_memory_available());
  for (const TrainSubBatch& s : b.sub_batches) {
    CHECK(s.images.device() == seg::Device::cpu());
    CHECK(seg::is_pinned_host_pointer(s.images.data_ptr()) == batch_memory_is_pinned());
    CHECK(seg::is_pinned_host_pointer(s.labels.data_ptr()) == batch_memory_is_pinned());
  }
}
