// Decoding and encoding: round trips, label format checks, error messages, JPEG decoding equal to
// Pillow's, and the fuzz findings against stb.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "data/bmp_check.h"
#include "data/class_info.h"
#include "data/file_io.h"
#include "data/image_codec.h"
#include "data/jpeg_decode.h"
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

// segtrain decodes JPEG with libjpeg-turbo, as Pillow does, with Pillow's settings: every golden
// JPEG (written by Pillow) decodes to exactly the pixels Pillow's Image.open(...).convert('RGB')
// gave (tools/golden/make_data_goldens.py).
TEST_CASE("JPEG decoding equals Pillow's bit for bit: baseline colour, grey, Adobe CMYK, progressive") {
  for (const char* name : {"jpeg_photo_q90", "jpeg_grey_q85", "jpeg_cmyk_q90", "jpeg_photo_progressive_q80"}) {
    CAPTURE(name);
    const Image ours = load_image_rgb(golden(std::string(name) + ".jpg"));
    const Image pil = load_image_rgb(golden(std::string(name) + "_pil.png"));
    REQUIRE(ours.same_size(pil));
    const auto c = compare(ours, pil, seg::test::Tolerance{0, 0});
    CHECK_MESSAGE(c.ok(), c.str());
  }
  // The grey file is a valid label too: one channel, the same values as the RGB replication.
  const Image grey = load_label(golden("jpeg_grey_q85.jpg"));
  const Image pil = load_image_rgb(golden("jpeg_grey_q85_pil.png"));
  REQUIRE(grey.channels == 1);
  REQUIRE(grey.width == pil.width);
  bool same = true;
  for (size_t i = 0; i < grey.pixels.size(); ++i) same = same && grey.pixels[i] == pil.pixels[3 * i];
  CHECK(same);
  // and a colour JPEG is refused as a label, from its header
  const seg::Error e = expect_error([&] { load_label(golden("jpeg_photo_q90.jpg")); });
  CHECK(std::string(e.what()).find("3-channel") != std::string::npos);
  CHECK(read_image_header(golden("jpeg_cmyk_q90.jpg"), "image").channels == 4);
  CHECK(read_image_header(golden("jpeg_grey_q85.jpg"), "label").channels == 1);
}

TEST_CASE("Pillow's CMYK to RGB formula, on hand-computed values") {
  // R = 255 - K - round(C (255 - K) / 255), clipped; Pillow 9.4 Convert.c cmyk2rgb.
  const std::vector<uint8_t> cmyk = {0, 0, 0, 0, 255, 255, 255, 0, 0, 0, 0, 255, 100, 50, 200, 30};
  std::vector<uint8_t> rgb(12);
  cmyk_to_rgb(cmyk.data(), rgb.data(), 4);
  // last pixel: 255-30 = 225; 225 - round(100*225/255 = 88.2) = 137, 225 - round(44.1) = 181,
  // 225 - round(176.47) = 49. Pillow 9.4 gives the same four pixels (Image.fromarray(..., 'CMYK').convert('RGB')).
  CHECK(rgb == std::vector<uint8_t>{255, 255, 255, 0, 0, 0, 0, 0, 0, 137, 181, 49});
  // The Adobe (inverted) form gives the same on 255 - each value, for every ink and K.
  std::vector<uint8_t> all, inverted;
  for (int ink = 0; ink < 256; ++ink)
    for (int k = 0; k < 256; ++k) {
      const uint8_t px[4] = {static_cast<uint8_t>(ink), static_cast<uint8_t>(255 - ink), static_cast<uint8_t>(ink / 2),
                             static_cast<uint8_t>(k)};
      for (uint8_t v : px) all.push_back(v), inverted.push_back(static_cast<uint8_t>(255 - v));
    }
  std::vector<uint8_t> plain(all.size() / 4 * 3), adobe(plain.size());
  cmyk_to_rgb(all.data(), plain.data(), all.size() / 4);
  adobe_cmyk_to_rgb(inverted.data(), adobe.data(), inverted.size() / 4);
  CHECK(plain == adobe);
  // and the result needs no clip: C = 255 with K = 0 is exactly 0 (hand-computed: 255 - 0 - 255).
  CHECK(plain[3 * (255 * 256 + 0)] == 0);  // C = 255, K = 0: no red
}

