// The tape and the backward engine, tested with tiny ops defined here through record(), so the
// engine is checked independently of the real ops in layers/.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "core/autograd.h"
#include "core/gradcheck.h"
#include "core/rng.h"
#include "tests/common/compare.h"

using namespace seg;

namespace {

Tensor scalar(double v, bool requires_grad = false) {
  Tensor t = Tensor::full(Shape{}, v, DType::f64);
  if (requires_grad) t.set_requires_grad(true);
  return t;
}

// y = a * b elementwise (f64), with a correct backward, or a wrong one (db = dy * a) on demand.
Tensor test_mul(const Tensor& a, const Tensor& b, bool wrong_backward = false) {
  Tensor y = Tensor::empty(a.shape(), DType::f64);
  for (int64_t i = 0; i < a.numel(); ++i) y.data<double>()[i] = a.data<double>()[i] * b.data<double>()[i];
  record("test_mul", {a, b}, {y}, [a = a.detach(), b = b.detach(), wrong_backward](const std::vector<Tensor>& g) {
    Tensor da = Tensor::empty(a.shape(), DType::f64), db = Tensor::empty(a.shape(), DType::f64);
    for (int64_t i = 0; i < a.numel(); ++i) {
      const double dy = g[0].data<double>()[i];
      da.data<double>()[i] = dy * b.data<double>()[i];
      // The deliberate bug: db = dy * b instead of dy * a.
      db.data<double>()[i] = dy * (wrong_backward ? b : a).data<double>()[i];
    }
    return std::vector<Tensor>{da, db};
  });
  return y;
}

Tensor test_add(const Tensor& a, const Tensor& b) {
  Tensor y = Tensor::empty(a.shape(), DType::f64);
  for (int64_t i = 0; i < a.numel(); ++i) y.data<double>()[i] = a.data<double>()[i] + b.data<double>()[i];
  record("test_add", {a, b}, {y}, [](const std::vector<Tensor>& g) { return std::vector<Tensor>{g[0], g[0]}; });
  return y;
}

Tensor test_sin(const Tensor& a) {
  Tensor y = Tensor::empty(a.shape(), DType::f64);
  for (int64_t i = 0; i < a.numel(); ++i) y.data<double>()[i] = std::sin(a.data<double>()[i]);
  record("test_sin", {a}, {y}, [a = a.detach()](const std::vector<Tensor>& g) {
    Tensor da = Tensor::empty(a.shape(), DType::f64);
    for (int64_t i = 0; i < a.numel(); ++i)
      da.data<double>()[i] = g[0].data<double>()[i] * std::cos(a.data<double>()[i]);
    return std::vector<Tensor>{da};
  });
  return y;
}

}  // namespace

TEST_CASE("chain rule through a diamond: gradients meeting at one input are summed") {
  // f(x) = x*x + sin(x): df/dx = 2x + cos(x)
  Tensor x = scalar(0.7, true);
  Tensor y = test_add(test_mul(x, x), test_sin(x));
  CHECK(y.requires_grad());
  CHECK_FALSE(y.is_leaf());
  y.backward();
  SEG_CHECK_CLOSE(x.grad().item(), 2 * 0.7 + std::cos(0.7), seg::test::Tolerance{0, 1e-15});
}

TEST_CASE("parameter gradients accumulate across backward calls until zero_grad") {
  Tensor x = scalar(3.0, true);
  Tensor c = scalar(2.0);
  test_mul(x, c).backward();
  CHECK(x.grad().item() == 2.0);
  test_mul(x, c).backward();
  CHECK(x.grad().item() == 4.0);
  x.zero_grad();
  CHECK_FALSE(x.grad().defined());
  test_mul(x, c).backward();
  CHECK(x.grad().item() == 2.0);
  CHECK_FALSE(c.grad().defined());  // a constant gets no gradient
}

