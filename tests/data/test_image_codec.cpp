// Decoding and encoding with stb: round trips, label format checks, error messages, and how far
// stb's JPEG decoder is from libjpeg's (Pillow's).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "data/class_info.h"
#include "data/file_io.h"
#include "data/image_codec.h"
#include "data/jpeg_check.h"
#include "data/png_check.h"
#include "test_helpers.h"

using namespace seg::data;
using namespace seg::data::test;

TEST_CASE("the real ADE20K teaser decodes and its ground truth maps back to classes through the palette") {
  const Image teaser = load_image_rgb(fixture("ADE_val_00000278_teaser.png"));
  REQUIRE(teaser.width == 2217);
  REQUIRE(teaser.height == 512);
  const std::vector<Rgb> palette = read_palette_csv(source_path("data/ade20k/color150.csv"));
  REQUIRE(palette.size() == 150);
  const Image gt = decode_palette_label(crop(teaser, 739, 0, 739, 512), palette, "teaser");
  // The label Python decoded independently (PIL + the CSV) must be identical.
  const Image expected = load_label(golden("label_278.png"));
  CHECK(gt.pixels == expected.pixels);
  // and the decoding holds real content: several classes and some unlabeled pixels
  std::vector<int> count(151, 0);
  for (uint8_t v : gt.pixels) ++count[v];
  int classes = 0;
  for (int c = 1; c <= 150; ++c) classes += count[c] > 0;
  CHECK(classes >= 5);
  CHECK(count[0] > 0);
  CHECK(count[0] < static_cast<int>(gt.pixels.size()) / 10);
}

TEST_CASE("a colour outside the palette is a data error naming the pixel") {
  Image rgb(3, 2, 3);
  rgb.at(2, 1, 0) = 1;  // (1,0,0) is not an ADE colour
  const std::vector<Rgb> palette = {{120, 120, 120}};
  const seg::Error e = expect_error([&] { decode_palette_label(rgb, palette, "picture.png"); });
  CHECK(e.kind() == seg::ErrorKind::data);
  CHECK(std::string(e.what()).find("(2,1)") != std::string::npos);
  CHECK(e.context("file") == "picture.png");
}

TEST_CASE("PNG round trip is lossless for RGB and label images") {
  ScratchDir dir;
  Image rgb(7, 5, 3);
  for (size_t i = 0; i < rgb.pixels.size(); ++i) rgb.pixels[i] = static_cast<uint8_t>(i * 37);
  save_png(dir / "a.png", rgb);
  CHECK(load_image_rgb(dir / "a.png").pixels == rgb.pixels);
  Image label(9, 4, 1);
  for (size_t i = 0; i < label.pixels.size(); ++i) label.pixels[i] = static_cast<uint8_t>(i % 151);
  save_png(dir / "l.png", label);
  const Image back = load_label(dir / "l.png");
  CHECK(back.width == 9);
  CHECK(back.pixels == label.pixels);
}

TEST_CASE("grey images become RGB like PIL's convert('RGB')") {
  ScratchDir dir;
  Image grey(3, 1, 1);
  grey.pixels = {0, 100, 255};
  save_png(dir / "g.png", grey);
  const Image rgb = load_image_rgb(dir / "g.png");
  REQUIRE(rgb.channels == 3);
  CHECK(rgb.pixels == std::vector<uint8_t>{0, 0, 0, 100, 100, 100, 255, 255, 255});
}

TEST_CASE("an RGB picture is refused as a label, naming the file") {
  ScratchDir dir;
  save_png(dir / "rgb.png", Image(4, 4, 3));
  const seg::Error e = expect_error([&] { load_label(dir / "rgb.png"); });
  CHECK(e.kind() == seg::ErrorKind::data);
  CHECK(e.exit_code() == 3);
  CHECK(e.context("file") == dir / "rgb.png");
  CHECK(std::string(e.what()).find("single-channel") != std::string::npos);
}

TEST_CASE("missing and corrupt files are data errors that name the file") {
  ScratchDir dir;
  const seg::Error missing = expect_error([&] { load_image_rgb(dir / "nope.jpg"); });
  CHECK(missing.kind() == seg::ErrorKind::data);
  CHECK(missing.context("file") == dir / "nope.jpg");
  CHECK(std::string(missing.what()).find("missing image file") != std::string::npos);

  write_file_atomic(dir / "bad.jpg", std::string("\xff\xd8\xff\xe0 definitely not a jpeg"));
  const seg::Error corrupt = expect_error([&] { load_image_rgb(dir / "bad.jpg"); });
  CHECK(corrupt.kind() == seg::ErrorKind::data);
  CHECK(corrupt.context("file") == dir / "bad.jpg");
  CHECK(std::string(corrupt.what()).find("cannot decode image") != std::string::npos);

  // A PNG cut in half: decoding must fail cleanly, not crash.
  const std::vector<uint8_t> png = encode_png(Image(64, 64, 3, 77));
  write_file_atomic(dir / "half.png", png.data(), png.size() / 2);
  CHECK(expect_error([&] { load_image_rgb(dir / "half.png"); }).kind() == seg::ErrorKind::data);
}

