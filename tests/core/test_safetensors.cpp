// safetensors read/write: every dtype, the exact byte layout, and every kind of damaged file.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "core/fileio.h"
#include "core/safetensors.h"
#include "tests/common/scratch.h"

using namespace seg;

namespace {

Tensor ramp(const Shape& shape, DType dt) {
  Tensor t = Tensor::empty(shape, DType::f64, Device::cpu());
  for (int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = static_cast<double>(i % 11) - (dt == DType::u8 ? 0 : 5);
  return t.to(dt);
}

std::string header_of(const std::vector<char>& bytes) {
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  return std::string(bytes.data() + 8, n);
}

// Parses `bytes`, expecting Error(data) that names the file (and whose message contains `needle`).
void expect_data_error(const std::vector<char>& bytes, const std::string& needle) {
  CAPTURE(needle);
  try {
    parse_safetensors(bytes, "bad.safetensors");
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::data);
    CHECK(e.exit_code() == 3);
    CHECK(e.context("file") == "bad.safetensors");
    CHECK_MESSAGE(std::string(e.what()).find(needle) != std::string::npos, e.what());
  }
}

// Rebuilds a file from a header text and a data block.
std::vector<char> with_header(const std::string& header, const std::vector<char>& data) {
  std::vector<char> out(8 + header.size() + data.size());
  const uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  std::memcpy(out.data() + 8, header.data(), header.size());
  if (!data.empty()) std::memcpy(out.data() + 8 + header.size(), data.data(), data.size());
  return out;
}

}  // namespace

TEST_CASE("safetensors round trip: every dtype, scalars, empty tensors, metadata, order") {
  NamedTensors in;
  const DType dtypes[] = {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i32, DType::i64, DType::u8};
  int k = 0;
  for (DType dt : dtypes)
    for (const Shape& shape : {Shape{}, Shape{3}, Shape{2, 3, 1, 5}, Shape{0, 4}})
      in.emplace_back(str("t", k++, ".", dtype_name(dt)), ramp(shape, dt));
  const std::string path = seg::test::scratch_path("roundtrip.safetensors");
  write_safetensors(path, in, {{"arch", "resnet50dilated"}, {"note", "x"}});
  const SafetensorsFile f = read_safetensors(path);
  std::remove(path.c_str());
  REQUIRE(f.tensors.size() == in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    CAPTURE(in[i].first);
    CHECK(f.tensors[i].first == in[i].first);  // file order = write order
    const Tensor& a = f.tensors[i].second;
    CHECK(a.dtype() == in[i].second.dtype());
    CHECK(a.shape() == in[i].second.shape());
    CHECK(std::memcmp(a.data_ptr(), in[i].second.data_ptr(), a.nbytes()) == 0);
  }
  CHECK(f.metadata.at("arch") == "resnet50dilated");
  REQUIRE(f.find("t1.f32") != nullptr);
  CHECK(f.find("nope") == nullptr);
}

TEST_CASE("safetensors byte layout: little-endian length, JSON header, data 8-byte aligned") {
  const Tensor t = Tensor::from_vector<float>({2}, {1.5f, -2.0f});
  const std::vector<char> bytes = serialize_safetensors({{"w", t}});
  const std::string header = header_of(bytes);
  CHECK((8 + header.size()) % 8 == 0);
  CHECK(header.rfind(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 0) == 0);
  REQUIRE(bytes.size() == 8 + header.size() + 8);
  float back[2];
  std::memcpy(back, bytes.data() + 8 + header.size(), 8);
  CHECK(back[0] == 1.5f);
  CHECK(back[1] == -2.0f);
}

TEST_CASE("safetensors writer rejects duplicate and empty names") {
  const Tensor t = Tensor::zeros({1}, DType::f32, Device::cpu());
  CHECK_THROWS_AS(serialize_safetensors({{"a", t}, {"a", t}}), Error);
  CHECK_THROWS_AS(serialize_safetensors({{"", t}}), Error);
}

