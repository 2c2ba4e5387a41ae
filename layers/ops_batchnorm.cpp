// batch_norm: PyTorch's F.batch_norm on [N,H,W,C] (math in kernels/cpu/batchnorm.h).
//
// Parameters and statistics stay in f32 (f64 for f64 activations) whatever the activation dtype:
// that is the mixed-precision rule "BN statistics in fp32" (DESIGN decision 7).
// The optional reducer turns this into SyncBN: it all-reduces (sum, sumsq, count) in forward and
// (sum dy, sum dy*xhat) in backward, so every rank normalises with the global batch statistics.
#include <cmath>
#include <vector>

#include "core/autograd.h"
#include "kernels/cpu/batchnorm.h"
#include "layers/ops.h"

namespace seg::ops {

namespace {
DType param_dtype_for(DType x) { return x == DType::f64 ? DType::f64 : DType::f32; }

template <class A>
std::vector<A> to_vec(const std::vector<double>& v) {
  return std::vector<A>(v.begin(), v.end());
}
}  // namespace

Tensor batch_norm(const Tensor& x_in, const Tensor& gamma, const Tensor& beta, Tensor& running_mean,
                  Tensor& running_var, const BatchNormOptions& opt) {
  const char* op = "batch_norm";
  require_cpu(op, x_in);
  if (is_half(gamma.dtype())) {
    // Pure-half models (O3): compute with f32 copies of the parameters and statistics, then round
    // the updated statistics back into the half buffers. Gradients reach gamma/beta through cast.
    Tensor rm = running_mean.to(DType::f32), rv = running_var.to(DType::f32);
    Tensor y = batch_norm(x_in, cast(gamma, DType::f32), cast(beta, DType::f32), rm, rv, opt);
    running_mean.copy_(rm);
    running_var.copy_(rv);
    return y;
  }
  SEG_CHECK(x_in.dim() >= 2, runtime, op, ": input must be [..., C], got ", x_in.str());
  const int64_t C = x_in.size(-1), P = x_in.numel() / C;
  const DType pdt = param_dtype_for(x_in.dtype());
  for (const Tensor* t : {&gamma, &beta, static_cast<const Tensor*>(&running_mean), static_cast<const Tensor*>(&running_var)}) {
    SEG_CHECK(t->defined() && t->dim() == 1 && t->size(0) == C, runtime, op, ": parameter/statistic ",
              t->defined() ? t->str() : "undefined", " for ", C, " channels");
    check_dtype(*t, pdt, op, "parameters and statistics");
  }
  const Tensor x = x_in.contiguous();
  SEG_PROFILE(op, "forward", {{"x", prof_tensor(x)}, {"training", opt.training}});
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  Tensor mean_t = Tensor::empty({C}, pdt), invstd_t = Tensor::empty({C}, pdt);

  SEG_DISPATCH(op, x.dtype(), x.device(), (DType::f32, DType::f64, DType::f16, DType::bf16), [&](auto tag) {
    using T = SEG_TYPE(tag);
    using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
    A* mean = mean_t.data<A>();
    A* invstd = invstd_t.data<A>();
    if (opt.training) {
      std::vector<double> mu(static_cast<size_t>(C)), m2(static_cast<size_t>(C));
      cpu::bn_channel_moments<T>(x.data<T>(), P, C, mu.data(), m2.data());
      double M = static_cast<double>(P);
      if (opt.reducer) {
        // SyncBN in two small all-reduces that keep the precision of the local moments:
        // (1) sums n*mean and the count -> the global mean; (2) each rank's squared deviations from
        // the global mean, M2_r + n_r*(mean_r - mean)^2 -> the global M2.
        std::vector<double> first(static_cast<size_t>(C + 1));
        for (int64_t c = 0; c < C; ++c) first[c] = mu[c] * static_cast<double>(P);
        first[static_cast<size_t>(C)] = static_cast<double>(P);
        opt.reducer->allreduce_sum(first);
        M = first[static_cast<size_t>(C)];
        std::vector<double> second(static_cast<size_t>(C));
        for (int64_t c = 0; c < C; ++c) {
          const double global = first[c] / M, d = mu[c] - global;
          second[c] = m2[c] + static_cast<double>(P) * d * d;
          mu[c] = global;
        }
        opt.reducer->allreduce_sum(second);
        m2 = second;
      }
      if (!(M > 1))
        throw Error(ErrorKind::usage, str(op, ": training needs more than one value per channel, got input ", x.str()))
            .op(op)
            .hint("a 1x1 feature map (PPM's pool scale 1, or a tiny image) needs TRAIN.batch_size_per_gpu >= 2");
      A* rm = running_mean.data<A>();
      A* rv = running_var.data<A>();
      for (int64_t c = 0; c < C; ++c) {
        const double var = m2[c] / M;
        mean[c] = static_cast<A>(mu[c]);
        invstd[c] = static_cast<A>(1.0 / std::sqrt(var + opt.eps));
        rm[c] = static_cast<A>((1.0 - opt.momentum) * rm[c] + opt.momentum * mu[c]);
        rv[c] = static_cast<A>((1.0 - opt.momentum) * rv[c] + opt.momentum * var * M / (M - 1.0));
      }
    } else {
      const A* rm = running_mean.data<A>();
      const A* rv = running_var.data<A>();
      for (int64_t c = 0; c < C; ++c) {
        mean[c] = rm[c];
        invstd[c] = static_cast<A>(1.0 / std::sqrt(static_cast<double>(rv[c]) + opt.eps));
      }
    }
    std::vector<A> scale(static_cast<size_t>(C));
    const A* g = gamma.data<A>();
    for (int64_t c = 0; c < C; ++c) scale[c] = g[c] * invstd[c];
    cpu::bn_apply<T, A>(x.data<T>(), P, C, mean, scale.data(), beta.data<A>(), y.data<T>());
  });

  record(op, {x_in, gamma, beta}, {y},
         [x, gamma = gamma.detach(), mean_t, invstd_t, training = opt.training, reducer = opt.reducer, P,
          C](const std::vector<Tensor>& grads) {
           SEG_PROFILE("batch_norm", "backward", {{"x", prof_tensor(x)}, {"training", training}});
           const Tensor dy = grads[0].contiguous();
           Tensor dx = Tensor::empty(x.shape(), x.dtype(), x.device());
           Tensor dgamma = Tensor::empty({C}, gamma.dtype()), dbeta = Tensor::empty({C}, gamma.dtype());
           SEG_DISPATCH("batch_norm", x.dtype(), x.device(), (DType::f32, DType::f64, DType::f16, DType::bf16),
                        [&](auto tag) {
                          using T = SEG_TYPE(tag);
                          using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
                          const A* mean = mean_t.data<A>();
                          const A* invstd = invstd_t.data<A>();
                          const A* g = gamma.data<A>();
                          std::vector<double> sums(static_cast<size_t>(2 * C + 1));
                          cpu::bn_backward_sums<T, A>(x.data<T>(), dy.data<T>(), P, C, mean, invstd, sums.data(),
                                                      sums.data() + C);
                          // dgamma/dbeta are this rank's parameter gradients (all-reduced later with
                          // the other gradients); dx needs the global sums.
                          for (int64_t c = 0; c < C; ++c) {
                            dbeta.data<A>()[c] = static_cast<A>(sums[c]);
                            dgamma.data<A>()[c] = static_cast<A>(sums[C + c]);
                          }
                          sums[static_cast<size_t>(2 * C)] = static_cast<double>(P);
                          if (training && reducer) reducer->allreduce_sum(sums);
                          const double M = sums[static_cast<size_t>(2 * C)];
                          std::vector<A> k1(static_cast<size_t>(C)), k2(static_cast<size_t>(C), 0),
                              k3(static_cast<size_t>(C), 0);
                          for (int64_t c = 0; c < C; ++c) {
                            k1[c] = g[c] * invstd[c];
                            if (training) {
                              const double sdy = sums[c], sdyx = sums[C + c];
                              k2[c] = static_cast<A>(-static_cast<double>(k1[c]) * invstd[c] * sdyx / M);
                              k3[c] = static_cast<A>(-static_cast<double>(k1[c]) * sdy / M);
                            }
                          }
                          cpu::bn_backward_dx<T, A>(x.data<T>(), dy.data<T>(), P, C, mean, k1.data(), k2.data(), k3.data(),
                                                    dx.data<T>());
                        });
           return std::vector<Tensor>{dx, dgamma, dbeta};
         });
  return y;
}

}  // namespace seg::ops
