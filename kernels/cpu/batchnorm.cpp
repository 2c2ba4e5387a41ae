#include "kernels/cpu/batchnorm.h"

#include <cmath>
#include <vector>

#include "kernels/common/half.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/thread_pool.h"

namespace seg::cpu {

namespace {
constexpr int64_t kPixelChunk = 512;  // fixed: partial results are combined in chunk order

// Per-chunk per-channel partial sums, then an ordered combination. `body(lo, hi, a, b)` adds the
// chunk's contributions into a[C], b[C] (zeroed).
template <class Body>
void channel_reduce(int64_t P, int64_t C, double* out_a, double* out_b, Body body) {
  const int64_t chunks = (P + kPixelChunk - 1) / kPixelChunk;
  std::vector<double> part(static_cast<size_t>(chunks * 2 * C), 0.0);
  parallel_for(0, chunks, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t k = c0; k < c1; ++k) {
      double* a = part.data() + k * 2 * C;
      body(k * kPixelChunk, std::min(P, (k + 1) * kPixelChunk), a, a + C);
    }
  });
  for (int64_t c = 0; c < C; ++c) out_a[c] = out_b[c] = 0.0;
  for (int64_t k = 0; k < chunks; ++k) {
    const double* a = part.data() + k * 2 * C;
    for (int64_t c = 0; c < C; ++c) {
      out_a[c] += a[c];
      out_b[c] += a[C + c];
    }
  }
}
}  // namespace

template <class T>
void bn_channel_moments(const T* x, int64_t P, int64_t C, double* mean, double* m2) {
  // Each chunk: its own mean (pass 1) and squared deviations from it (pass 2, cache-hot), both
  // summed in double whatever the storage, as PyTorch's CPU batch_norm does: a float sum of 512
  // values drifts by ~sqrt(512) float roundings of the partial sum, which made our float32 running
  // mean 80x less accurate than PyTorch's on the model goldens (tests/models/test_model_goldens.cpp).
  // The chunks are merged in a fixed order (Chan et al., below), so results do not depend on threads.
  const int64_t chunks = (P + kPixelChunk - 1) / kPixelChunk;
  std::vector<double> part(static_cast<size_t>(chunks * 2 * C), 0.0);
  parallel_for(0, chunks, 1, [&](int64_t c0, int64_t c1) {
    std::vector<double> s(static_cast<size_t>(C)), d(static_cast<size_t>(C));
    for (int64_t k = c0; k < c1; ++k) {
      const int64_t lo = k * kPixelChunk, hi = std::min(P, (k + 1) * kPixelChunk);
      const double n = static_cast<double>(hi - lo);
      std::fill(s.begin(), s.end(), 0.0);
      std::fill(d.begin(), d.end(), 0.0);
      for (int64_t p = lo; p < hi; ++p)
        for (int64_t c = 0; c < C; ++c) s[c] += static_cast<double>(load(x[p * C + c]));
      double* out = part.data() + k * 2 * C;
      for (int64_t c = 0; c < C; ++c) out[c] = s[c] / n;  // the chunk mean
      for (int64_t p = lo; p < hi; ++p)
        for (int64_t c = 0; c < C; ++c) {
          const double v = static_cast<double>(load(x[p * C + c])) - out[c];
          d[c] += v * v;
        }
      for (int64_t c = 0; c < C; ++c) out[C + c] = d[c];
    }
  });
  // Chan et al.: merging (n_a, mean_a, M2_a) and (n_b, mean_b, M2_b) gives
  //   mean = mean_a + delta*n_b/n,  M2 = M2_a + M2_b + delta^2*n_a*n_b/n,  delta = mean_b - mean_a.
  for (int64_t c = 0; c < C; ++c) mean[c] = m2[c] = 0.0;
  double n = 0;
  for (int64_t k = 0; k < chunks; ++k) {
    const double nb = static_cast<double>(std::min(P, (k + 1) * kPixelChunk) - k * kPixelChunk);
    const double* in = part.data() + k * 2 * C;
    const double total = n + nb;
    for (int64_t c = 0; c < C; ++c) {
      const double delta = in[c] - mean[c];
      mean[c] += delta * nb / total;
      m2[c] += in[C + c] + delta * delta * n * nb / total;
    }
    n = total;
  }
}

template <class T, class A>
void bn_apply(const T* x, int64_t P, int64_t C, const A* mean, const A* scale, const A* beta, T* y) {
  parallel_for(0, P, std::max<int64_t>(1, 16384 / C), [&](int64_t lo, int64_t hi) {
    for (int64_t p = lo; p < hi; ++p) {
      const T* xr = x + p * C;
      T* yr = y + p * C;
      for (int64_t c = 0; c < C; ++c) yr[c] = store<T>(bn_affine<acc_t<T>>(load(xr[c]), mean[c], scale[c], beta[c]));
    }
  });
}

