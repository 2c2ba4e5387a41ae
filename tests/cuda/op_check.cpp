#include "tests/cuda/op_check.h"

#include <doctest/doctest.h>

#include "core/autograd.h"
#include "core/rng.h"
#include "tests/common/compare_tensor.h"
#include "tests/cuda/cuda_backend_util.h"

namespace seg::test {

Tensor random_tensor(const Shape& shape, DType dt, uint64_t seed, double scale, double shift) {
  PhiloxStream rng(seed, RngPurpose::test);
  Tensor t = Tensor::empty(shape, DType::f64, Device::cpu());
  for (int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = shift + scale * rng.normal();
  return t.to(dt);
}

namespace {
struct Run {
  Tensor y;
  std::vector<Tensor> grads;
};

Run run(const OpCase& c, const std::vector<Tensor>& host_inputs, const Tensor& host_dy, Device device) {
  std::vector<Tensor> in;
  for (size_t i = 0; i < host_inputs.size(); ++i) {
    Tensor t = host_inputs[i].to(device).clone();
    if (c.inputs[i].grad) t.set_requires_grad(true);
    in.push_back(t);
  }
  if (c.before) c.before();
  Run r;
  r.y = c.fn(in);
  if (c.backward && host_dy.defined()) {
    r.y.backward(host_dy.to(device));
    for (size_t i = 0; i < in.size(); ++i) r.grads.push_back(c.inputs[i].grad ? in[i].grad() : Tensor());
  }
  return r;
}
}  // namespace

void check_op(const OpCase& c, DType dt, bool all_schedules) {
  CAPTURE(c.name);
  CAPTURE(dtype_name(dt));
  std::vector<Tensor> host;
  uint64_t seed = c.seed * 1000;
  for (const OpInput& in : c.inputs) {
    if (in.fixed.defined()) host.push_back(in.fixed);
    else host.push_back(random_tensor(in.shape, in.dtype == DType::f32 ? dt : in.dtype, ++seed, in.scale, in.shift));
  }
  const Run want = run(c, host, Tensor(), Device::cpu());
  Tensor dy;
  if (c.backward) dy = random_tensor(want.y.shape(), want.y.dtype(), ++seed);
  const Run want_b = run(c, host, dy, Device::cpu());
  for (const Schedule& s : all_schedules ? schedules() : schedule_rr()) {
    CAPTURE(s.name);
    ScopedSchedule scoped(s);
    const Run got = run(c, host, dy, cuda0());
    REQUIRE(got.y.device() == cuda0());
    CHECK(got.y.dtype() == want_b.y.dtype());
    SEG_CHECK_CLOSE(got.y, want_b.y, c.fwd.for_dtype(dt));
    for (size_t i = 0; i < got.grads.size(); ++i) {
      if (!c.inputs[i].grad) continue;
      CAPTURE(i);
      REQUIRE(got.grads[i].defined() == want_b.grads[i].defined());
      if (!got.grads[i].defined()) continue;
      CHECK(got.grads[i].device() == cuda0());
      SEG_CHECK_CLOSE(got.grads[i], want_b.grads[i], c.bwd.for_dtype(dt));
    }
  }
  (void)want;
}

}  // namespace seg::test