TEST_CASE("stb's JPEG decoding stays close to libjpeg's (Pillow)") {
  // Not bit-exact (different IDCT and chroma upsampling); docs/data-pipeline.md records the numbers.
  const Image ours = load_image_rgb(golden("jpeg_photo_q90.jpg"));
  const Image pil = load_image_rgb(golden("jpeg_photo_q90_pil.png"));
  REQUIRE(ours.same_size(pil));
  double sum = 0.0;
  for (size_t i = 0; i < ours.pixels.size(); ++i) sum += std::abs(int(ours.pixels[i]) - int(pil.pixels[i]));
  const double mean = sum / static_cast<double>(ours.pixels.size());
  const auto c = compare(ours, pil, seg::test::Tolerance{6, 0});
  MESSAGE("stb vs libjpeg on a real photo, JPEG q90: mean |diff| ", mean, ", max ", c.max_abs);
  // measured: mean 0.08, max 3 (Debian libjpeg-turbo 2.1, stb_image 2.27)
  CHECK(mean < 0.5);
  CHECK_MESSAGE(c.ok(), c.str());
}

TEST_CASE("JPEG encoding writes a decodable file of the right size") {
  ScratchDir dir;
  Image img(40, 30, 3, 128);
  save_jpeg(dir / "x.jpg", img, 90);
  const Image back = load_image_rgb(dir / "x.jpg");
  CHECK(back.width == 40);
  CHECK(back.height == 30);
  const auto c = compare(back, img, seg::test::Tolerance{2, 0});  // JPEG q90 of a flat image
  CHECK_MESSAGE(c.ok(), c.str());
  // atomic writes leave no temporary files behind
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) files += entry.is_regular_file();
  CHECK(files == 1);
}

// stb_image 2.27 writes past its Huffman tables when a DHT segment's 16 code counts add up to more
// than 256 (found by the image fuzz target; data/jpeg_check.h). The file the fuzzer found is kept in
// tests/fuzz/regressions/image; every entry point must refuse it as a data error before stb reads it.
TEST_CASE("a JPEG whose Huffman table declares more than 256 codes is refused before stb decodes it") {
  const std::string found = source_path("tests/fuzz/regressions/image/jpeg_dht_more_than_256_codes");
  const std::vector<uint8_t> bytes = read_file_bytes(found, "image");
  for (const seg::Error& e : {expect_error([&] { decode_image_rgb(bytes, "x.jpg"); }),
                              expect_error([&] { decode_label(bytes, "x.png"); }),
                              expect_error([&] { load_image_rgb(found); })}) {
    CHECK(e.kind() == seg::ErrorKind::data);
    CHECK(std::string(e.what()).find("Huffman table declares 863 codes") != std::string::npos);
  }
  // Its table comes after the frame header, which stbi_info does not read: the header is fine.
  CHECK(read_image_header(found, "image").width > 0);

  // A table before the frame header is reached by stbi_info too (the pre-flight check reads headers).
  ScratchDir dir;
  std::vector<uint8_t> early = {0xFF, 0xD8, 0xFF, 0xC4};
  const int counts = 16 * 17;  // 16 counts of 17: 272 codes
  const int length = 2 + 1 + 16 + counts;
  early.push_back(static_cast<uint8_t>(length >> 8));
  early.push_back(static_cast<uint8_t>(length & 0xFF));
  early.push_back(0x00);  // class 0 (DC), table 0
  for (int i = 0; i < 16; ++i) early.push_back(17);
  early.resize(early.size() + counts, 0);
  write_file_atomic(dir / "early.jpg", early.data(), early.size());
  const seg::Error header = expect_error([&] { read_image_header(dir / "early.jpg", "image"); });
  CHECK(header.kind() == seg::ErrorKind::data);
  CHECK(header.context("file") == dir / "early.jpg");
  CHECK(std::string(header.what()).find("declares 272 codes") != std::string::npos);
  CHECK(check_jpeg_for_stb(early.data(), early.size(), true).problem.find("272") != std::string::npos);
  // stb takes FF fill bytes before the start-of-image marker (FF FF FF D8 starts a JPEG for it).
  std::vector<uint8_t> filled(early.size() + 2, 0xFF);  // (insert() trips GCC 12's -Warray-bounds)
  std::copy(early.begin(), early.end(), filled.begin() + 2);
  CHECK(check_jpeg_for_stb(filled.data(), filled.size(), true).problem.find("272") != std::string::npos);
  CHECK(std::string(expect_error([&] { decode_image_rgb(filled, "filled.jpg"); }).what()).find("272") !=
        std::string::npos);

  // The check passes real files: the fixture photo (full walk and header walk) and a PNG.
  const std::vector<uint8_t> photo = read_file_bytes(golden("jpeg_photo_q90.jpg"), "image");
  CHECK(check_jpeg_for_stb(photo.data(), photo.size(), false).problem.empty());
  const JpegCheck head = check_jpeg_for_stb(photo.data(), photo.size(), true);
  CHECK(head.problem.empty());
  CHECK(!head.incomplete);
  // Cut before its frame header, the header walk asks for more bytes instead of deciding.
  CHECK(check_jpeg_for_stb(photo.data(), 20, true).incomplete);
  const std::vector<uint8_t> png = encode_png(Image(4, 4, 3, 1));
  CHECK(check_jpeg_for_stb(png.data(), png.size(), false).problem.empty());
}

