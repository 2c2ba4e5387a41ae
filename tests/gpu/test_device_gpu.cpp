// GPU suite: runs only where a CUDA device exists; elsewhere main() exits 77 (CTest: skipped).
#include <doctest/doctest.h>

#include <cstring>
#include <string>

#include "core/allocator.h"
#include "core/tensor.h"

using namespace seg;

std::string seg_test_skip_reason() {
  if (!cuda_compiled()) return "built without CUDA (-DSEG_CUDA=OFF)";
  if (cuda_device_count() == 0) return "no CUDA device found";
  return "";
}

TEST_CASE("host -> device -> host round trip keeps every bit, in every dtype") {
  Tensor x = Tensor::from_vector<float>({2, 3, 5}, std::vector<float>(30, 0.0f));
  for (int i = 0; i < 30; ++i) x.data<float>()[i] = 0.1f * i - 1.0f;
  for (DType dt : {DType::f32, DType::f16, DType::bf16, DType::f64, DType::i32}) {
    Tensor h = x.to(dt);
    Tensor back = h.to(Device::cuda(0)).to(Device::cpu());
    CHECK(back.device() == Device::cpu());
    CHECK(std::memcmp(back.data_ptr(), h.data_ptr(), h.nbytes()) == 0);
  }
}

TEST_CASE("the CUDA caching allocator reuses blocks") {
  Allocator& a = allocator_for(Device::cuda(0));
  { Tensor t = Tensor::empty({1 << 20}, DType::f32, Device::cuda(0)); }
  const auto before = a.stats();
  { Tensor t = Tensor::empty({1 << 20}, DType::f32, Device::cuda(0)); }
  CHECK(a.stats().system_allocs == before.system_allocs);
}

TEST_CASE("pinned host tensors: page-locked, cached, and copied to the GPU and back bit for bit") {
  REQUIRE(pinned_host_memory_available());
  Tensor p = Tensor::empty_pinned({3, 7}, DType::f32);
  CHECK(is_pinned_host_pointer(p.data_ptr()));
  CHECK_FALSE(is_pinned_host_pointer(Tensor::empty({3, 7}, DType::f32, Device::cpu()).data_ptr()));
  for (int i = 0; i < 21; ++i) p.data<float>()[i] = 0.25f * i - 2.0f;
  const Tensor back = p.to(Device::cuda(0)).to(Device::cpu());
  CHECK(std::memcmp(back.data_ptr(), p.data_ptr(), p.nbytes()) == 0);
  Allocator& a = pinned_host_allocator();
  { Tensor t = Tensor::empty_pinned({1 << 16}); }
  const auto before = a.stats();
  { Tensor t = Tensor::empty_pinned({1 << 16}); }
  CHECK(a.stats().system_allocs == before.system_allocs);
}
