// batch_norm: PyTorch's F.batch_norm on [N,H,W,C] (math in kernels/cpu/batchnorm.h).
//
// Parameters and statistics stay in f32 (f64 for f64 activations) whatever the activation dtype:
// that is the mixed-precision rule "BN statistics in fp32" (DESIGN decision 7).
// The optional reducer turns this into SyncBN: it all-reduces (sum, sumsq, count) in forward and
// (sum dy, sum dy*xhat) in backward, so every rank normalises with the global batch statistics.
//
// One body for both devices: the kernels are split the same way on the CPU and on CUDA
// (kernels/{cpu,cuda}/batchnorm.h), and every intermediate (moments, mean/invstd/scale, backward sums
// and coefficients) lives on the activations' device, so nothing is read back to the host.
//   forward:  bn_channel_moments -> [SyncBN all-reduce] -> bn_finalize -> bn_apply_act
//   backward: bn_backward_sums_act -> bn_param_grads; [all-reduce] -> bn_backward_coefficients -> bn_backward_dx_act
// The _act kernels with act = none are the plain BatchNorm ones (kernels/cpu/batchnorm.h); with
// relu or relu6 the activation that follows in the model runs inside the same passes.
#include <cmath>
#include <vector>

#include "core/autograd.h"
#include "core/dispatch.h"
#include "kernels/cpu/batchnorm.h"
#ifdef SEG_WITH_CUDA
#include "kernels/cuda/batchnorm.h"
#endif
#include "layers/ops.h"

