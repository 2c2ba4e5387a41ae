// Upstream's scale formulas, rounding and normalisation, against values computed by Python
// (tools/golden/make_data_goldens.py) on the real ADE20K list and on extreme shapes.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "data/options.h"
#include "data/transforms.h"
#include "test_helpers.h"

using namespace seg::data;
using namespace seg::data::test;

TEST_CASE("round_up_multiple is upstream's round2nearest_multiple") {
  CHECK(round_up_multiple(1, 8) == 8);
  CHECK(round_up_multiple(8, 8) == 8);
  CHECK(round_up_multiple(9, 8) == 16);
  CHECK(round_up_multiple(300, 32) == 320);
  CHECK(round_up_multiple(0, 8) == 0);  // Python: ((0 - 1) // 8 + 1) * 8 == 0
}

TEST_CASE("train and eval sizes match the Python transcription of upstream for every golden shape") {
  std::ifstream in(golden("scales.txt"));
  REQUIRE(in.good());
  const int sizes[5] = {300, 375, 450, 525, 600};
  std::string line;
  int rows = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream s(line);
    int w = 0, h = 0;
    std::string bar;
    s >> w >> h >> bar;
    CAPTURE(line);
    for (int short_side : sizes) {
      int tw, th, v8w, v8h, v32w, v32h;
      s >> tw >> th >> v8w >> v8h >> v32w >> v32h;
      CAPTURE(short_side);
      CHECK(train_scaled_size(w, h, short_side, 1000) == ScaledSize{tw, th});
      CHECK(eval_scaled_size(w, h, short_side, 1000, 8) == ScaledSize{v8w, v8h});
      CHECK(eval_scaled_size(w, h, short_side, 1000, 32) == ScaledSize{v32w, v32h});
    }
    ++rows;
  }
  CHECK(rows >= 200);
}

TEST_CASE("a side that upstream would truncate to 0 becomes 1 (documented deviation)") {
  // 1 x 5000: scale = min(300 / 1, 1000 / 5000) = 0.2 -> width 0.2 -> 0 upstream (PIL fails).
  CHECK(train_scaled_size(1, 5000, 300, 1000) == ScaledSize{1, 1000});
  CHECK(eval_scaled_size(1, 5000, 300, 1000, 8) == ScaledSize{8, 1000});
}

TEST_CASE("normalisation equals numpy/torchvision float32 arithmetic bit for bit") {
  std::ifstream in(golden("normalize_lut.txt"));
  REQUIRE(in.good());
  std::string line;
  std::getline(in, line);  // comment
  const Normalizer& n = imagenet_normalizer();
  for (int c = 0; c < 3; ++c) {
    REQUIRE(std::getline(in, line));
    std::istringstream s(line);
    std::vector<float> got, want(256);
    for (int v = 0; v < 256; ++v) {
      s >> want[v];  // printed with 9 significant digits: round-trips a float exactly
      got.push_back(n.value(c, static_cast<uint8_t>(v)));
    }
    CAPTURE(c);
    SEG_CHECK_CLOSE(got, want, seg::test::Tolerance{});  // index = grey level
  }
}

TEST_CASE("options that cannot work are usage errors naming the key") {
  auto key_of = [](auto change) {
    DatasetOptions o;
    change(o);
    const seg::Error e = expect_error([&] { o.validate(); });
    CHECK(e.kind() == seg::ErrorKind::usage);
    return e.context("key");
  };
  DatasetOptions ok;
  ok.validate();
  CHECK(key_of([](DatasetOptions& o) { o.imgSizes.clear(); }) == "DATASET.imgSizes");
  CHECK(key_of([](DatasetOptions& o) { o.num_class = 300; }) == "DATASET.num_class");
  CHECK(key_of([](DatasetOptions& o) { o.padding_constant = 4; }) == "DATASET.padding_constant");
  CHECK(key_of([](DatasetOptions& o) { o.segm_downsampling_rate = 3; }) == "DATASET.padding_constant");
  CHECK(key_of([](DatasetOptions& o) { o.batch_size_per_gpu = 0; }) == "TRAIN.batch_size_per_gpu");
  CHECK(key_of([](DatasetOptions& o) { o.workers = -1; }) == "TRAIN.workers");
  CHECK(parse_bad_sample_policy("skip") == BadSamplePolicy::skip);
  CHECK(expect_error([] { parse_bad_sample_policy("ignore"); }).kind() == seg::ErrorKind::usage);
}
