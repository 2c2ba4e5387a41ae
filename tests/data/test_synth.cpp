// The synthetic dataset: deterministic, ADE-format, all classes present, sizes and orientations as
// asked, and a task that colour alone cannot solve.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "data/class_info.h"
#include "data/dataset_check.h"
#include "data/file_io.h"
#include "data/image_codec.h"
#include "data/synth_dataset.h"
#include "data/train_dataset.h"
#include "test_helpers.h"

using namespace seg::data;
using namespace seg::data::test;

namespace {

SynthOptions tiny_synth(const std::string& dir) {
  SynthOptions o;
  o.out_dir = dir;
  o.num_train = 12;
  o.num_val = 4;
  o.min_long_side = 64;
  o.max_long_side = 96;
  o.seed = 5;
  o.threads = 2;
  return o;
}

}  // namespace

TEST_CASE("a scene is a pure function of seed, split and index") {
  SynthOptions o;
  const synth::Scene a = render_synth_sample(o, SynthSplit::train, 3);
  const synth::Scene b = render_synth_sample(o, SynthSplit::train, 3);
  CHECK(a.image.pixels == b.image.pixels);
  CHECK(a.label.pixels == b.label.pixels);
  CHECK(render_synth_sample(o, SynthSplit::val, 3).image.pixels != a.image.pixels);
  CHECK(render_synth_sample(o, SynthSplit::train, 4).image.pixels != a.image.pixels);
  o.seed = 2;
  CHECK(render_synth_sample(o, SynthSplit::train, 3).image.pixels != a.image.pixels);
}

TEST_CASE("scenes have every class, unlabeled regions, both orientations and the asked sizes") {
  SynthOptions o;
  const int num_class = synth::synth_num_class();
  REQUIRE(num_class == 10);
  std::vector<int64_t> pixels(num_class + 1, 0), images(num_class + 1, 0);
  int portrait = 0;
  const int n = 60;
  for (int i = 0; i < n; ++i) {
    const synth::Scene s = render_synth_sample(o, SynthSplit::train, i);
    const int long_side = std::max(s.image.width, s.image.height);
    const int short_side = std::min(s.image.width, s.image.height);
    CHECK(long_side >= o.min_long_side);
    CHECK(long_side <= o.max_long_side);
    CHECK(long_side >= short_side * 1.09);
    CHECK(long_side <= short_side * 1.61);
    REQUIRE(s.label.same_size(s.image));
    portrait += s.image.height > s.image.width;
    std::vector<int64_t> here(num_class + 1, 0);
    for (uint8_t v : s.label.pixels) {
      REQUIRE(v <= num_class);
      ++here[v];
    }
    for (int c = 0; c <= num_class; ++c) pixels[c] += here[c], images[c] += here[c] > 0;
  }
  CHECK(portrait > n / 8);
  CHECK(portrait < n / 2);
  for (int c = 1; c <= num_class; ++c) {
    CAPTURE(c);
    CHECK(images[c] >= n / 4);  // every class is common
  }
  CHECK(images[0] >= n / 3);  // unlabeled clutter in many scenes
  int64_t total = 0;
  for (int64_t p : pixels) total += p;
  for (int c = 1; c <= num_class; ++c) CHECK(pixels[c] > total / 200);  // and not vanishingly small
}

TEST_CASE("colour alone does not solve the task") {
  // The best possible colour-only classifier: each quantised colour (6 bits per channel) gets the
  // class that owns most of its pixels in 80 training scenes; measured on 40 other scenes. Shape
  // and texture must carry the rest.
  SynthOptions o;
  const int num_class = synth::synth_num_class();
  std::map<int, std::vector<int64_t>> votes;
  auto bin = [](const Image& im, size_t i) {
    return (im.pixels[3 * i] >> 2) << 12 | (im.pixels[3 * i + 1] >> 2) << 6 | (im.pixels[3 * i + 2] >> 2);
  };
  for (int i = 0; i < 80; ++i) {
    const synth::Scene s = render_synth_sample(o, SynthSplit::train, i);
    for (size_t p = 0; p < s.label.pixels.size(); ++p) {
      if (s.label.pixels[p] == 0) continue;
      auto& v = votes[bin(s.image, p)];
      if (v.empty()) v.assign(num_class + 1, 0);
      ++v[s.label.pixels[p]];
    }
  }
  std::vector<int64_t> inter(num_class + 1, 0), uni(num_class + 1, 0);
  for (int i = 0; i < 40; ++i) {
    const synth::Scene s = render_synth_sample(o, SynthSplit::val, i);
    for (size_t p = 0; p < s.label.pixels.size(); ++p) {
      const int truth = s.label.pixels[p];
      if (truth == 0) continue;
      const auto it = votes.find(bin(s.image, p));
      const int guess = it == votes.end() ? 0
                                          : static_cast<int>(std::max_element(it->second.begin(), it->second.end()) -
                                                             it->second.begin());
      if (guess == truth) {
        ++inter[truth], ++uni[truth];
      } else {
        ++uni[truth];
        if (guess > 0) ++uni[guess];
      }
    }
  }
  double miou = 0, things = 0;
  for (int c = 1; c <= num_class; ++c) {
    const double iou = uni[c] ? double(inter[c]) / uni[c] : 0.0;
    miou += iou / num_class;
    if (c >= 6) things += iou / (num_class - 5);
  }
  MESSAGE("colour-only classifier: mIoU ", miou, ", mean IoU of the 5 object classes ", things);
  CHECK(miou < 0.45);
  CHECK(things < 0.2);
}

