// TrainDataset: whole sub-batches against a Python transcription of upstream's __getitem__ run with
// Pillow on real photo crops, plus flips, padding and every kind of bad sample.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "data/file_io.h"
#include "data/image_codec.h"
#include "data/train_dataset.h"
#include "test_helpers.h"
#include "tiny_dataset.h"

using namespace seg::data;
using namespace seg::data::test;

namespace {

std::vector<int> parse_ints(const std::string& comma_list) {
  std::vector<int> v;
  std::istringstream in(comma_list);
  std::string item;
  while (std::getline(in, item, ',')) v.push_back(std::stoi(item));
  return v;
}

DatasetOptions golden_options() {
  DatasetOptions o;
  o.root_dataset = golden("");
  o.list_train = golden("pipeline.odgt");
  o.num_class = 150;
  return o;
}

}  // namespace

TEST_CASE("sub-batches match upstream's TrainDataset run with Pillow (label padding -1)") {
  DatasetOptions o = golden_options();
  std::ifstream cases(golden("train_cases.txt"));
  REQUIRE(cases.good());
  std::string line;
  int n_cases = 0;
  while (std::getline(cases, line)) {
    if (line.empty() || line[0] == '#') continue;
    CAPTURE(line);
    std::istringstream in(line);
    std::string name, records, flips, bar;
    int short_side, canvas_w, canvas_h;
    in >> name >> records >> short_side >> o.imgMaxSize >> o.padding_constant >> o.segm_downsampling_rate >> flips >>
        bar >> canvas_w >> canvas_h >> bar;
    const TrainDataset dataset(o);
    SubBatchPlan plan;
    plan.short_side = short_side;
    for (int r : parse_ints(records)) plan.samples.push_back(r);
    for (int f : parse_ints(flips)) plan.flips.push_back(static_cast<uint8_t>(f));
    const TrainSubBatch got = dataset.load(plan);
    const int b = static_cast<int>(plan.samples.size());
    const int rate = o.segm_downsampling_rate;

    REQUIRE(got.images.shape() == seg::Shape({b, canvas_h, canvas_w, 3}));
    REQUIRE(got.labels.shape() == seg::Shape({b, canvas_h / rate, canvas_w / rate}));
    const float* images = got.images.data<float>();
    for (int j = 0; j < b; ++j) {
      int w, h;
      in >> w >> h;
      CHECK(got.sizes[j] == ScaledSize{w, h});
      const Image expected = load_image_rgb(golden("train_" + name + "_" + std::to_string(j) + "_img.png"));
      REQUIRE(expected.width == w);
      const float* sample = images + static_cast<int64_t>(j) * canvas_h * canvas_w * 3;
      // Within one grey level of Pillow's resize, normalised through our LUT.
      const auto c = compare_normalised(sample, canvas_w * 3, expected, seg::test::Tolerance{1.0, 0});
      CHECK_MESSAGE(c.ok(), c.str());
      // the padding beyond the sample is exactly 0 (the mean colour after normalisation)
      std::vector<float> padding;
      for (int y = 0; y < canvas_h; ++y)
        for (int x = 0; x < canvas_w; ++x)
          if (x >= w || y >= h)
            for (int ch = 0; ch < 3; ++ch) padding.push_back(sample[(y * canvas_w + x) * 3 + ch]);
      SEG_CHECK_CLOSE(padding, std::vector<float>(padding.size(), 0.0f), seg::test::Tolerance{});
    }
    // Labels: exact, -1 for unlabeled and for the padding (golden stores value + 1).
    const Image expected_labels = load_label(golden("train_" + name + "_label.png"));
    REQUIRE(expected_labels.pixels.size() == static_cast<size_t>(got.labels.numel()));
    const std::vector<int32_t> labels = got.labels.to_vector<int32_t>();
    std::vector<int32_t> want_labels;
    for (uint8_t v : expected_labels.pixels) want_labels.push_back(int32_t(v) - 1);
    SEG_CHECK_CLOSE(labels, want_labels, seg::test::Tolerance{});
    CHECK(std::count(labels.begin(), labels.end(), -1) > 0);  // padding
    ++n_cases;
  }
  CHECK(n_cases == 4);
}