// stb_image 2.27 copies an empty first IDAT chunk to a buffer it has not allocated (memcpy to null:
// UBSan reports it; data/png_check.h). The chunk carries no data, so it is dropped before decoding.
TEST_CASE("a PNG with empty IDAT chunks decodes to the same pixels, and stb never sees those chunks") {
  Image rgb(5, 3, 3);
  for (size_t i = 0; i < rgb.pixels.size(); ++i) rgb.pixels[i] = static_cast<uint8_t>(i * 7);
  const std::vector<uint8_t> plain = encode_png(rgb);
  // Walk to the first IDAT chunk and put an empty one in front of it (length 0, "IDAT", CRC).
  size_t pos = 8;
  auto length_at = [&](size_t p) {
    return (size_t{plain[p]} << 24) | (size_t{plain[p + 1]} << 16) | (size_t{plain[p + 2]} << 8) | size_t{plain[p + 3]};
  };
  while (std::string(plain.begin() + pos + 4, plain.begin() + pos + 8) != "IDAT") pos += 12 + length_at(pos);
  const std::vector<uint8_t> empty_idat = {0, 0, 0, 0, 'I', 'D', 'A', 'T', 0x35, 0xAF, 0x06, 0x1E};
  std::vector<uint8_t> with_empty(plain.begin(), plain.begin() + static_cast<std::ptrdiff_t>(pos));
  with_empty.insert(with_empty.end(), empty_idat.begin(), empty_idat.end());
  with_empty.insert(with_empty.end(), plain.begin() + static_cast<std::ptrdiff_t>(pos), plain.end());
  with_empty.insert(with_empty.end() - 12, empty_idat.begin(), empty_idat.end());  // and one before IEND

  std::vector<uint8_t> dropped;
  REQUIRE(drop_empty_png_idat(with_empty.data(), with_empty.size(), dropped));
  CHECK(dropped == plain);
  CHECK(decode_image_rgb(with_empty, "empty_idat.png").pixels == rgb.pixels);
  // Nothing to drop in a plain PNG or in a JPEG: the caller's bytes are used as they are.
  CHECK_FALSE(drop_empty_png_idat(plain.data(), plain.size(), dropped));
  const std::vector<uint8_t> photo = read_file_bytes(golden("jpeg_photo_q90.jpg"), "image");
  CHECK_FALSE(drop_empty_png_idat(photo.data(), photo.size(), dropped));

  // The file the fuzzer found (an empty first IDAT, then a chunk whose length runs past the end) is
  // an ordinary data error now, as label and as photo.
  const std::string found = source_path("tests/fuzz/regressions/image/png_empty_first_idat_null_memcpy.png");
  const std::vector<uint8_t> bytes = read_file_bytes(found, "image");
  for (const seg::Error& e : {expect_error([&] { decode_image_rgb(bytes, "x.png"); }),
                              expect_error([&] { decode_label(bytes, "x.png"); })})
    CHECK(e.kind() == seg::ErrorKind::data);

  // The second finding: the file ends inside an empty IDAT chunk (its CRC cut off after 2 bytes).
  // The tail is dropped, and the file is a data error, not a memcpy to null.
  std::vector<uint8_t> cut(plain.begin(), plain.begin() + static_cast<std::ptrdiff_t>(pos));
  cut.insert(cut.end(), empty_idat.begin(), empty_idat.begin() + 10);
  REQUIRE(drop_empty_png_idat(cut.data(), cut.size(), dropped));
  CHECK(dropped == std::vector<uint8_t>(plain.begin(), plain.begin() + static_cast<std::ptrdiff_t>(pos)));
  const std::string found2 = source_path("tests/fuzz/regressions/image/png_truncated_empty_idat_null_memcpy.png");
  const std::vector<uint8_t> bytes2 = read_file_bytes(found2, "image");
  REQUIRE(drop_empty_png_idat(bytes2.data(), bytes2.size(), dropped));
  for (const seg::Error& e : {expect_error([&] { decode_image_rgb(bytes2, "x.png"); }),
                              expect_error([&] { decode_label(bytes2, "x.png"); })})
    CHECK(e.kind() == seg::ErrorKind::data);
}