TEST_CASE("the generator writes a complete ADE-format dataset that the pipeline reads") {
  ScratchDir dir;
  const SynthOptions o = tiny_synth(dir.path());
  CHECK(!synthetic_dataset_complete(o));
  const SynthReport r = generate_synthetic_dataset(o);
  CHECK(r.images == 16);
  CHECK(r.num_class == 10);
  CHECK(synthetic_dataset_complete(o));
  SynthOptions other = o;
  other.seed = 6;
  CHECK(!synthetic_dataset_complete(other));

  // class table and palette in ADE's formats
  const std::vector<ClassInfo> classes = read_class_info_csv(dir / "object10_info.csv");
  REQUIRE(classes.size() == 10);
  CHECK(classes[0].short_name() == "sky");
  CHECK(classes[0].stuff);
  CHECK(!classes[9].stuff);
  double ratio = 0;
  for (const auto& c : classes) ratio += c.ratio;
  CHECK(ratio > 0.8);  // the rest is unlabeled
  CHECK(ratio <= 1.0001);
  CHECK(read_palette_csv(dir / "color10.csv").size() == 10);

  // the lists feed TrainDataset and pass the dataset check
  DatasetOptions d;
  d.root_dataset = dir.path();
  d.list_train = r.list_train;
  d.num_class = 10;
  d.imgSizes = {48, 64};
  const TrainDataset train(d);
  CHECK(train.size() == 12);
  const TrainSubBatch b = train.load(SubBatchPlan{0, 0, 64, {0, 1}, {0, 1}});
  CHECK(b.images.dim() == 4);
  DatasetCheckOptions c;
  c.list = r.list_val;
  c.root = dir.path();
  c.num_class = 10;
  const DatasetCheckReport check = check_dataset(c);
  CHECK(check.entries == 4);
  CHECK(check.problems.empty());
  CHECK(check.max_label <= 10);

  // no temporary files left behind
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir.path()))
    CHECK(entry.path().string().find(".tmp.") == std::string::npos);
}

TEST_CASE("the same options give the same files whatever the thread count") {
  ScratchDir a, b;
  SynthOptions oa = tiny_synth(a.path());
  SynthOptions ob = tiny_synth(b.path());
  oa.threads = 1;
  ob.threads = 3;
  generate_synthetic_dataset(oa);
  generate_synthetic_dataset(ob);
  for (const char* f : {"training.odgt", "validation.odgt", "object10_info.csv", "color10.csv",
                        "images/training/synth_train_00000007.jpg", "annotations/validation/synth_val_00000002.png"})
    CHECK(read_file_bytes(a / f, "x") == read_file_bytes(b / f, "x"));
}

TEST_CASE("fewer classes drop object kinds from the end and keep labels in range") {
  ScratchDir dir;
  SynthOptions o = tiny_synth(dir.path());
  o.num_class = 7;  // stuff, tree, ball, box
  const SynthReport r = generate_synthetic_dataset(o);
  CHECK(r.num_class == 7);
  CHECK(read_class_info_csv(dir / "object7_info.csv").size() == 7);
  CHECK(read_palette_csv(dir / "color7.csv").size() == 7);
  CHECK(r.train_pixels[6] + r.train_pixels[7] > 0);
  DatasetCheckOptions c;
  c.list = r.list_train;
  c.root = dir.path();
  c.num_class = 7;
  CHECK(check_dataset(c).problems.empty());
  o.num_class = 5;
  CHECK(expect_error([&] { o.validate(); }).context("key") == "--classes");
}

TEST_CASE("bad generator options are usage errors naming the option") {
  SynthOptions o;
  o.min_long_side = 300;
  o.max_long_side = 200;
  const seg::Error e = expect_error([&] { o.validate(); });
  CHECK(e.kind() == seg::ErrorKind::usage);
  CHECK(e.context("key") == "--size");
}

TEST_CASE("the dataset check reports every bad entry with its line and counts classes") {
  ScratchDir dir;
  const SynthReport r = generate_synthetic_dataset(tiny_synth(dir.path()));
  std::filesystem::remove(dir / "images/training/synth_train_00000003.jpg");
  save_png(dir / "annotations/training/synth_train_00000005.png", Image(7, 7, 1, 11));  // size and range
  DatasetCheckOptions c;
  c.list = r.list_train;
  c.root = dir.path();
  c.num_class = 10;
  const DatasetCheckReport report = check_dataset(c);
  CHECK(report.entries == 12);
  CHECK(report.good == 10);
  REQUIRE(report.problems.size() == 2);
  CHECK(report.problems[0].line == 3);
  CHECK(report.problems[0].message.find("synth_train_00000003.jpg") != std::string::npos);
  CHECK(report.problems[1].line == 5);
  int64_t labelled = 0;
  for (int v = 1; v <= 10; ++v) labelled += report.pixels[v];
  CHECK(labelled > 0);
  CHECK(report.pixels[11] == 0);
}