TEST_CASE("a flip mirrors image and label together") {
  // Scale 1 (short side = the image's own) and widths that are multiples of r make the resize an
  // identity, so the flipped sub-batch must be the exact mirror of the unflipped one.
  ScratchDir dir;
  Image img(32, 24, 3), label(32, 24, 1);
  for (int y = 0; y < 24; ++y)
    for (int x = 0; x < 32; ++x) {
      label.at(x, y) = static_cast<uint8_t>(1 + x / 8);  // four vertical stripes of classes 1..4
      for (int c = 0; c < 3; ++c) img.at(x, y, c) = static_cast<uint8_t>(x * 7 + y * 3 + c);
    }
  save_png(dir / "i.png", img);
  save_png(dir / "l.png", label);
  write_file_atomic(dir / "list.odgt", odgt_line("i.png", "l.png", 32, 24) + "\n");
  DatasetOptions o;
  o.root_dataset = dir.path();
  o.list_train = dir / "list.odgt";
  o.imgSizes = {24};
  o.num_class = 4;
  const TrainDataset dataset(o);
  SubBatchPlan plan{0, 0, 24, {0}, {0}};
  const TrainSubBatch plain = dataset.load(plan);
  plan.flips = {1};
  const TrainSubBatch flipped = dataset.load(plan);
  REQUIRE(plain.images.shape() == flipped.images.shape());
  const float* a = plain.images.data<float>();
  const float* b = flipped.images.data<float>();
  for (int y = 0; y < 24; ++y)
    for (int x = 0; x < 32; ++x)
      for (int c = 0; c < 3; ++c) REQUIRE(b[(y * 32 + x) * 3 + c] == a[(y * 32 + (31 - x)) * 3 + c]);
  const int32_t* la = plain.labels.data<int32_t>();
  const int32_t* lb = flipped.labels.data<int32_t>();
  REQUIRE(plain.labels.shape() == seg::Shape({1, 3, 4}));
  for (int y = 0; y < 3; ++y)
    for (int x = 0; x < 4; ++x) {
      CHECK(la[y * 4 + x] == x);      // stripe x -> class x (label value x + 1, shifted)
      CHECK(lb[y * 4 + x] == 3 - x);  // mirrored
    }
}

TEST_CASE("bad samples: fail names the file and list line; skip replaces and reports") {
  ScratchDir dir;
  const TinyDataset tiny = make_tiny_dataset(dir.path(), 6, /*num_class=*/5);
  DatasetOptions o;
  o.root_dataset = tiny.root;
  o.list_train = tiny.list;
  o.num_class = 5;
  o.imgSizes = {16};
  const SubBatchPlan plan{0, 0, 16, {1, 2}, {0, 0}};  // two landscape records (1 and 2)

  SUBCASE("missing image") {
    std::filesystem::remove(dir / "images/img1.png");
    const TrainDataset fail(o);
    const seg::Error e = expect_error([&] { fail.load(plan); });
    CHECK(e.kind() == seg::ErrorKind::data);
    CHECK(e.context("file") == dir / "images/img1.png");
    CHECK(e.context("list entry") == tiny.list + ":2");

    o.on_bad_sample = BadSamplePolicy::skip;
    const TrainDataset skip(o);
    const TrainSubBatch got = skip.load(plan);
    REQUIRE(got.skipped.size() == 1);
    CHECK(got.skipped[0].index == 1);
    CHECK(got.skipped[0].message.find("img1.png") != std::string::npos);
    // replaced by the next landscape record after 1 in list order: 2
    CHECK(got.plan.samples == std::vector<int64_t>{2, 2});
    CHECK(got.batch_size() == 2);
  }
  SUBCASE("image and label sizes differ") {
    save_png(dir / "labels/img2.png", Image(5, 5, 1));
    const seg::Error e = expect_error([&] { TrainDataset(o).load(plan); });
    CHECK(std::string(e.what()).find("but its label is 5x5") != std::string::npos);
    CHECK(e.context("file") == dir / "labels/img2.png");
  }
  SUBCASE("label value above num_class") {
    o.num_class = 3;
    const seg::Error e = expect_error([&] { TrainDataset(o).load(plan); });
    CHECK(e.kind() == seg::ErrorKind::data);
    CHECK(std::string(e.what()).find("above DATASET.num_class 3") != std::string::npos);
  }
  SUBCASE("the list's width/height disagree with the image") {
    const std::string text = read_file_text(tiny.list, "list");
    const size_t at = text.find("\"width\": ") + 9;
    write_file_atomic(tiny.list, text.substr(0, at) + "1" + text.substr(at));  // width 1xx instead of xx
    const seg::Error e = expect_error([&] { TrainDataset(o).load(SubBatchPlan{0, 0, 16, {0}, {0}}); });
    CHECK(std::string(e.what()).find("but the list says") != std::string::npos);
  }
  SUBCASE("a corrupt label under skip, and nothing left to replace it") {
    write_file_atomic(dir / "labels/img1.png", std::string("not a png"));
    write_file_atomic(dir / "labels/img2.png", std::string("not a png"));
    write_file_atomic(dir / "labels/img4.png", std::string("not a png"));
    write_file_atomic(dir / "labels/img5.png", std::string("not a png"));
    o.on_bad_sample = BadSamplePolicy::skip;
    const seg::Error e = expect_error([&] { TrainDataset(o).load(plan); });
    CHECK(e.kind() == seg::ErrorKind::data);
    CHECK(std::string(e.what()).find("no loadable training sample") != std::string::npos);
  }
}

TEST_CASE("an empty training list is a data error") {
  ScratchDir dir;
  write_file_atomic(dir / "empty.odgt", std::string("\n"));
  DatasetOptions o;
  o.list_train = dir / "empty.odgt";
  const seg::Error e = expect_error([&] { TrainDataset{o}; });
  CHECK(e.kind() == seg::ErrorKind::data);
  CHECK(e.context("file") == dir / "empty.odgt");
}
