// The CUDA runtime of core/ on cuda:0: the device seam's dispatch, streams, copies, the stream-aware
// caching allocator with freed-block poisoning, the read-back counter, Module::to, checkpoints.
#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>

#include "core/allocator.h"
#include "core/dispatch.h"
#include "core/profiler.h"
#include "core/stream.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/launch_error.h"
#include "layers/batchnorm.h"
#include "layers/conv2d.h"
#include "tests/common/compare_tensor.h"
#include "tests/cuda/cuda_backend_util.h"

using namespace seg;
using seg::test::cuda0;

// A launcher defined by this test, with the shape of a real one (device pointer, size, trailing
// stream): fills n elements with the byte pattern `byte` on the stream it is given, and remembers
// that stream. kind 1 makes it fail as a launch does.
namespace seg::cuda {
Stream g_last_stream = nullptr;
template <class T>
void test_fill_bytes(T* p, int64_t n, int byte, int kind, Stream stream) {
  g_last_stream = stream;
  if (kind == 1) throw LaunchError("CUDA launch of test_fill_kernel at tests/cuda/test_runtime.cpp:1 failed: planted");
  REQUIRE(cudaMemsetAsync(p, byte, static_cast<size_t>(n) * sizeof(T), stream) == cudaSuccess);
}
}  // namespace seg::cuda
namespace seg::cpu {
template <class T>
void test_fill_bytes(T* p, int64_t n, int byte, int) {
  std::memset(p, byte, static_cast<size_t>(n) * sizeof(T));
}
}  // namespace seg::cpu

