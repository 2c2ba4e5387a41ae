#include <doctest/doctest.h>

#include <numeric>

#include "core/allocator.h"
#include "core/error.h"
#include "core/tensor.h"

using namespace seg;

namespace {
Tensor iota(const Shape& shape) {
  std::vector<float> v(static_cast<size_t>(shape.numel()));
  std::iota(v.begin(), v.end(), 0.0f);
  return Tensor::from_vector(shape, v);
}
}  // namespace

TEST_CASE("factories give contiguous row-major tensors") {
  Tensor t = Tensor::zeros({2, 3, 4, 5}, DType::f32, Device::cpu());
  CHECK(t.dim() == 4);
  CHECK(t.numel() == 120);
  CHECK(t.strides() == Shape{60, 20, 5, 1});
  CHECK(t.is_contiguous());
  CHECK(t.dtype() == DType::f32);
  CHECK(t.device() == Device::cpu());
  for (float v : t.to_vector<float>()) CHECK(v == 0.0f);
  Tensor f = Tensor::full({3}, 2.5, DType::f64, Device::cpu());
  CHECK(f.to_vector<double>() == std::vector<double>{2.5, 2.5, 2.5});
  CHECK(Tensor::full({2}, -1, DType::i32, Device::cpu()).to_vector<int32_t>() == std::vector<int32_t>{-1, -1});
  CHECK(t.str() == "f32[2, 3, 4, 5] cpu");
  CHECK(reinterpret_cast<uintptr_t>(t.data_ptr()) % 64 == 0);
}

TEST_CASE("Shape::numel is a checked product: an overflowing shape is a usage error, a zero size gives 0") {
  CHECK(Shape{}.numel() == 1);
  CHECK(Shape{3, 0, 5}.numel() == 0);
  const int64_t big = int64_t(1) << 32;
  CHECK(Shape{big, big / 2 - 1}.numel() == big * (big / 2 - 1));
  CHECK(Shape{0, big, big, big}.numel() == 0);  // zero anywhere: no overflow on the way
  CHECK(Shape{big, big, 0}.numel() == 0);
  try {
    (void)Shape{big, big}.numel();  // 2^64 wraps to 0 in an unchecked product
    FAIL("Shape::numel did not throw on 2^64 elements");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::usage);
    CHECK(std::string(e.what()).find("[4294967296, 4294967296]") != std::string::npos);
  }
  CHECK_THROWS_AS((void)Tensor::empty({big, big, 4}, DType::f32, Device::cpu()), Error);
}

TEST_CASE("channel slices are zero-copy views with W stride > C") {
  // [N, H, W, C] = [1, 2, 2, 6]; channels 2..5 of it.
  Tensor x = iota({1, 2, 2, 6});
  Tensor s = x.channels(2, 5);
  CHECK(s.shape() == Shape{1, 2, 2, 3});
  CHECK(s.strides() == Shape{24, 12, 6, 1});
  CHECK_FALSE(s.is_contiguous());
  CHECK(s.shares_storage(x));
  Tensor c = s.contiguous();
  CHECK(c.is_contiguous());
  CHECK(c.to_vector<float>() == std::vector<float>{2, 3, 4, 8, 9, 10, 14, 15, 16, 20, 21, 22});
  // Writing into a slice writes into the wide tensor (how concat fills its output).
  s.fill_(-1.0);
  const auto all = x.to_vector<float>();
  CHECK(all[1] == 1.0f);
  CHECK(all[2] == -1.0f);
  CHECK(all[4] == -1.0f);
  CHECK(all[5] == 5.0f);
  CHECK(all[22] == -1.0f);
}

TEST_CASE("copy_ between views of different dtypes") {
  Tensor x = iota({2, 3, 4});
  Tensor y = Tensor::zeros({2, 3, 8}, DType::f16, Device::cpu());
  y.channels(4, 8).copy_(x);
  const Tensor back = y.to(DType::f32);
  const auto v = back.to_vector<float>();
  CHECK(v[0] == 0.0f);
  CHECK(v[4] == 0.0f);
  CHECK(v[5] == 1.0f);
  CHECK(v[8 * 5 + 4 + 3] == 23.0f);
}

