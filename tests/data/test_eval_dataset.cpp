// ValDataset / TestDataset multi-scale inputs against Pillow, and the ordered eval loader.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "data/eval_dataset.h"
#include "data/file_io.h"
#include "data/image_codec.h"
#include "test_helpers.h"
#include "tiny_dataset.h"

using namespace seg::data;
using namespace seg::data::test;

TEST_CASE("multi-scale validation inputs match upstream's ValDataset run with Pillow") {
  std::ifstream cases(golden("val_cases.txt"));
  REQUIRE(cases.good());
  std::string line;
  int n_cases = 0;
  while (std::getline(cases, line)) {
    if (line.empty() || line[0] == '#') continue;
    CAPTURE(line);
    std::istringstream in(line);
    std::string name, shorts, bar;
    int record = 0;
    DatasetOptions o;
    o.root_dataset = golden("");
    o.list_val = golden("pipeline.odgt");
    in >> name >> record >> shorts >> o.imgMaxSize >> o.padding_constant >> bar;
    o.imgSizes.clear();
    std::istringstream list(shorts);
    std::string item;
    while (std::getline(list, item, ',')) o.imgSizes.push_back(std::stoi(item));

    const ValDataset dataset(o);
    const EvalSample s = dataset.get(record);
    const Image original = load_image_rgb(dataset.list()[record].fpath_img);
    const Image label = load_label(dataset.list()[record].fpath_segm);
    CHECK(tensor_to_image(s.img_ori).pixels == original.pixels);
    REQUIRE(s.seg_label.shape() == seg::Shape({1, original.height, original.width}));
    std::vector<int32_t> want_labels;
    for (uint8_t v : label.pixels) want_labels.push_back(int32_t(v) - 1);
    SEG_CHECK_CLOSE(s.seg_label.to_vector<int32_t>(), want_labels, seg::test::Tolerance{});
    CHECK(s.info == dataset.list()[record].fpath_img);

    REQUIRE(s.img_data.size() == o.imgSizes.size());
    for (size_t k = 0; k < o.imgSizes.size(); ++k) {
      int w = 0, h = 0;
      in >> w >> h;
      REQUIRE(s.img_data[k].shape() == seg::Shape({1, h, w, 3}));
      const Image expected = load_image_rgb(golden("val_" + name + "_" + std::to_string(o.imgSizes[k]) + ".png"));
      const auto c = compare_normalised(s.img_data[k].data<float>(), w * 3, expected, seg::test::Tolerance{1.0, 0});
      CHECK_MESSAGE(c.ok(), c.str());  // within one grey level of Pillow's resize
    }
    ++n_cases;
  }
  CHECK(n_cases == 2);
}

TEST_CASE("test inputs come from paths as given, without labels") {
  DatasetOptions o;
  o.root_dataset = "/this/root/is/not/used";
  o.imgSizes = {32, 48};
  const TestDataset dataset(o, std::vector<std::string>{golden("pipe_b.png")});
  const EvalSample s = dataset.get(0);
  CHECK(!s.seg_label.defined());
  REQUIRE(s.img_data.size() == 2);
  CHECK(s.img_data[0].shape() == seg::Shape({1, 48, 32, 3}));  // 90x130 portrait, short 32 -> 32x46 -> 32x48
  CHECK(s.img_ori.shape() == seg::Shape({130, 90, 3}));

  const seg::Error e = expect_error([&] { TestDataset(o, std::vector<std::string>{"/no/such.jpg"}).get(0); });
  CHECK(e.kind() == seg::ErrorKind::data);
  CHECK(e.context("file") == "/no/such.jpg");
}

TEST_CASE("the eval loader returns samples in list order whatever the workers, and skips bad ones when asked") {
  ScratchDir dir;
  const TinyDataset tiny = make_tiny_dataset(dir.path(), 9);
  DatasetOptions o;
  o.root_dataset = tiny.root;
  o.list_val = tiny.list;
  o.num_class = 5;
  o.imgSizes = {16, 24};
  for (int workers : {0, 2, 3}) {
    o.workers = workers;
    const ValDataset dataset(o);
    EvalLoader loader(dataset);
    int64_t expected = 0;
    while (auto s = loader.next()) CHECK(s->index == expected++);
    CHECK(expected == 9);
    CHECK(loader.skipped() == 0);
  }
  std::filesystem::remove(dir / "images/img3.png");
  o.workers = 2;
  {
    const ValDataset dataset(o);
    EvalLoader loader(dataset);
    const seg::Error e = expect_error([&] {
      while (loader.next()) {
      }
    });
    CHECK(e.context("list entry") == tiny.list + ":4");
  }
  o.on_bad_sample = BadSamplePolicy::skip;
  const ValDataset dataset(o);
  EvalLoader loader(dataset);
  std::vector<int64_t> seen;
  while (auto s = loader.next()) seen.push_back(s->index);
  CHECK(seen == std::vector<int64_t>{0, 1, 2, 4, 5, 6, 7, 8});
  CHECK(loader.skipped() == 1);
  REQUIRE(loader.first_skipped().size() == 1);
  CHECK(loader.first_skipped()[0].message.find("img3.png") != std::string::npos);
}