namespace {
void fill_op(Tensor& t, int byte, int kind = 0) {
  SEG_DISPATCH_DEVICE("test_fill", t, (DType::f32, DType::f64, DType::i32), (DType::f32, DType::i32),
                      [&](auto dev, auto tag) {
                        using T = SEG_TYPE(tag);
                        SEG_KERNEL(dev, test_fill_bytes<T>)(t.data<T>(), t.numel(), byte, kind);
                      });
}
std::string message_of(const std::function<void()>& fn, ErrorKind* kind = nullptr) {
  try {
    fn();
  } catch (const Error& e) {
    if (kind) *kind = e.kind();
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("the device seam: a CUDA tensor reaches the CUDA launcher with the device's current stream") {
  Tensor d = Tensor::empty({5, 7}, DType::i32, cuda0());
  fill_op(d, 0x01);
  CHECK(seg::cuda::g_last_stream == current_stream(cuda0()));
  CHECK(seg::cuda::g_last_stream != nullptr);  // a stream of our own, not the legacy default stream
  for (int32_t v : d.to_vector<int32_t>()) CHECK(v == 0x01010101);
  Tensor h = Tensor::empty({5, 7}, DType::i32, Device::cpu());
  fill_op(h, 0x02);
  for (int32_t v : h.to_vector<int32_t>()) CHECK(v == 0x02020202);
}

TEST_CASE("the device seam: f64 and unlisted dtypes on CUDA are the op/dtype/device error; a failed launch names the op") {
  Tensor d64 = Tensor::empty({3}, DType::f64, cuda0());
  ErrorKind kind{};
  std::string m = message_of([&] { fill_op(d64, 0); }, &kind);
  CHECK(kind == ErrorKind::device);
  CHECK(m.find("op 'test_fill' is not implemented for dtype f64 on cuda:0") != std::string::npos);
  Tensor d = Tensor::empty({3}, DType::f32, cuda0());
  m = message_of([&] { fill_op(d, 0, 1); }, &kind);
  CHECK(kind == ErrorKind::device);
  CHECK(m.find("op 'test_fill' on cuda:0: a CUDA kernel launch failed") != std::string::npos);
  CHECK(m.find("test_fill_kernel") != std::string::npos);
}

TEST_CASE("multi-input ops name the op and both devices when inputs are on different devices") {
  const Tensor a = Tensor::zeros({2, 3}, DType::f32, Device::cpu());
  const Tensor b = Tensor::zeros({2, 3}, DType::f32, cuda0());
  ErrorKind kind{};
  const std::string m = message_of([&] { check_same_device("add", {&a, &b}); }, &kind);
  CHECK(kind == ErrorKind::device);
  CHECK(m.find("add: tensors on different devices, cpu and cuda:0") != std::string::npos);
}

TEST_CASE("copies: host <-> device round trips keep every bit; conversions and host-side gathers around a plain copy") {
  Tensor x = Tensor::empty({3, 4, 5}, DType::f32, Device::cpu());
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = 0.37f * static_cast<float>(i) - 9.5f;
  for (DType dt : {DType::f32, DType::f16, DType::bf16, DType::f64, DType::i32, DType::u8, DType::i64}) {
    CAPTURE(dtype_name(dt));
    const Tensor h = x.to(dt);
    const Tensor back = h.to(cuda0()).to(Device::cpu());
    REQUIRE(back.device() == Device::cpu());
    CHECK(std::memcmp(back.data_ptr(), h.data_ptr(), h.nbytes()) == 0);
  }
  // A converting host-to-device copy equals the host conversion, bit for bit.
  const Tensor d16 = Tensor::empty(x.shape(), DType::f16, cuda0());
  Tensor(d16).copy_(x);
  const Tensor want = x.to(DType::f16);
  CHECK(std::memcmp(d16.to(Device::cpu()).data_ptr(), want.data_ptr(), want.nbytes()) == 0);
  // A non-contiguous host source (a channel slice) and a non-contiguous host destination.
  const Tensor slice = x.channels(1, 4);
  const Tensor d = slice.to(cuda0());
  CHECK(d.is_contiguous());
  SEG_CHECK_CLOSE(d, slice, test::Tolerance{0, 0});
  Tensor host_wide = Tensor::zeros({3, 4, 8}, DType::f32, Device::cpu());
  host_wide.channels(2, 5).copy_(d);
  SEG_CHECK_CLOSE(host_wide.channels(2, 5), slice, test::Tolerance{0, 0});
  CHECK(host_wide.channels(0, 2).to_vector<float>() == std::vector<float>(24, 0.0f));
  // Device to device.
  const Tensor dd = d.clone();
  CHECK(dd.device() == cuda0());
  SEG_CHECK_CLOSE(dd, slice, test::Tolerance{0, 0});
}

TEST_CASE("fill_ and zeros on the device") {
  Tensor t = Tensor::full({17, 3}, -2.5, DType::bf16, cuda0());
  for (float v : t.to(DType::f32).to_vector<float>()) CHECK(v == -2.5f);
  const Tensor z = Tensor::zeros({5}, DType::f32, cuda0());
  CHECK(z.to_vector<float>() == std::vector<float>(5, 0.0f));
}

TEST_CASE("every device-to-host copy is counted (the one-read-back-per-step test counts with it)") {
  const Tensor t = Tensor::full({}, 3.0, DType::f32, cuda0());
  const uint64_t before = device_to_host_copies();
  CHECK(t.item() == 3.0);
  CHECK(device_to_host_copies() == before + 1);
  const Tensor h = Tensor::full({4}, 1.0, DType::f32, Device::cpu());
  (void)h.to(cuda0());  // host to device: not a read-back
  CHECK(device_to_host_copies() == before + 1);
}

TEST_CASE("the caching allocator: blocks are reused on their own stream, not by another stream") {
  Allocator& a = allocator_for(cuda0());
  { Tensor t = Tensor::empty({1 << 16}, DType::f32, cuda0()); }
  AllocatorStats s0 = a.stats();
  { Tensor t = Tensor::empty({1 << 16}, DType::f32, cuda0()); }
  CHECK(a.stats().system_allocs == s0.system_allocs);  // same stream: reused at once
  {
    StreamGuard on_copy(cuda0(), copy_stream(cuda0()));
    CHECK(current_stream(cuda0()) == copy_stream(cuda0()));
    Tensor t = Tensor::empty({1 << 16}, DType::f32, cuda0());  // the compute stream's block is not handed out
    CHECK(a.stats().system_allocs == s0.system_allocs + 1);
  }
  CHECK(current_stream(cuda0()) != copy_stream(cuda0()));
  // A block another stream used goes back only through an event; once that stream is idle it is reused.
  s0 = a.stats();
  {
    Tensor t = Tensor::empty({1 << 15}, DType::f32, cuda0());
    t.record_stream(copy_stream(cuda0()));
  }
  REQUIRE(cudaStreamSynchronize(copy_stream(cuda0())) == cudaSuccess);
  { Tensor t = Tensor::empty({1 << 15}, DType::f32, cuda0()); }
  CHECK(a.stats().system_allocs == s0.system_allocs + 1);  // the first of the two only
}

TEST_CASE("poison mode: a freed block comes back as NaN bytes, so a read of stale memory shows") {
  if (!test::simulated() && !cuda_poison_freed()) set_cuda_poison_freed(true);
  REQUIRE(cuda_poison_freed());  // the sim suite runs with SEG_CUDA_POISON_FREED=1
  void* first = nullptr;
  {
    Tensor t = Tensor::full({777}, 1.5, DType::f32, cuda0());
    first = t.data_ptr();
  }
  const Tensor again = Tensor::empty({777}, DType::f32, cuda0());
  REQUIRE(again.data_ptr() == first);  // the same block, from the cache
  for (float v : again.to_vector<float>()) CHECK(std::isnan(v));
}

// The planted bug of issue 13 that the simulator's pointer checks cannot see: a kernel reads a tensor's
// block through a pointer kept after the tensor was freed. The caching allocator never cudaFree's the
// block, so it is live memory to the simulator and the kernel runs without a fault. Without poisoning
// the block still holds the freed tensor's values and the result looks right (the bug hides until the
// block is handed out again); with SEG_CUDA_POISON_FREED the read returns NaN and the results show it.
namespace {
std::vector<float> scale_stale_block(bool poison) {
  const bool before = cuda_poison_freed();
  set_cuda_poison_freed(poison);
  const int64_t n = 1000;
  Tensor y = Tensor::empty({n}, DType::f32, cuda0());  // allocated first, so it cannot take x's block
  const float* stale = nullptr;
  {
    const Tensor x = Tensor::full({n}, 1.5, DType::f32, cuda0());
    stale = static_cast<const float*>(x.data_ptr());
  }  // BUG: x is freed here, its block goes back to the allocator's cache
  cuda::scale<float>(stale, 2.0, static_cast<float*>(y.data_ptr()), n, current_stream(cuda0()));
  std::vector<float> out = y.to_vector<float>();
  set_cuda_poison_freed(before);
  return out;
}
}  // namespace

TEST_CASE("planted bug: a use after free through the caching allocator shows as NaN only in poison mode") {
  const std::vector<double> want(1000, 3.0);
  // Poison off: no fault, and every element equals the freed tensor's value times 2: undetectable.
  CHECK(test::compare(scale_stale_block(false), want, test::Tolerance{0, 0}).mismatches == 0);
  // Poison on (the sim suites' setting): every element is NaN, a mismatch for the comparison helper.
  const std::vector<float> poisoned = scale_stale_block(true);
  CHECK(test::compare(poisoned, want, test::Tolerance{0, 0}).mismatches == 1000);
  for (float v : poisoned) CHECK(std::isnan(v));
}

TEST_CASE("out of device memory names the op, the request and what is in use, and suggests what to do") {
  prof::Scope scope("conv2d", "forward", [] { return nlohmann::json(); });
  ErrorKind kind{};
  const std::string m = message_of([&] { (void)Tensor::empty({int64_t{1} << 40}, DType::f32, cuda0()); }, &kind);
  CHECK(kind == ErrorKind::device);
  CHECK(m.find("out of memory on cuda:0 in op 'conv2d' (forward): allocating 4194304.0 MiB") != std::string::npos);
  CHECK(m.find("in use by tensors") != std::string::npos);
  CHECK(m.find("--amp O2") != std::string::npos);
}

TEST_CASE("pinned host tensors are copied to the device asynchronously and kept until the copy is done") {
  REQUIRE(pinned_host_memory_available());
  Tensor p = Tensor::empty_pinned({3, 7}, DType::f32);
  CHECK(is_pinned_host_pointer(p.data_ptr()));
  for (int i = 0; i < 21; ++i) p.data<float>()[i] = 0.25f * static_cast<float>(i) - 2.0f;
  const Tensor d = p.to(cuda0());
  const Tensor back = d.to(Device::cpu());
  CHECK(std::memcmp(back.data_ptr(), p.data_ptr(), p.nbytes()) == 0);
}

TEST_CASE("Module::to moves parameters and buffers in place; BatchNorm's counter stays on the host") {
  BatchNorm2d bn(6);
  Conv2d conv(3, 6, 3, 1, 1, 1, 1, true, DType::f32);
  conv.weight.fill_(0.5);
  const Tensor w_handle = conv.weight;  // a handle taken before, as an optimizer holds it
  conv.to(cuda0());
  bn.to(cuda0());
  CHECK(conv.device() == cuda0());
  CHECK(w_handle.device() == cuda0());
  CHECK(w_handle.same(conv.weight));
  CHECK(w_handle.requires_grad());
  for (float v : w_handle.to_vector<float>()) CHECK(v == 0.5f);
  CHECK(bn.running_var.device() == cuda0());
  CHECK(bn.num_batches_tracked.device() == Device::cpu());
  conv.to(Device::cpu());
  CHECK(conv.weight.device() == Device::cpu());
}