TEST_CASE("a truncated or corrupt JPEG is a data error with libjpeg's reason; corrupt entropy data is decoded as Pillow does") {
  const std::vector<uint8_t> photo = read_file_bytes(golden("jpeg_photo_q90.jpg"), "image");
  // Cut in half: libjpeg would fill the rest with grey and warn; Pillow calls it truncated, so do we.
  const std::vector<uint8_t> half(photo.begin(), photo.begin() + static_cast<std::ptrdiff_t>(photo.size() / 2));
  const seg::Error cut = expect_error([&] { decode_image_rgb(half, "half.jpg"); });
  CHECK(cut.kind() == seg::ErrorKind::data);
  CHECK(cut.context("file") == "half.jpg");
  CHECK(std::string(cut.what()).find("truncated") != std::string::npos);
  // Cut inside the header: libjpeg's own message is quoted.
  const std::vector<uint8_t> head(photo.begin(), photo.begin() + 100);
  const seg::Error header = expect_error([&] { decode_image_rgb(head, "head.jpg"); });
  CHECK(header.kind() == seg::ErrorKind::data);
  CHECK(std::string(header.what()).find("cannot decode image file (JPEG: ") != std::string::npos);
  // Garbage in the entropy-coded data (not a marker): a warning inside libjpeg, not an error, as in
  // Pillow; the image has its size and most of it is unchanged.
  std::vector<uint8_t> damaged = photo;
  for (size_t i = photo.size() / 2; i < photo.size() / 2 + 40; ++i) {
    const uint8_t v = static_cast<uint8_t>(damaged[i] ^ 0x5A);
    if (v != 0xFF && damaged[i] != 0xFF && damaged[i - 1] != 0xFF) damaged[i] = v;  // make or break no marker
  }
  const Image ok = decode_image_rgb(photo, "ok.jpg");
  const Image bad = decode_image_rgb(damaged, "damaged.jpg");
  REQUIRE(bad.same_size(ok));
  CHECK(bad.pixels != ok.pixels);  // the damage reached the pixels
  CHECK(std::equal(bad.pixels.begin(), bad.pixels.begin() + 1000, ok.pixels.begin()));
}

// Written by hand (2026-12-03) from 16x16 Pillow files whose frame headers were set to 11584 x 11584
// (134 megapixels, within the pixel limit) and whose end-of-image marker was dropped. Before the
// memory cap and the early stop, the fuzz build took 11.5 s and 2 GB on the progressive CMYK one
// (libjpeg filled 1 GiB of coefficients) and 1.2 s on the baseline one (blank rows to the end).
TEST_CASE("libjpeg's memory is capped and a truncated JPEG stops at the end of its data") {
  const std::string dir = source_path("tests/fuzz/regressions/image/");
  const std::vector<uint8_t> progressive = read_file_bytes(dir + "jpeg_progressive_cmyk_claims_11584x11584.jpg", "image");
  const seg::Error big = expect_error([&] { decode_image_rgb(progressive, "big.jpg"); });
  CHECK(big.kind() == seg::ErrorKind::data);
  CHECK(std::string(big.what()).find(
            "cannot decode image file (JPEG: a 11584x11584 progressive JPEG with 4 components needs more than "
            "segtrain's 512 MiB of decoder memory)") != std::string::npos);
  CHECK(std::string(big.what()).find("save it as a baseline JPEG") != std::string::npos);
  CHECK(big.context("file") == "big.jpg");
  const std::vector<uint8_t> baseline = read_file_bytes(dir + "jpeg_baseline_claims_11584x11584_truncated.jpg", "image");
  CHECK(read_jpeg_header(baseline.data(), baseline.size(), "x.jpg", "image").width == 11584);
  const seg::Error cut = expect_error([&] { decode_image_rgb(baseline, "cut.jpg"); });
  CHECK(cut.kind() == seg::ErrorKind::data);
  CHECK(std::string(cut.what()).find("the file is truncated") != std::string::npos);
  // A progressive photo below the cap still decodes (Pillow's pixels: the bit-for-bit case above).
  CHECK(load_image_rgb(golden("jpeg_photo_progressive_q80.jpg")).width > 0);
}

