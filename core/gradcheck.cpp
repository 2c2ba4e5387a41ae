#include "core/gradcheck.h"

#include <cmath>
#include <sstream>

#include "core/autograd.h"
#include "core/rng.h"

namespace seg {

namespace {
double weighted_sum(const Tensor& y, const Tensor& r) {
  const Tensor yc = y.to(DType::f64).contiguous();
  const double* py = yc.data<double>();
  const double* pr = r.data<double>();
  double s = 0;
  for (int64_t i = 0; i < yc.numel(); ++i) s += py[i] * pr[i];
  return s;
}
}  // namespace

GradCheckResult gradcheck(const GradCheckFn& fn, std::vector<Tensor> inputs, const GradCheckOptions& opt) {
  GradCheckResult res;
  PhiloxStream rng(opt.seed, RngPurpose::test);
  // Fresh leaves that require grad, so the check owns its graph.
  for (Tensor& t : inputs) {
    t = t.contiguous().clone();
    if (t.dtype() == DType::f64) t.set_requires_grad(true);
  }
  const Tensor y = fn(inputs);
  SEG_CHECK(y.dtype() == DType::f64, runtime, "gradcheck: the function must return f64, got ", y.str());
  Tensor r = Tensor::empty(y.shape(), DType::f64, Device::cpu());
  for (int64_t i = 0; i < r.numel(); ++i) r.data<double>()[i] = 2.0 * rng.uniform_f64() - 1.0;
  y.backward(r);

  std::ostringstream report;
  int failures = 0;
  for (size_t k = 0; k < inputs.size(); ++k) {
    Tensor& x = inputs[k];
    if (x.dtype() != DType::f64) continue;
    const Tensor analytic = x.grad().defined() ? x.grad() : Tensor::zeros(x.shape(), DType::f64, Device::cpu());
    const int64_t n = x.numel();
    const int64_t checks = opt.max_checks_per_input > 0 ? std::min(n, opt.max_checks_per_input) : n;
    double* px = x.data<double>();
    NoGradGuard no_grad;
    const double f0 = opt.skip_kinks ? weighted_sum(fn(inputs), r) : 0.0;
    for (int64_t c = 0; c < checks; ++c) {
      const int64_t i = checks == n ? c : static_cast<int64_t>(rng.below(static_cast<uint32_t>(n)));
      const double saved = px[i];
      px[i] = saved + opt.eps;
      const double fp = weighted_sum(fn(inputs), r);
      px[i] = saved - opt.eps;
      const double fm = weighted_sum(fn(inputs), r);
      px[i] = saved;
      const double numeric = (fp - fm) / (2 * opt.eps);
      const double a = analytic.data<double>()[i];
      if (opt.skip_kinks) {
        const double right = (fp - f0) / opt.eps, left = (f0 - fm) / opt.eps;
        if (std::abs(right - left) > 10 * (opt.atol + opt.rtol * std::abs(numeric)) + 1e-4 * std::abs(right + left)) {
          ++res.skipped_kinks;
          continue;
        }
      }
      ++res.checked;
      const double err = std::abs(a - numeric);
      res.max_abs_error = std::max(res.max_abs_error, err);
      if (!(err <= opt.atol + opt.rtol * std::abs(numeric))) {  // also catches NaN
        res.ok = false;
        if (failures++ < 5)
          report << "input " << k << " element " << i << ": analytic " << a << " numeric " << numeric << "\n";
      }
    }
  }
  res.report = report.str();
  return res;
}

}  // namespace seg