TEST_CASE("to(dtype) converts every dtype pair through the dispatch table") {
  const std::vector<DType> all = {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i32, DType::i64, DType::u8};
  Tensor x = Tensor::from_vector<float>({5}, {0, 1, 2, 3, 100});
  for (DType a : all) {
    for (DType b : all) {
      CAPTURE(dtype_name(a));
      CAPTURE(dtype_name(b));
      Tensor y = x.to(a).to(b).to(DType::f32);
      CHECK(y.to_vector<float>() == std::vector<float>{0, 1, 2, 3, 100});
    }
  }
}

TEST_CASE("slice, view and reshape") {
  Tensor x = iota({4, 6});
  Tensor rows = x.slice(0, 1, 3);
  CHECK(rows.is_contiguous());
  CHECK(rows.to_vector<float>()[0] == 6.0f);
  Tensor v = rows.view({3, 4});
  CHECK(v.shape() == Shape{3, 4});
  CHECK(v.to_vector<float>()[11] == 17.0f);
  Tensor cols = x.slice(1, 2, 4);
  CHECK_THROWS_AS(cols.view({8}), Error);
  Tensor r = cols.reshape({8});
  CHECK(r.to_vector<float>() == std::vector<float>{2, 3, 8, 9, 14, 15, 20, 21});
  CHECK_THROWS_AS(x.slice(0, 3, 5), Error);
  CHECK_THROWS_AS(x.size(2), Error);
  CHECK(x.size(-1) == 6);
}

TEST_CASE("permute is a strided view; contiguous() materialises it (NHWC -> NCHW)") {
  Tensor x = iota({1, 2, 3, 4});  // [N, H, W, C]
  Tensor nchw = x.permute({0, 3, 1, 2});
  CHECK(nchw.shape() == Shape{1, 4, 2, 3});
  CHECK_FALSE(nchw.is_contiguous());
  const auto v = nchw.contiguous().to_vector<float>();
  // element (n, c, h, w) = x[n, h, w, c] = ((h * 3) + w) * 4 + c
  for (int c = 0; c < 4; ++c)
    for (int h = 0; h < 2; ++h)
      for (int w = 0; w < 3; ++w) CHECK(v[(c * 2 + h) * 3 + w] == static_cast<float>((h * 3 + w) * 4 + c));
  CHECK_THROWS_AS(x.permute({0, 1, 1, 2}), Error);
}

TEST_CASE("data<T>() refuses the wrong type, naming both dtypes") {
  Tensor x = Tensor::zeros({2}, DType::f16, Device::cpu());
  CHECK_NOTHROW(x.data<f16>());
  try {
    x.data<float>();
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("f16") != std::string::npos);
    CHECK(std::string(e.what()).find("f32") != std::string::npos);
  }
}

TEST_CASE("item, clone and empty tensors") {
  Tensor s = Tensor::full({1}, 3.0, DType::bf16, Device::cpu());
  CHECK(s.item() == 3.0);
  Tensor a = Tensor::from_vector<int32_t>({3}, {1, 2, 3});
  Tensor b = a.clone();
  b.fill_(7);
  CHECK(a.to_vector<int32_t>() == std::vector<int32_t>{1, 2, 3});
  Tensor e = Tensor::zeros({0, 4}, DType::f32, Device::cpu());
  CHECK(e.numel() == 0);
  CHECK(e.clone().numel() == 0);
}

TEST_CASE("CUDA tensors without a GPU are a device error (exit code 4), never a silent CPU fallback") {
  if (cuda_device_count() > 0) return;  // covered by the gpu suite on GPU machines
  Tensor x = Tensor::zeros({2}, DType::f32, Device::cpu());
  try {
    x.to(Device::cuda(0));
    FAIL("expected a device error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::device);
    CHECK(e.exit_code() == 4);
  }
}