namespace seg::ops {

namespace {
DType param_dtype_for(DType x) { return x == DType::f64 ? DType::f64 : DType::f32; }

// The name the op is recorded, profiled and reported under (autograd, --ops-json, anomalies,
// --amp-stats, ONNX export): a fused BatchNorm says which activation it carries.
const char* op_name_for(BnActivation act) {
  switch (act) {
    case BnActivation::relu: return "batch_norm_relu";
    case BnActivation::relu6: return "batch_norm_relu6";
    case BnActivation::none: break;
  }
  return "batch_norm";
}

// SyncBN's forward all-reduce in two steps that keep the precision of the local moments, with the
// kernels of both devices (kernels/{cpu,cuda}/batchnorm.h): (1) sums n*mean -> with the global
// count M, the global mean; (2) each rank's squared deviations from the global mean,
// M2_r + n_r*(mean_r - mean)^2 -> the global M2. Everything stays on the activations' device except
// the count (a host number the finalize step needs).
template <class Dev>
double sync_moments(Dev dev, BatchNormReducer& reducer, const Tensor& moments, int64_t C, int64_t P) {
  (void)dev;
  double* mu = moments.data<double>();
  double* m2 = mu + C;
  Tensor first = moments.new_empty({C}, DType::f64);
  SEG_KERNEL(dev, bn_sync_first)(mu, P, C, first.data<double>());
  reducer.allreduce_sum(first);
  const double M = reducer.sum_count(static_cast<double>(P));
  if (!(M > 0)) return M;  // no rank has a value: the caller's "more than one value" error
  SEG_KERNEL(dev, bn_sync_second)(first.data<double>(), M, P, C, mu, m2);
  Tensor second = moments.slice(0, 1, 2);
  reducer.allreduce_sum(second);
  return M;
}
}  // namespace

Tensor batch_norm(const Tensor& x_in, const Tensor& gamma, const Tensor& beta, Tensor& running_mean,
                  Tensor& running_var, const BatchNormOptions& opt) {
  const BnActivation act = opt.act;
  const char* op = op_name_for(act);
  prof::note_parameter(gamma.name());
  check_same_device(op, {&x_in, &gamma, &beta, &running_mean, &running_var});
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
  Tensor y = x.new_empty(x.shape());
  Tensor stats = x.new_empty({3, C}, pdt);  // mean, invstd, scale = gamma * invstd
  Tensor moments = opt.training ? x.new_empty({2, C}, DType::f64) : Tensor();

  double global_count = static_cast<double>(P);  // M: this rank's P, or the ranks' sum under SyncBN
  SEG_DISPATCH_DEVICE(op, x, SEG_CPU_FLOAT_DTYPES, SEG_CUDA_FLOAT_DTYPES, [&](auto dev, auto tag) {
    using T = SEG_TYPE(tag);
    using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
    A* mean = stats.data<A>();
    double* mu = opt.training ? moments.data<double>() : nullptr;
    double* m2 = opt.training ? mu + C : nullptr;
    double M = static_cast<double>(P);
    if (opt.training) {
      // A rank with an empty sub-batch (P = 0) contributes zero sums and no count to SyncBN.
      if (P == 0) moments.zero_();
      else
        SEG_KERNEL_WS(dev, x.new_empty({static_cast<int64_t>(cuda::bn_reduce_workspace_bytes(P, C))}, DType::u8).data_ptr(),
                      bn_channel_moments<T>)(x.data<T>(), P, C, mu, m2);
      if (opt.reducer) M = sync_moments(dev, *opt.reducer, moments, C, P);
      global_count = M;
      if (!(M > 1))
        throw Error(ErrorKind::usage, str(op, ": training needs more than one value per channel, got input ", x.str()))
            .op(op)
            .hint("a 1x1 feature map (PPM's pool scale 1, or a tiny image) needs TRAIN.batch_size_per_gpu >= 2");
    }
    SEG_KERNEL(dev, bn_finalize<A>)(mu, m2, C, M, opt.training, opt.momentum, opt.eps, gamma.data<A>(),
                                    running_mean.data<A>(), running_var.data<A>(), mean, mean + C, mean + 2 * C);
    SEG_KERNEL(dev, bn_apply_act<T, A>)(x.data<T>(), P, C, mean, mean + 2 * C, beta.data<A>(), act, y.data<T>());
  });

  // A fused activation's gradient mask is recomputed from x with the forward's scale (in stats) and
  // beta (kernels/cpu/batchnorm.h), so the closure keeps x, as the plain BatchNorm's does, not y.
  const Tensor beta_saved = act == BnActivation::none ? Tensor() : beta.detach();
  record(op, {x_in, gamma, beta}, {y},
         [op, x, beta = beta_saved, gamma = gamma.detach(), stats, training = opt.training, reducer = opt.reducer, act, P,
          C, global_count](const std::vector<Tensor>& grads) {
           SEG_PROFILE(op, "backward", {{"x", prof_tensor(x)}, {"training", training}});
           const Tensor dy = grads[0].contiguous();
           check_same_device(op, {&x, &dy});
           Tensor dx = x.new_empty(x.shape());
           Tensor dgamma = gamma.new_empty({C}), dbeta = gamma.new_empty({C});
           Tensor sums = x.new_empty({2, C}, DType::f64);  // sum dy, sum dy*xhat
           Tensor k = x.new_empty({3, C}, gamma.dtype());  // dx = k1*dy + k2*(x - mean) + k3
           SEG_DISPATCH_DEVICE(op, x, SEG_CPU_FLOAT_DTYPES, SEG_CUDA_FLOAT_DTYPES, [&](auto dev, auto tag) {
             using T = SEG_TYPE(tag);
             using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
             const A* mean = stats.data<A>();
             const A* invstd = mean + C;
             double* sum_dy = sums.data<double>();
             double* sum_dy_xhat = sum_dy + C;
             const A* scale = mean + 2 * C;
             const A* bp = act == BnActivation::none ? nullptr : beta.data<A>();
             SEG_KERNEL_WS(dev, x.new_empty({static_cast<int64_t>(cuda::bn_reduce_workspace_bytes(P, C))}, DType::u8).data_ptr(),
                           bn_backward_sums_act<T, A>)(x.data<T>(), dy.data<T>(), P, C, mean, invstd, scale, bp, act,
                                                       sum_dy, sum_dy_xhat);
             // dgamma/dbeta are this rank's parameter gradients (all-reduced later with the other
             // gradients); dx needs the global sums.
             SEG_KERNEL(dev, bn_param_grads<A>)(sum_dy, sum_dy_xhat, C, dgamma.data<A>(), dbeta.data<A>());
             // SyncBN: the global sums (both rows of `sums`) and forward's global count.
             if (training && reducer) reducer->allreduce_sum(sums);
             const double M = training && reducer ? global_count : static_cast<double>(P);
             A* k1 = k.data<A>();
             SEG_KERNEL(dev, bn_backward_coefficients<A>)(sum_dy, sum_dy_xhat, C, M, training, gamma.data<A>(), invstd, k1,
                                                          k1 + C, k1 + 2 * C);
             SEG_KERNEL(dev, bn_backward_dx_act<T, A>)(x.data<T>(), dy.data<T>(), P, C, mean, scale, bp, k1, k1 + C,
                                                       k1 + 2 * C, act, dx.data<T>());
           });
           return std::vector<Tensor>{dx, dgamma, dbeta};
         });
  return y;
}

}  // namespace seg::ops