template <class T, class A>
void bn_backward_sums(const T* x, const T* dy, int64_t P, int64_t C, const A* mean, const A* invstd, double* sum_dy,
                      double* sum_dy_xhat) {
  channel_reduce(P, C, sum_dy, sum_dy_xhat, [&](int64_t lo, int64_t hi, double* s, double* s2) {
    std::vector<acc_t<T>> a(static_cast<size_t>(C), 0), b(static_cast<size_t>(C), 0);
    for (int64_t p = lo; p < hi; ++p) {
      const T* xr = x + p * C;
      const T* gr = dy + p * C;
      for (int64_t c = 0; c < C; ++c) {
        const acc_t<T> g = load(gr[c]);
        a[c] += g;
        b[c] += g * static_cast<acc_t<T>>((load(xr[c]) - mean[c]) * invstd[c]);
      }
    }
    for (int64_t c = 0; c < C; ++c) {
      s[c] += static_cast<double>(a[c]);
      s2[c] += static_cast<double>(b[c]);
    }
  });
}

template <class T, class A>
void bn_backward_dx(const T* x, const T* dy, int64_t P, int64_t C, const A* mean, const A* k1, const A* k2, const A* k3,
                    T* dx) {
  parallel_for(0, P, std::max<int64_t>(1, 16384 / C), [&](int64_t lo, int64_t hi) {
    for (int64_t p = lo; p < hi; ++p) {
      const T* xr = x + p * C;
      const T* gr = dy + p * C;
      T* dr = dx + p * C;
      for (int64_t c = 0; c < C; ++c)
        dr[c] = store<T>(static_cast<acc_t<T>>(k1[c] * load(gr[c]) + k2[c] * (load(xr[c]) - mean[c]) + k3[c]));
    }
  });
}

template <class A>
void bn_finalize(const double* mean_in, const double* m2_in, int64_t C, double M, bool training, double momentum,
                 double eps, const A* gamma, A* running_mean, A* running_var, A* mean, A* invstd, A* scale) {
  for (int64_t c = 0; c < C; ++c)
    bn_finalize_channel<A>(training ? mean_in[c] : 0.0, training ? m2_in[c] : 0.0, M, training, momentum, eps,
                           gamma[c], running_mean[c], running_var[c], mean[c], invstd[c], scale[c]);
}

void bn_sync_first(const double* mean, int64_t P, int64_t C, double* sums) {
  for (int64_t c = 0; c < C; ++c) sums[c] = bn_sync_first_channel(mean[c], P);
}

void bn_sync_second(const double* sums, double M, int64_t P, int64_t C, double* mean, double* m2) {
  for (int64_t c = 0; c < C; ++c) bn_sync_second_channel(sums[c], M, P, mean[c], m2[c]);
}

template <class A>
void bn_backward_coefficients(const double* sum_dy, const double* sum_dy_xhat, int64_t C, double M, bool training,
                              const A* gamma, const A* invstd, A* k1, A* k2, A* k3) {
  for (int64_t c = 0; c < C; ++c)
    bn_backward_coefficients_channel<A>(sum_dy[c], sum_dy_xhat[c], M, training, gamma[c], invstd[c], k1[c], k2[c],
                                        k3[c]);
}

template <class A> void bn_param_grads(const double* sum_dy, const double* sum_dy_xhat, int64_t C, A* dgamma, A* dbeta) {
  for (int64_t c = 0; c < C; ++c) {
    dbeta[c] = static_cast<A>(sum_dy[c]);
    dgamma[c] = static_cast<A>(sum_dy_xhat[c]);
  }
}

