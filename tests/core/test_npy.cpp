#include <doctest/doctest.h>

#include <cstdio>
#include <cstring>
#include <fstream>

#include "core/fileio.h"
#include "core/npy.h"
#include "tests/common/scratch.h"

using namespace seg;

TEST_CASE(".npy round trip for every supported dtype and rank") {
  const std::string path = seg::test::scratch_path("roundtrip.npy");
  for (DType dt : {DType::f32, DType::f64, DType::f16, DType::i32, DType::i64, DType::u8}) {
    for (const Shape& shape : {Shape{}, Shape{5}, Shape{2, 3}, Shape{1, 2, 3, 4}}) {
      Tensor t = Tensor::empty(shape, DType::f64, Device::cpu());
      for (int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = static_cast<double>(i % 7) - 1.0 * (dt != DType::u8);
      const Tensor typed = t.to(dt);
      write_npy(path, typed);
      const Tensor back = read_npy(path);
      CHECK(back.dtype() == dt);
      CHECK(back.shape() == shape);
      CHECK(std::memcmp(back.data_ptr(), typed.data_ptr(), typed.nbytes()) == 0);
    }
  }
  std::remove(path.c_str());
}

TEST_CASE("bad .npy files are data errors naming the file") {
  const std::string path = seg::test::scratch_path("bad.npy");
  {
    std::ofstream f(path);
    f << "not numpy";
  }
  try {
    read_npy(path);
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::data);
    CHECK(e.context("file") == path);
  }
  write_npy(path, Tensor::zeros({4}, DType::f32, Device::cpu()));
  // Truncate the data part.
  std::vector<char> bytes = read_file(path);
  write_file_atomic(path, bytes.data(), bytes.size() - 3);
  CHECK_THROWS_WITH_AS(read_npy(path), doctest::Contains("bytes"), Error);
  std::remove(path.c_str());
  CHECK_THROWS_AS(read_npy("/nonexistent/file.npy"), Error);
}