// The JPEG files the image fuzz target found against stb_image 2.27's JPEG decoder (a Huffman table
// with more than 256 codes, which stb wrote past; a bit reader shifted by 32) are kept in
// tests/fuzz/regressions/image. stb no longer decodes JPEG; libjpeg refuses both as data errors.
TEST_CASE("the JPEG fuzz findings against stb are ordinary data errors with libjpeg") {
  const std::string dht = source_path("tests/fuzz/regressions/image/jpeg_dht_more_than_256_codes");
  const std::vector<uint8_t> bytes = read_file_bytes(dht, "image");
  for (const seg::Error& e : {expect_error([&] { decode_image_rgb(bytes, "x.jpg"); }),
                              expect_error([&] { decode_label(bytes, "x.png"); }),
                              expect_error([&] { load_image_rgb(dht); })}) {
    CHECK(e.kind() == seg::ErrorKind::data);
    CHECK(std::string(e.what()).find("Huffman") != std::string::npos);
  }
  // The same table placed before the frame header is found by the header read (the pre-flight check).
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
  const seg::Error e = expect_error([&] { read_image_header(dir / "early.jpg", "image"); });
  CHECK(e.kind() == seg::ErrorKind::data);
  CHECK(e.context("file") == dir / "early.jpg");
  CHECK(std::string(e.what()).find("Huffman") != std::string::npos);

  const std::string shift = source_path("tests/fuzz/regressions/image/jpeg_huffman_shift_exponent_32.jpg");
  // The bit-reader finding: its frame header is a lossless one (SOF7), which libjpeg-turbo 2.1 does
  // not decode, and neither does Pillow ("broken data stream").
  const seg::Error lossless = expect_error([&] { load_image_rgb(shift); });
  CHECK(lossless.kind() == seg::ErrorKind::data);
  CHECK(std::string(lossless.what()).find("Unsupported JPEG process: SOF type 0xc7") != std::string::npos);
}

// Offset of the first IDAT chunk of a PNG we encoded (8-byte signature, then length/type/data/CRC chunks).
namespace {
size_t first_idat_offset(const std::vector<uint8_t>& png) {
  size_t pos = 8;
  auto length_at = [&](size_t p) {
    return (size_t{png[p]} << 24) | (size_t{png[p + 1]} << 16) | (size_t{png[p + 2]} << 8) | size_t{png[p + 3]};
  };
  while (std::string(png.begin() + static_cast<std::ptrdiff_t>(pos) + 4, png.begin() + static_cast<std::ptrdiff_t>(pos) + 8) != "IDAT")
    pos += 12 + length_at(pos);
  return pos;
}
}  // namespace