namespace {
// The fused variants with the activation as a template argument, so that the inner loops stay
// branch-free selects like the unfused ones.

// dy where the activation passed at the forward's output, else 0; the test is on v recomputed from
// x (bn_affine, bn_activation_passes_at: kernels/common/batchnorm_math.h), so y is not read. The
// load of dy is unconditional: `passes ? load(dy) : 0` makes it conditional, which GCC does not
// vectorise (it may not speculate the load), and the fused backward then ran slower than BatchNorm
// and ReLU6 apart.
template <BnActivation Act, class F, class A>
inline F masked_gradient(F x, F dy, A mean, A scale, A beta, BnPassBounds bounds) {
  return bn_activation_passes_at<F>(bn_affine<F>(x, mean, scale, beta), bounds, Act) ? dy : F(0);
}
template <BnActivation Act, class T, class A>
void apply_act_impl(const T* x, int64_t P, int64_t C, const A* mean, const A* scale, const A* beta, T* y) {
  using F = acc_t<T>;
  parallel_for(0, P, std::max<int64_t>(1, 16384 / C), [&](int64_t lo, int64_t hi) {
    for (int64_t p = lo; p < hi; ++p) {
      const T* xr = x + p * C;
      T* yr = y + p * C;
      for (int64_t c = 0; c < C; ++c)
        yr[c] = store<T>(bn_activate<F>(bn_affine<F>(load(xr[c]), mean[c], scale[c], beta[c]), Act));
    }
  });
}

// One pixel row of each backward pass, as functions with restrict-qualified arguments: written
// inline in the parallel lambdas (eight arrays, the bounds behind a captured reference) GCC
// neither proved the arrays apart nor if-converted the mask, and ran the loops scalar with
// branches, 4.5x slower than the loops that read y.
template <BnActivation Act, class T, class A>
void backward_sums_row(const T* __restrict x, const T* __restrict dy, int64_t C, const A* __restrict mean,
                       const A* __restrict invstd, const A* __restrict scale, const A* __restrict beta,
                       acc_t<T>* __restrict a, acc_t<T>* __restrict b) {
  using F = acc_t<T>;
  const BnPassBounds bounds = bn_pass_bounds<T>();
  for (int64_t c = 0; c < C; ++c) {
    const F xv = load(x[c]);
    const F g = masked_gradient<Act, F>(xv, load(dy[c]), mean[c], scale[c], beta[c], bounds);
    a[c] += g;
    b[c] += g * static_cast<F>((xv - mean[c]) * invstd[c]);
  }
}

template <BnActivation Act, class T, class A>
void backward_dx_row(const T* __restrict x, const T* __restrict dy, int64_t C, const A* __restrict mean,
                     const A* __restrict scale, const A* __restrict beta, const A* __restrict k1,
                     const A* __restrict k2, const A* __restrict k3, T* __restrict dx) {
  using F = acc_t<T>;
  const BnPassBounds bounds = bn_pass_bounds<T>();
  for (int64_t c = 0; c < C; ++c) {
    const F xv = load(x[c]);
    const F g = masked_gradient<Act, F>(xv, load(dy[c]), mean[c], scale[c], beta[c], bounds);
    dx[c] = store<T>(static_cast<F>(k1[c] * g + k2[c] * (xv - mean[c]) + k3[c]));
  }
}

template <BnActivation Act, class T, class A>
void backward_sums_act_impl(const T* x, const T* dy, int64_t P, int64_t C, const A* mean, const A* invstd,
                            const A* scale, const A* beta, double* sum_dy, double* sum_dy_xhat) {
  using F = acc_t<T>;
  channel_reduce(P, C, sum_dy, sum_dy_xhat, [&](int64_t lo, int64_t hi, double* s, double* s2) {
    std::vector<F> a(static_cast<size_t>(C), 0), b(static_cast<size_t>(C), 0);
    for (int64_t p = lo; p < hi; ++p)
      backward_sums_row<Act>(x + p * C, dy + p * C, C, mean, invstd, scale, beta, a.data(), b.data());
    for (int64_t c = 0; c < C; ++c) {
      s[c] += static_cast<double>(a[c]);
      s2[c] += static_cast<double>(b[c]);
    }
  });
}

template <BnActivation Act, class T, class A>
void backward_dx_act_impl(const T* x, const T* dy, int64_t P, int64_t C, const A* mean, const A* scale, const A* beta,
                          const A* k1, const A* k2, const A* k3, T* dx) {
  parallel_for(0, P, std::max<int64_t>(1, 16384 / C), [&](int64_t lo, int64_t hi) {
    for (int64_t p = lo; p < hi; ++p)
      backward_dx_row<Act>(x + p * C, dy + p * C, C, mean, scale, beta, k1, k2, k3, dx + p * C);
  });
}
}  // namespace

template <class T, class A>
void bn_apply_act(const T* x, int64_t P, int64_t C, const A* mean, const A* scale, const A* beta, BnActivation act,
                  T* y) {
  switch (act) {
    case BnActivation::none: return bn_apply<T, A>(x, P, C, mean, scale, beta, y);
    case BnActivation::relu: return apply_act_impl<BnActivation::relu>(x, P, C, mean, scale, beta, y);
    case BnActivation::relu6: return apply_act_impl<BnActivation::relu6>(x, P, C, mean, scale, beta, y);
  }
}

