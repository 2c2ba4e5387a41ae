// Pillow-exact resizing, against golden files made by Pillow 9.4 (tools/golden/make_data_goldens.py).
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "data/image_codec.h"
#include "data/resize.h"
#include "test_helpers.h"

using namespace seg::data;
using namespace seg::data::test;

namespace {

Image teaser_photo() {
  static const Image panel = crop(load_image_rgb(fixture("ADE_val_00000278_teaser.png")), 0, 0, 739, 512);
  return panel;
}

Image golden_source(const std::string& name) {
  if (name == "teaser:photo") return teaser_photo();
  // label-like sources are 8-bit grey PNGs; photo sources RGB
  return name.find("label") != std::string::npos ? load_label(golden(name)) : load_image_rgb(golden(name));
}

}  // namespace

TEST_CASE("bilinear and nearest resizing match Pillow 9.4 on every golden case") {
  std::ifstream cases(golden("resize_cases.txt"));
  REQUIRE(cases.good());
  std::string line;
  int bilinear_cases = 0, nearest_cases = 0;
  while (std::getline(cases, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream in(line);
    std::string kind, source, file;
    int w = 0, h = 0;
    in >> kind >> source >> w >> h >> file;
    CAPTURE(line);
    const Image src = golden_source(source);
    const Image expected = src.channels == 1 ? load_label(golden(file)) : load_image_rgb(golden(file));
    if (kind == "bilinear") {
      const Image got = resize_bilinear(src, w, h);
      // The issue allows one grey level; the implementation reproduces Pillow's fixed-point
      // arithmetic, so it is in fact exact: the check is exact.
      const auto c = compare(got, expected, seg::test::Tolerance{});
      CHECK_MESSAGE(c.ok(), c.str());
      ++bilinear_cases;
    } else {
      REQUIRE(kind == "nearest");
      const Image got = resize_nearest(src, w, h);
      const auto c = compare(got, expected, seg::test::Tolerance{});  // labels: exact
      CHECK_MESSAGE(c.ok(), c.str());
      ++nearest_cases;
    }
  }
  CHECK(bilinear_cases >= 20);
  CHECK(nearest_cases >= 10);
}

TEST_CASE("nearest /8 downscale picks the centre pixel 8i+4 of each block") {
  Image src(64, 16, 1);
  for (int y = 0; y < 16; ++y)
    for (int x = 0; x < 64; ++x) src.at(x, y) = static_cast<uint8_t>(x + 64 * (y % 4));
  const Image out = resize_nearest(src, 8, 2);
  for (int y = 0; y < 2; ++y)
    for (int x = 0; x < 8; ++x) CHECK(out.at(x, y) == src.at(8 * x + 4, 8 * y + 4));
}

TEST_CASE("bilinear enlarging uses half-pixel centres and clamps at the edges") {
  // 2 pixels -> 4: output centres at source 0.25, 0.75, 1.25, 1.75 -> 0, 25%, 75%, 100% of the way.
  Image src(2, 1, 1);
  src.at(0, 0) = 0;
  src.at(1, 0) = 200;
  const Image out = resize_bilinear(src, 4, 1);
  CHECK(out.at(0, 0) == 0);
  CHECK(out.at(1, 0) == 50);
  CHECK(out.at(2, 0) == 150);
  CHECK(out.at(3, 0) == 200);
}

TEST_CASE("bilinear shrinking averages everything under the output pixel (antialiasing)") {
  // A 1-pixel checkerboard shrunk 4x: plain bilinear sampling would alias to 0 or 255;
  // the widened triangle filter gives the mean grey.
  Image src(16, 16, 1);
  for (int y = 0; y < 16; ++y)
    for (int x = 0; x < 16; ++x) src.at(x, y) = ((x + y) % 2) ? 255 : 0;
  const Image out = resize_bilinear(src, 4, 4);
  for (uint8_t v : out.pixels) {
    CHECK(v >= 120);
    CHECK(v <= 135);
  }
}

TEST_CASE("resizing to the same size returns the image unchanged") {
  const Image photo = crop(teaser_photo(), 10, 20, 33, 17);
  CHECK(resize_bilinear(photo, 33, 17).pixels == photo.pixels);
  CHECK(resize_nearest(photo, 33, 17).pixels == photo.pixels);
}

TEST_CASE("a zero output size is refused") {
  const Image img(4, 4, 3);
  CHECK_THROWS_AS(resize_bilinear(img, 0, 4), seg::Error);
  CHECK_THROWS_AS(resize_nearest(img, 4, 0), seg::Error);
}
