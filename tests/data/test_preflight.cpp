// The header-only checks training runs before its first step (data/sample.h check_sample_files,
// data/dataset_check.h preflight_check): the header gives the decoded image's size and format, and
// every problem they find is reported with the message loading the sample would give.
#include <doctest/doctest.h>

#include <filesystem>

#include "data/dataset_check.h"
#include "data/file_io.h"
#include "data/image_codec.h"
#include "data/sample.h"
#include "tests/common/scratch.h"
#include "tiny_dataset.h"

using namespace seg::data;
using namespace seg::data::test;

TEST_CASE("an image header gives the decoded size and the file's channels, for JPEG and PNG") {
  for (const std::string& path : {golden("jpeg_photo_q90.jpg"), golden("pipe_a.png"), fixture("ADE_val_00000278_teaser.png")}) {
    CAPTURE(path);
    const ImageHeader h = read_image_header(path, "image");
    const Image img = load_image_rgb(path);
    CHECK(h.width == img.width);
    CHECK(h.height == img.height);
    CHECK(h.channels == 3);
    CHECK_FALSE(h.sixteen_bit);
  }
  const ImageHeader label = read_image_header(golden("label_278.png"), "label");
  CHECK(label.channels == 1);
  CHECK_NOTHROW(check_label_format(label, "label_278.png"));
  CHECK(label.width == load_label(golden("label_278.png")).width);
  // An RGB PNG where a label belongs: the same message decode_label gives.
  const ImageHeader rgb = read_image_header(golden("pipe_a.png"), "label");
  const seg::Error from_header = expect_error([&] { check_label_format(rgb, "x.png"); });
  const seg::Error from_decode = expect_error([&] { decode_label(read_file_bytes(golden("pipe_a.png"), "label"), "x.png"); });
  CHECK(std::string(from_header.what()) == from_decode.what());
  CHECK(from_header.message().find("8-bit single-channel") != std::string::npos);
}

TEST_CASE("a missing or truncated file: the loader's messages") {
  const std::string dir = seg::test::scratch_path("headers");
  std::filesystem::create_directories(dir);
  const seg::Error missing = expect_error([&] { read_image_header(dir + "/none.jpg", "image"); });
  const seg::Error loading = expect_error([&] { load_image_rgb(dir + "/none.jpg"); });
  CHECK(std::string(missing.what()) == loading.what());
  CHECK(missing.kind() == seg::ErrorKind::data);
  const std::vector<uint8_t> png = read_file_bytes(golden("pipe_a.png"), "image");
  write_file_atomic(dir + "/cut.png", png.data(), 12);  // the signature and half a chunk header
  const seg::Error cut = expect_error([&] { read_image_header(dir + "/cut.png", "image"); });
  CHECK(cut.message().find("cannot decode image file") != std::string::npos);
  CHECK(cut.context("file") == dir + "/cut.png");
}

TEST_CASE("preflight_check reports every bad entry of a list, in list order, and only those") {
  const std::string root = seg::test::scratch_path("preflight_list");
  const TinyDataset ds = make_tiny_dataset(root, 9);
  OdgtReadOptions read;
  read.root = root;
  read.require_size = true;
  OdgtList list = read_odgt(ds.list, read);
  std::filesystem::remove(list[2].fpath_segm);
  list.records[5].height += 1;  // the list disagrees with the image
  save_png(list[7].fpath_segm, Image(3, 3, 1));
  const PreflightReport r = preflight_check(list, true, 3);
  CHECK(r.entries == 9);
  REQUIRE(r.problems.size() == 3);
  CHECK(r.problems[0].line == 3);
  CHECK(r.problems[0].message.find("missing label file") != std::string::npos);
  CHECK(r.problems[1].line == 6);
  CHECK(r.problems[1].message.find("but the list says") != std::string::npos);
  CHECK(r.problems[2].line == 8);
  CHECK(r.problems[2].message.find("but its label is 3x3") != std::string::npos);
  // The same words as loading the sample (what training would have stopped with, later).
  for (const DatasetProblem& p : r.problems) {
    const OdgtRecord& rec = list[static_cast<size_t>(p.line - 1)];
    const seg::Error e = expect_error([&] { load_sample(rec, list.path, 5, true); });
    CHECK(p.message == e.what());
  }
  // Without the list-size check (validation lists) entry 6 is fine.
  CHECK(preflight_check(list, false, 1).problems.size() == 2);
}