template <class T, class A>
void bn_backward_sums_act(const T* x, const T* dy, int64_t P, int64_t C, const A* mean, const A* invstd, const A* scale,
                          const A* beta, BnActivation act, double* sum_dy, double* sum_dy_xhat) {
  switch (act) {
    case BnActivation::none: return bn_backward_sums<T, A>(x, dy, P, C, mean, invstd, sum_dy, sum_dy_xhat);
    case BnActivation::relu:
      return backward_sums_act_impl<BnActivation::relu>(x, dy, P, C, mean, invstd, scale, beta, sum_dy, sum_dy_xhat);
    case BnActivation::relu6:
      return backward_sums_act_impl<BnActivation::relu6>(x, dy, P, C, mean, invstd, scale, beta, sum_dy, sum_dy_xhat);
  }
}

template <class T, class A>
void bn_backward_dx_act(const T* x, const T* dy, int64_t P, int64_t C, const A* mean, const A* scale, const A* beta,
                        const A* k1, const A* k2, const A* k3, BnActivation act, T* dx) {
  switch (act) {
    case BnActivation::none: return bn_backward_dx<T, A>(x, dy, P, C, mean, k1, k2, k3, dx);
    case BnActivation::relu:
      return backward_dx_act_impl<BnActivation::relu>(x, dy, P, C, mean, scale, beta, k1, k2, k3, dx);
    case BnActivation::relu6:
      return backward_dx_act_impl<BnActivation::relu6>(x, dy, P, C, mean, scale, beta, k1, k2, k3, dx);
  }
}

template <class T, class A>
void bn_forward_ref(const T* x, int64_t P, int64_t C, const A* gamma, const A* beta, const A* mean_in,
                    const A* var_in, bool train, double eps, T* y, double* mean_out, double* var_out) {
  for (int64_t c = 0; c < C; ++c) {
    double mean = 0, var = 0;
    if (train) {
      for (int64_t p = 0; p < P; ++p) mean += static_cast<double>(x[p * C + c]);
      mean /= static_cast<double>(P);
      for (int64_t p = 0; p < P; ++p) {
        const double d = static_cast<double>(x[p * C + c]) - mean;
        var += d * d;
      }
      var /= static_cast<double>(P);
    } else {
      mean = static_cast<double>(mean_in[c]);
      var = static_cast<double>(var_in[c]);
    }
    if (mean_out) mean_out[c] = mean;
    if (var_out) var_out[c] = var;
    const double invstd = 1.0 / std::sqrt(var + eps);
    for (int64_t p = 0; p < P; ++p)
      y[p * C + c] = static_cast<T>((static_cast<double>(x[p * C + c]) - mean) * invstd * static_cast<double>(gamma[c]) +
                                    static_cast<double>(beta[c]));
  }
}

#define SEG_INSTANTIATE_BN(T, A)                                                                              \
  template void bn_channel_moments<T>(const T*, int64_t, int64_t, double*, double*);                          \
  template void bn_apply<T, A>(const T*, int64_t, int64_t, const A*, const A*, const A*, T*);                 \
  template void bn_backward_sums<T, A>(const T*, const T*, int64_t, int64_t, const A*, const A*, double*, double*); \
  template void bn_backward_dx<T, A>(const T*, const T*, int64_t, int64_t, const A*, const A*, const A*, const A*, T*); \
  template void bn_apply_act<T, A>(const T*, int64_t, int64_t, const A*, const A*, const A*, BnActivation, T*);    \
  template void bn_backward_sums_act<T, A>(const T*, const T*, int64_t, int64_t, const A*, const A*, const A*,      \
                                           const A*, BnActivation, double*, double*);                                \
  template void bn_backward_dx_act<T, A>(const T*, const T*, int64_t, int64_t, const A*, const A*, const A*,          \
                                         const A*, const A*, const A*, BnActivation, T*);
SEG_INSTANTIATE_BN(float, float)
SEG_INSTANTIATE_BN(double, double)
SEG_INSTANTIATE_BN(f16, float)
SEG_INSTANTIATE_BN(bf16, float)
#define SEG_INSTANTIATE_BN_CHANNEL(A)                                                                          \
  template void bn_finalize<A>(const double*, const double*, int64_t, double, bool, double, double, const A*, A*, A*, \
                               A*, A*, A*);                                                                         \
  template void bn_backward_coefficients<A>(const double*, const double*, int64_t, double, bool, const A*, const A*,  \
                                            A*, A*, A*);                                                            \
  template void bn_param_grads<A>(const double*, const double*, int64_t, A*, A*);
SEG_INSTANTIATE_BN_CHANNEL(float)
SEG_INSTANTIATE_BN_CHANNEL(double)
template void bn_forward_ref<float, float>(const float*, int64_t, int64_t, const float*, const float*, const float*,
                                           const float*, bool, double, float*, double*, double*);
template void bn_forward_ref<double, double>(const double*, int64_t, int64_t, const double*, const double*,
                                             const double*, const double*, bool, double, double*, double*, double*);

}  // namespace seg::cpu
