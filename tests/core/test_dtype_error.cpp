#include <doctest/doctest.h>

#include "core/dtype.h"
#include "core/error.h"

using namespace seg;

TEST_CASE("dtype sizes and names") {
  CHECK(dtype_size(DType::f32) == 4);
  CHECK(dtype_size(DType::f64) == 8);
  CHECK(dtype_size(DType::f16) == 2);
  CHECK(dtype_size(DType::bf16) == 2);
  CHECK(dtype_size(DType::i32) == 4);
  CHECK(dtype_size(DType::i64) == 8);
  CHECK(dtype_size(DType::u8) == 1);
  CHECK(std::string(dtype_name(DType::bf16)) == "bf16");
  CHECK(parse_dtype("half") == DType::f16);
  CHECK(parse_dtype("bfloat16") == DType::bf16);
  CHECK_THROWS_AS(parse_dtype("float8"), Error);
  CHECK(is_floating(DType::bf16));
  CHECK_FALSE(is_floating(DType::i64));
}

TEST_CASE("dispatch runs the listed instantiation and names op, dtype and device otherwise") {
  auto size_of = [](DType dt) {
    return SEG_DISPATCH("size_of", dt, Device::cpu(), (DType::f32, DType::f64, DType::f16),
                        [&](auto tag) { return static_cast<int>(sizeof(SEG_TYPE(tag))); });
  };
  CHECK(size_of(DType::f32) == 4);
  CHECK(size_of(DType::f64) == 8);
  CHECK(size_of(DType::f16) == 2);
  try {
    size_of(DType::bf16);
    FAIL("bf16 is not listed, dispatch must refuse it");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::device);
    CHECK(e.context("op") == "size_of");
    CHECK(e.context("dtype") == "bf16");
    CHECK(e.context("device") == "cpu");
  }
  int called = 0;
  SEG_DISPATCH("void_op", DType::i32, Device::cuda(1), (DType::i32), [&](auto tag) {
    static_assert(std::is_same_v<SEG_TYPE(tag), int32_t>);
    ++called;
  });
  CHECK(called == 1);
}

TEST_CASE("errors carry context and map to the exit codes of DESIGN") {
  CHECK(Error(ErrorKind::runtime, "x").exit_code() == 1);
  CHECK(Error(ErrorKind::usage, "x").exit_code() == 2);
  CHECK(Error(ErrorKind::data, "x").exit_code() == 3);
  CHECK(Error(ErrorKind::device, "x").exit_code() == 4);
  Error e(ErrorKind::data, "label value 151 is above num_class 150");
  e.file("train.odgt", 12).key("DATASET.num_class").hint("fix the list");
  const std::string text = e.what();
  CHECK(text.find("data error: label value 151") == 0);
  CHECK(text.find("file: train.odgt:12") != std::string::npos);
  CHECK(text.find("key: DATASET.num_class") != std::string::npos);
  CHECK(text.find("what to do: fix the list") != std::string::npos);
  CHECK(e.context("file") == "train.odgt:12");
  try {
    SEG_CHECK(1 + 1 == 3, usage, "arithmetic is broken: ", 2);
    FAIL("SEG_CHECK did not throw");
  } catch (const Error& err) {
    CHECK(err.kind() == ErrorKind::usage);
    CHECK(err.message() == "arithmetic is broken: 2");
  }
}

TEST_CASE("device names parse in every upstream form") {
  CHECK(Device::parse("cpu") == Device::cpu());
  CHECK(Device::parse("cuda") == Device::cuda(0));
  CHECK(Device::parse("cuda:3") == Device::cuda(3));
  CHECK(Device::parse("gpu2") == Device::cuda(2));
  CHECK(Device::cuda(1).str() == "cuda:1");
  CHECK_THROWS_AS(Device::parse("tpu"), Error);
  CHECK_THROWS_AS(Device::parse("cuda:x"), Error);
}