TEST_CASE("damaged safetensors files are data errors naming the file, never crashes") {
  const std::vector<char> good = serialize_safetensors({{"a", Tensor::zeros({3}, DType::f32, Device::cpu())}, {"b", Tensor::zeros({2, 2}, DType::i64, Device::cpu())}});
  // Every truncation point: a clear error each time.
  for (size_t len = 0; len < good.size(); ++len) {
    CAPTURE(len);
    CHECK_THROWS_AS(parse_safetensors(std::vector<char>(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(len)), "x"),
                    Error);
  }
  expect_data_error(std::vector<char>(good.begin(), good.begin() + 4), "fewer than the 8-byte");
  expect_data_error(std::vector<char>(good.begin(), good.end() - 5), "truncated");
  std::vector<char> huge = good;
  const uint64_t big = 1ull << 40;
  std::memcpy(huge.data(), &big, 8);
  expect_data_error(huge, "implausible");
  expect_data_error(with_header("{not json", {}), "not valid JSON");
  expect_data_error(with_header("[1,2]", {}), "not a JSON object");
  const std::vector<char> four(4, 0);
  expect_data_error(with_header(R"({"x":{"dtype":"I16","shape":[2],"data_offsets":[0,4]}})", four), "I16");
  expect_data_error(with_header(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", four), "needs 8");
  expect_data_error(with_header(R"({"x":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", four), "negative");
  expect_data_error(with_header(R"({"x":{"dtype":"F32","data_offsets":[0,4]}})", four), "'shape'");
  expect_data_error(with_header(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", std::vector<char>(8, 0)),
                    "gap");
  expect_data_error(with_header(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                R"("y":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                                four),
                    "overlaps");
  expect_data_error(with_header(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", std::vector<char>(6, 0)),
                    "after the last tensor");
  expect_data_error(with_header(R"({"x":{"dtype":"F32","shape":[1000000000000],"data_offsets":[0,4]}})", four), "needs");
  expect_data_error(with_header(R"({"__metadata__":{"k":1}})", {}), "__metadata__");
  // The error names the tensor at fault.
  try {
    parse_safetensors(with_header(R"({"layer1.0.conv1.weight":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", four),
                      "m.safetensors");
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.context("tensor") == "layer1.0.conv1.weight");
  }
  CHECK_THROWS_AS(read_safetensors("/nonexistent/x.safetensors"), Error);
}

TEST_CASE("files written by tools/convert_pth.py from a PyTorch .pth read back: every dtype, scalars, empty") {
  // tools/golden/make_checkpoint_fixtures.py: per dtype a vector -3..3 (0..6 for u8), a scalar 5 and
  // an empty [0, 3] tensor, saved by torch.save and converted.
  const SafetensorsFile f =
      read_safetensors(std::string(SEG_SOURCE_DIR) + "/tests/golden/checkpoints/all_dtypes_from_pth.safetensors");
  REQUIRE(f.tensors.size() == 21);
  const std::pair<const char*, DType> names[] = {{"float32", DType::f32}, {"float64", DType::f64},
                                                 {"float16", DType::f16}, {"bfloat16", DType::bf16},
                                                 {"int32", DType::i32},   {"int64", DType::i64},
                                                 {"uint8", DType::u8}};
  for (const auto& [name, dt] : names) {
    CAPTURE(name);
    const Tensor* vec = f.find(std::string(name) + ".vec");
    const Tensor* scalar = f.find(std::string(name) + ".scalar");
    const Tensor* empty = f.find(std::string(name) + ".empty");
    REQUIRE((vec && scalar && empty));
    CHECK(vec->dtype() == dt);
    CHECK(vec->shape() == Shape{7});
    const double first = dt == DType::u8 ? 0 : -3;
    const auto v = vec->to(DType::f64).to_vector<double>();
    for (int i = 0; i < 7; ++i) CHECK(v[static_cast<size_t>(i)] == first + i);
    CHECK(scalar->dim() == 0);
    CHECK(scalar->item() == 5.0);
    CHECK(empty->shape() == Shape{0, 3});
    CHECK(empty->dtype() == dt);
  }
  // And our writer reproduces the same tensors (read back equal).
  const SafetensorsFile again = parse_safetensors(serialize_safetensors(f.tensors), "again");
  for (size_t i = 0; i < f.tensors.size(); ++i) {
    CHECK(again.tensors[i].first == f.tensors[i].first);
    CHECK(std::memcmp(again.tensors[i].second.data_ptr(), f.tensors[i].second.data_ptr(), f.tensors[i].second.nbytes()) == 0);
  }
}
