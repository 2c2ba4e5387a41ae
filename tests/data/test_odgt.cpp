// odgt lists: the real ADE20K validation list, root joining, slicing, and errors with file and line.
#include <doctest/doctest.h>

#include "data/file_io.h"
#include "data/odgt.h"
#include "test_helpers.h"

using namespace seg::data;
using namespace seg::data::test;

TEST_CASE("all 2000 lines of the real ADE20K validation list parse, joined with the root") {
  OdgtReadOptions o;
  o.root = "./data/";
  const OdgtList list = read_odgt(source_path("data/ade20k/validation.odgt"), o);
  REQUIRE(list.size() == 2000);
  CHECK(list[0].fpath_img == "./data/ADEChallengeData2016/images/validation/ADE_val_00000001.jpg");
  CHECK(list[0].fpath_segm == "./data/ADEChallengeData2016/annotations/validation/ADE_val_00000001.png");
  CHECK(list[0].width == 683);
  CHECK(list[0].height == 512);
  CHECK(list[0].line == 1);
  // line 278 is the teaser fixture's image, 739x512
  CHECK(list[277].fpath_img.find("ADE_val_00000278.jpg") != std::string::npos);
  CHECK(list[277].width == 739);
  CHECK(list[277].height == 512);
  CHECK(list[1999].fpath_img.find("ADE_val_00002000.jpg") != std::string::npos);
  CHECK(list[1999].line == 2000);
  int portrait = 0;
  for (const auto& r : list.records) {
    CHECK(r.width > 0);
    CHECK(r.height > 0);
    portrait += r.height > r.width;
  }
  CHECK(portrait > 100);  // ADE has both orientations, which aspect grouping relies on
  CHECK(portrait < 1000);
}

TEST_CASE("root joining follows os.path.join") {
  CHECK(join_path("./data/", "a/b.jpg") == "./data/a/b.jpg");
  CHECK(join_path("./data", "a/b.jpg") == "./data/a/b.jpg");
  CHECK(join_path("", "a/b.jpg") == "a/b.jpg");
  CHECK(join_path("./data/", "/abs/b.jpg") == "/abs/b.jpg");
}

TEST_CASE("max_sample, start_idx and end_idx slice as upstream's parse_input_list") {
  std::string text;
  for (int i = 0; i < 10; ++i) text += odgt_line("i" + std::to_string(i), "s" + std::to_string(i), 4, 3) + "\n";
  OdgtReadOptions o;
  o.max_sample = 6;
  o.start_idx = 2;
  o.end_idx = 4;
  const OdgtList list = parse_odgt(text, "x.odgt", o);
  REQUIRE(list.size() == 2);
  CHECK(list[0].fpath_img == "i2");
  CHECK(list[1].fpath_img == "i3");
  CHECK(list[0].line == 3);
}

TEST_CASE("blank lines are skipped and line numbers stay true") {
  const std::string text = "\n" + odgt_line("a.jpg", "a.png", 4, 3) + "\n\n  \n" + odgt_line("b.jpg", "b.png", 4, 3);
  const OdgtList list = parse_odgt(text, "x.odgt", {});
  REQUIRE(list.size() == 2);
  CHECK(list[0].line == 2);
  CHECK(list[1].line == 5);
}

TEST_CASE("generated lines look like upstream's") {
  CHECK(odgt_line("ADEChallengeData2016/images/validation/ADE_val_00000001.jpg",
                  "ADEChallengeData2016/annotations/validation/ADE_val_00000001.png", 683, 512) ==
        R"({"fpath_img": "ADEChallengeData2016/images/validation/ADE_val_00000001.jpg", )"
        R"("fpath_segm": "ADEChallengeData2016/annotations/validation/ADE_val_00000001.png", "width": 683, "height": 512})");
}

TEST_CASE("a malformed line is a data error naming the list file and line") {
  const std::string text = odgt_line("a.jpg", "a.png", 4, 3) + "\n" + "{\"fpath_img\": \"b.jpg\", \n";
  const seg::Error e = expect_error([&] { parse_odgt(text, "lists/train.odgt", {}); });
  CHECK(e.kind() == seg::ErrorKind::data);
  CHECK(e.exit_code() == 3);
  CHECK(e.context("file") == "lists/train.odgt:2");
  CHECK(std::string(e.what()).find("malformed JSON") != std::string::npos);
  CHECK(!e.context("what to do").empty());
}

// nlohmann reports a number too large for a double as out_of_range.406, not as a parse_error: it
// escaped parse_odgt as a foreign exception (found by the odgt fuzz target,
// tests/fuzz/regressions/odgt).
TEST_CASE("a number too large for a double is a malformed line, not a crash") {
  const std::string text = odgt_line("a.jpg", "a.png", 4, 3) + "\n" + R"({"fpath_img": "b.jpg", "width": 1e999})";
  const seg::Error e = expect_error([&] { parse_odgt(text, "lists/train.odgt", {}); });
  CHECK(e.kind() == seg::ErrorKind::data);
  CHECK(e.context("file") == "lists/train.odgt:2");
  CHECK(std::string(e.what()).find("malformed JSON") != std::string::npos);
  CHECK(std::string(e.what()).find("1e999") != std::string::npos);
}

TEST_CASE("missing keys and wrong types name the key and line") {
  OdgtReadOptions train;
  train.require_size = true;
  auto error_for = [&](const std::string& line, const OdgtReadOptions& o) {
    return expect_error([&] { parse_odgt(odgt_line("ok.jpg", "ok.png", 4, 3) + "\n" + line, "t.odgt", o); });
  };
  seg::Error e = error_for(R"({"fpath_img": "b.jpg", "width": 4, "height": 3})", train);
  CHECK(e.context("key") == "fpath_segm");
  CHECK(e.context("file") == "t.odgt:2");
  e = error_for(R"({"fpath_img": "b.jpg", "fpath_segm": "b.png", "height": 3})", train);
  CHECK(e.context("key") == "width");
  e = error_for(R"({"fpath_img": "b.jpg", "fpath_segm": "b.png", "width": "4", "height": 3})", train);
  CHECK(e.context("key") == "width");
  e = error_for(R"({"fpath_img": 7, "fpath_segm": "b.png"})", {});
  CHECK(e.context("key") == "fpath_img");
  e = error_for(R"(["fpath_img", "b.jpg"])", {});
  CHECK(std::string(e.what()).find("not a JSON object") != std::string::npos);
  // test lists need neither the label nor the size
  OdgtReadOptions test;
  test.require_segm = false;
  CHECK(parse_odgt(R"({"fpath_img": "only.jpg"})", "t.odgt", test).size() == 1);
}

TEST_CASE("a missing list file is a data error naming it") {
  const seg::Error e = expect_error([] { read_odgt("/nonexistent/training.odgt", {}); });
  CHECK(e.kind() == seg::ErrorKind::data);
  CHECK(e.context("file") == "/nonexistent/training.odgt");
}