TEST_CASE("a gradient shared by two paths is not corrupted by later in-place accumulation") {
  // add returns the same gradient tensor for both inputs; accumulating into a's grad later must not
  // change b's.
  Tensor a = scalar(1.0, true), b = scalar(1.0, true);
  test_add(a, b).backward();
  test_mul(a, scalar(5.0)).backward();
  CHECK(a.grad().item() == 6.0);
  CHECK(b.grad().item() == 1.0);
}

TEST_CASE("saved tensors are released as soon as backward has used them") {
  Tensor x = scalar(2.0, true);
  std::weak_ptr<Storage> saved;
  Tensor y;
  {
    Tensor tmp = scalar(4.0);
    saved = tmp.impl()->storage;
    y = test_mul(x, tmp);  // the node saves tmp (as a detached view: same storage)
  }
  CHECK_FALSE(saved.expired());  // alive: held by the graph
  y.backward();
  CHECK(saved.expired());  // freed right after test_mul's backward ran
  CHECK_THROWS_AS(y.backward(), Error);  // a second backward through the freed graph is an error
}

TEST_CASE("no-grad guard: nothing is recorded inside") {
  Tensor x = scalar(1.0, true);
  {
    NoGradGuard guard;
    CHECK_FALSE(grad_enabled());
    Tensor y = test_mul(x, x);
    CHECK_FALSE(y.requires_grad());
    CHECK(y.grad_fn() == nullptr);
  }
  CHECK(grad_enabled());
  CHECK(test_mul(x, x).requires_grad());
  CHECK_THROWS_AS(test_mul(scalar(1.0), scalar(2.0)).backward(), Error);  // nothing requires grad
}

TEST_CASE("gradient-ready hooks fire once per backward, after the gradient is complete") {
  Tensor w = scalar(0.5, true);
  std::vector<double> seen;
  w.add_grad_ready_hook([&](const Tensor& p) { seen.push_back(p.grad().item()); });
  // w is used three times: the hook must see the full sum 1 + 2 + 3 = 6 once.
  Tensor y = test_add(test_add(test_mul(w, scalar(1.0)), test_mul(w, scalar(2.0))), test_mul(w, scalar(3.0)));
  y.backward();
  REQUIRE(seen.size() == 1);
  CHECK(seen[0] == 6.0);
}

TEST_CASE("nodes run newest first: a deterministic topological order") {
  Tensor x = scalar(1.0, true);
  std::vector<std::string> order;
  auto traced = [&](const char* name, const Tensor& in) {
    Tensor y = Tensor::full(Shape{}, in.item(), DType::f64);
    record(name, {in}, {y}, [&order, name](const std::vector<Tensor>& g) {
      order.push_back(name);
      return std::vector<Tensor>{g[0]};
    });
    return y;
  };
  Tensor a = traced("a", x);
  Tensor b = traced("b", a);
  Tensor c = traced("c", a);
  test_add(b, c).backward();
  CHECK(order == std::vector<std::string>{"c", "b", "a"});
}

TEST_CASE("the gradient checker passes a correct backward and catches a wrong one") {
  PhiloxStream rng(3, RngPurpose::test);
  Tensor a = Tensor::empty({2, 3}, DType::f64), b = Tensor::empty({2, 3}, DType::f64);
  for (int64_t i = 0; i < 6; ++i) {
    a.data<double>()[i] = rng.normal();
    b.data<double>()[i] = rng.normal();
  }
  const GradCheckResult good =
      gradcheck([](const std::vector<Tensor>& in) { return test_mul(in[0], in[1]); }, {a, b});
  CHECK(good.ok);
  CHECK(good.checked == 12);
  const GradCheckResult bad =
      gradcheck([](const std::vector<Tensor>& in) { return test_mul(in[0], in[1], true); }, {a, b});
  CHECK_FALSE(bad.ok);
  CHECK(bad.report.find("input 1") != std::string::npos);  // the wrong gradient is b's
  CHECK(bad.report.find("input 0") == std::string::npos);
}