// stb_image 2.27 copies an empty first IDAT chunk to a buffer it has not allocated (memcpy to null:
// UBSan reports it; data/png_check.h). The chunk carries no data, so it is dropped before decoding.
TEST_CASE("a PNG with empty IDAT chunks decodes to the same pixels, and stb never sees those chunks") {
  Image rgb(5, 3, 3);
  for (size_t i = 0; i < rgb.pixels.size(); ++i) rgb.pixels[i] = static_cast<uint8_t>(i * 7);
  const std::vector<uint8_t> plain = encode_png(rgb);
  // Put an empty IDAT chunk in front of the first one (length 0, "IDAT", CRC).
  const size_t pos = first_idat_offset(plain);
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

// stb_image 2.27 sizes its buffer from an IDAT chunk's declared length before reading it: the image
// fuzz target's 611-byte PNG made it allocate 2 GB (2026-12-02). Such a chunk is refused first.
TEST_CASE("a PNG whose IDAT chunk claims more bytes than the file has is refused before stb allocates them") {
  const std::string found = source_path("tests/fuzz/regressions/image/png_idat_claims_past_end_2GB_realloc.png");
  const std::vector<uint8_t> bytes = read_file_bytes(found, "image");
  CHECK(png_idat_past_end(bytes.data(), bytes.size()).find("IDAT chunk at byte") != std::string::npos);
  for (const seg::Error& e : {expect_error([&] { decode_image_rgb(bytes, "x.png"); }),
                              expect_error([&] { decode_label(bytes, "x.png"); })}) {
    CHECK(e.kind() == seg::ErrorKind::data);
    CHECK(std::string(e.what()).find("IDAT chunk at byte") != std::string::npos);
  }
  // By hand: a valid PNG whose first IDAT length is set to 2^31 - 1.
  Image rgb(6, 4, 3, 9);
  std::vector<uint8_t> png = encode_png(rgb);
  CHECK(png_idat_past_end(png.data(), png.size()).empty());  // a whole file passes
  const size_t pos = first_idat_offset(png);
  std::vector<uint8_t> huge = png;
  huge[pos] = 0x7F, huge[pos + 1] = 0xFF, huge[pos + 2] = 0xFF, huge[pos + 3] = 0xFF;
  const std::string problem = png_idat_past_end(huge.data(), huge.size());
  CHECK(problem.find("at byte " + std::to_string(pos) + " declares 2147483647 bytes") != std::string::npos);
  CHECK(expect_error([&] { decode_image_rgb(huge, "huge.png"); }).kind() == seg::ErrorKind::data);
  // A file cut inside its IDAT data is refused the same way; the decoder of a whole file is untouched.
  const std::vector<uint8_t> cut(png.begin(), png.begin() + static_cast<std::ptrdiff_t>(pos) + 14);
  CHECK_FALSE(png_idat_past_end(cut.data(), cut.size()).empty());
  CHECK(decode_image_rgb(png, "whole.png").pixels == rgb.pixels);
  // Not a PNG: nothing to say.
  const std::vector<uint8_t> photo = read_file_bytes(golden("jpeg_photo_q90.jpg"), "image");
  CHECK(png_idat_past_end(photo.data(), photo.size()).empty());
}

// The second finding of that kind (CI's fuzz stage, 2026-12-03): the last chunk is an IDAT with its
// length (1.2 GB) and type but only 3 of its bytes, fewer than a chunk's 12-byte frame, so the walk
// that needed a whole frame saw nothing, and stb grew its buffer to 2 GB from the 8-byte header.
TEST_CASE("a PNG whose IDAT chunk is cut after its type, before any CRC, is refused before stb allocates") {
  const std::string found = source_path("tests/fuzz/regressions/image/png_idat_header_cut_before_crc_2GB_realloc.png");
  const std::vector<uint8_t> bytes = read_file_bytes(found, "image");
  REQUIRE(bytes.size() == 68);
  CHECK(png_idat_past_end(bytes.data(), bytes.size()) ==
        "its IDAT chunk at byte 57 declares 1224754176 bytes, but the file ends 3 bytes after the chunk's type");
  for (const seg::Error& e : {expect_error([&] { decode_image_rgb(bytes, "x.png"); }),
                              expect_error([&] { decode_label(bytes, "x.png"); })})
    CHECK(e.kind() == seg::ErrorKind::data);
  // By hand: a valid PNG cut 8 to 11 bytes into its first IDAT chunk (length and type present,
  // 0 to 3 data bytes) is refused; cut 7 bytes in (the type incomplete), stb has nothing to size.
  const std::vector<uint8_t> png = encode_png(Image(6, 4, 3, 9));
  const size_t pos = first_idat_offset(png);
  for (size_t keep = 8; keep < 12; ++keep) {
    CAPTURE(keep);
    const std::vector<uint8_t> cut(png.begin(), png.begin() + static_cast<std::ptrdiff_t>(pos + keep));
    CHECK(png_idat_past_end(cut.data(), cut.size()).find("at byte " + std::to_string(pos)) != std::string::npos);
    CHECK(expect_error([&] { decode_image_rgb(cut, "cut.png"); }).kind() == seg::ErrorKind::data);
  }
  const std::vector<uint8_t> seven(png.begin(), png.begin() + static_cast<std::ptrdiff_t>(pos + 7));
  CHECK(png_idat_past_end(seven.data(), seven.size()).empty());
}

namespace {
// A 24-bit BMP (BITMAPINFOHEADER) whose rows are stored top down: a negative height in the header.
// `rgb` holds the pixels to store, or none (a header that claims `w` x `h` and no data).
std::vector<uint8_t> top_down_bmp(int w, int h, const Image* rgb) {
  auto put32 = [](std::vector<uint8_t>& b, uint32_t v) {
    for (int i = 0; i < 4; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
  };
  auto put16 = [](std::vector<uint8_t>& b, uint16_t v) {
    b.push_back(static_cast<uint8_t>(v));
    b.push_back(static_cast<uint8_t>(v >> 8));
  };
  std::vector<uint8_t> b = {'B', 'M'};
  put32(b, 0), put32(b, 0), put32(b, 54);                                      // file size (unused), reserved, data offset
  put32(b, 40), put32(b, static_cast<uint32_t>(w)), put32(b, static_cast<uint32_t>(-h));  // header size, width, -height
  put16(b, 1), put16(b, 24);                                                   // planes, bits per pixel
  for (int i = 0; i < 6; ++i) put32(b, 0);                                     // no compression, sizes, palette
  if (rgb)
    for (int y = 0; y < h; ++y) {
      for (int x = 0; x < w; ++x)
        for (int c = 2; c >= 0; --c) b.push_back(rgb->at(x, y, c));  // BGR
      while ((b.size() - 54) % 4) b.push_back(0);                        // rows padded to 4 bytes
    }
  return b;
}
}  // namespace

namespace {
// A BMP of `w` x `h` pixels (h < 0: top down) at `bpp` bits, uncompressed, with a grey palette
// below 16 bits and `data_bytes` bytes of pixel data (each 0x5A).
std::vector<uint8_t> bmp_file(int w, int h, int bpp, size_t data_bytes) {
  std::vector<uint8_t> b = {'B', 'M'};
  auto put = [&](uint32_t v, int n) {
    for (int i = 0; i < n; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
  };
  const uint32_t colours = bpp < 16 ? 1u << bpp : 0;
  put(0, 4), put(0, 4), put(54 + 4 * colours, 4);
  put(40, 4), put(static_cast<uint32_t>(w), 4), put(static_cast<uint32_t>(h), 4), put(1, 2), put(static_cast<uint32_t>(bpp), 2);
  put(0, 4), put(0, 4), put(0, 4), put(0, 4), put(colours, 4), put(0, 4);
  for (uint32_t c = 0; c < colours; ++c) put(c * 0x010101u, 4);
  b.insert(b.end(), data_bytes, 0x5A);
  return b;
}
}  // namespace

// stb reads zeros past the end of a BMP's pixel data, so a 70-byte file claiming 11584 x 11584 pixels
// decoded to 134 megapixels of black (12 s each in the fuzz build, 2026-12-03, by hand). The rows
// must be in the file. The exact size decodes and one byte less is refused, at every bit depth stb
// reads, both row orders: the row formula is stb's.
TEST_CASE("a BMP whose pixel rows run past the end of the file is refused before stb reads zeros") {
  for (int bpp : {1, 4, 8, 16, 24, 32})
    for (int h : {5, -5}) {
      CAPTURE(bpp);
      CAPTURE(h);
      const size_t row = static_cast<size_t>((13 * bpp + 31) / 32 * 4);
      const std::vector<uint8_t> whole = bmp_file(13, h, bpp, row * 5);
      CHECK(bmp_pixels_past_end(whole.data(), whole.size()).empty());
      const Image img = decode_image_rgb(whole, "whole.bmp");
      CHECK(img.width == 13);
      CHECK(img.height == 5);
      const std::vector<uint8_t> short_by_one(whole.begin(), whole.end() - 1);
      const seg::Error e = expect_error([&] { decode_image_rgb(short_by_one, "short.bmp"); });
      CHECK(e.kind() == seg::ErrorKind::data);
      CHECK(std::string(e.what()).find("(BMP: its 13x5 pixels at " + std::to_string(bpp) + " bits need 5 rows of " +
                                       std::to_string(row) + " bytes") != std::string::npos);
      CHECK(e.context("file") == "short.bmp");
    }
  const std::vector<uint8_t> claim = bmp_file(11584, 11584, 24, 16);
  const seg::Error e = expect_error([&] { decode_image_rgb(claim, "claim.bmp"); });
  CHECK(std::string(e.what()).find("up to byte 402567222, but the file has 70 bytes") != std::string::npos);
  // stb reads any compression value but 1, 2 and 4 and above as uncompressed rows: CI's fuzz stage
  // found the same timeout with compression 0xFFFFFFFF (2026-12-03), which the first version of
  // the check let through as "refused by stb anyway".
  const std::vector<uint8_t> found = read_file_bytes(source_path("tests/fuzz/regressions/image/bmp_compression_minus_1_no_rows.bmp"), "image");
  CHECK(std::string(expect_error([&] { decode_image_rgb(found, "found.bmp"); }).what())
            .find("(BMP: its 11584x11584 pixels at 24 bits need") != std::string::npos);
  for (uint32_t compression : {0u, 3u, 0xFFFFFFFFu, 0x80000000u, 1u, 2u, 4u, 5u}) {
    CAPTURE(compression);
    std::vector<uint8_t> c = bmp_file(11584, 11584, 32, 16);
    for (int i = 0; i < 4; ++i) c[30 + i] = static_cast<uint8_t>(compression >> (8 * i));
    const bool stb_reads_rows = compression == 0 || compression == 3 || compression >= 0x80000000u;
    CHECK(bmp_pixels_past_end(c.data(), c.size()).empty() == !stb_reads_rows);
    CHECK(expect_error([&] { decode_image_rgb(c, "c.bmp"); }).kind() == seg::ErrorKind::data);
  }
  // Not a BMP, or a header stb refuses anyway: nothing to say.
  const std::vector<uint8_t> png = encode_png(Image(2, 2, 3));
  CHECK(bmp_pixels_past_end(png.data(), png.size()).empty());
  CHECK(bmp_pixels_past_end(claim.data(), 20).empty());
}

// CI's fuzz stage (2026-12-03, by hand after reading stb): stb's BMP header reader gives a top-down
// file's height as negative, and the pixel limit multiplied the signed values, so a 70-byte BMP
// claiming 16384 x 32768 pixels (512 megapixels, above the 134-megapixel limit) passed and stb
// allocated 1.5 GB for it. The magnitude counts now; a small top-down BMP still decodes.
TEST_CASE("a top-down BMP counts |height| against the pixel limit and decodes the right way up") {
  const std::vector<uint8_t> huge = top_down_bmp(16384, 32768, nullptr);
  const std::string found = source_path("tests/fuzz/regressions/image/bmp_top_down_512_megapixels.bmp");
  const std::vector<uint8_t> kept = read_file_bytes(found, "image");
  REQUIRE(kept.size() == huge.size() + 16);
  CHECK(std::equal(huge.begin(), huge.end(), kept.begin()));
  for (const std::vector<uint8_t>* bytes : {&huge, &kept}) {
    const seg::Error e = expect_error([&] { decode_image_rgb(*bytes, "huge.bmp"); });
    CHECK(e.kind() == seg::ErrorKind::data);
    CHECK(std::string(e.what()).find("536 megapixels), above segtrain's limit of 134 megapixels") != std::string::npos);
    CHECK(e.context("file") == "huge.bmp");
  }
  Image rgb(3, 2, 3);
  for (size_t i = 0; i < rgb.pixels.size(); ++i) rgb.pixels[i] = static_cast<uint8_t>(10 + 13 * i);
  const std::vector<uint8_t> small = top_down_bmp(3, 2, &rgb);
  const Image back = decode_image_rgb(small, "small.bmp");
  CHECK(back.width == 3);
  CHECK(back.height == 2);
  CHECK(back.pixels == rgb.pixels);
  // Found by the fuzzer right after: width 0, height -32768. stb decodes it to no pixels at all.
  const std::vector<uint8_t> empty = read_file_bytes(source_path("tests/fuzz/regressions/image/bmp_width_0_null_memcpy.bmp"), "image");
  const seg::Error none = expect_error([&] { decode_image_rgb(empty, "empty.bmp"); });
  CHECK(none.kind() == seg::ErrorKind::data);
  CHECK(std::string(none.what()).find("decoded 0x32768 pixels, no image") != std::string::npos);
  ScratchDir dir;
  write_file_atomic(dir / "small.bmp", small.data(), small.size());
  CHECK(read_image_header(dir / "small.bmp", "image").height == 2);
}
