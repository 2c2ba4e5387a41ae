// BatchNorm2d on channels-last activations x [P, C] (P = N*H*W pixels), PyTorch's F.batch_norm.
//
// Train mode (statistics of this batch; SyncBN combines the ranks' moments between the two phases):
//   mean[c] = (1/M) sum_p x[p,c]     M2[c] = sum_p (x[p,c] - mean[c])^2     M = P (or the total over ranks)
//   var = M2/M (biased, to normalise)    invstd = 1/sqrt(var + eps)
// The moments are computed without the cancellation of sumsq/M - mean^2 (which loses f32 precision
// when |mean| >> std): each chunk of pixels gets its own mean and squared deviations, and chunks are
// merged with Chan's parallel formula in double, in a fixed order.
//   y = (x - mean) * invstd * gamma + beta
//   running_mean = (1-m)*running_mean + m*mean
//   running_var  = (1-m)*running_var  + m*var*M/(M-1)   (unbiased)
// Eval mode: mean, var = running_mean, running_var.
//
// Backward (train), with xhat = (x - mean)*invstd and, again, sums over all ranks:
//   dbeta = sum_p dy      dgamma = sum_p dy*xhat
//   dx = gamma*invstd * (dy - dbeta/M - xhat*dgamma/M)      (xhat from x - mean, never x alone)
// Backward (eval): dx = dy*gamma*invstd; dgamma, dbeta as above.
//
// T: storage of x and y (float, double, f16, bf16); A: parameters, statistics and arithmetic
// (float, or double when T is double). Sums accumulate in double over fixed pixel chunks, so the
// result does not depend on the thread count. Memory traffic: train forward reads x twice (sums,
// normalise) and writes y; backward reads x and dy twice and writes dx.
#pragma once

#include <cstdint>

namespace seg::cpu {

// mean[c] and M2[c] = sum (x - mean)^2 over P pixels.
template <class T> void bn_channel_moments(const T* x, int64_t P, int64_t C, double* mean, double* m2);

// y = (x - mean[c])*scale[c] + beta[c], scale = gamma*invstd. Subtracting the mean first keeps the
// precision when |mean| >> std (the folded form x*scale + (beta - mean*scale) cancels two large terms).
template <class T, class A>
void bn_apply(const T* x, int64_t P, int64_t C, const A* mean, const A* scale, const A* beta, T* y);

// sum_dy[c] = sum dy, sum_dy_xhat[c] = sum dy*(x-mean)*invstd.
template <class T, class A>
void bn_backward_sums(const T* x, const T* dy, int64_t P, int64_t C, const A* mean, const A* invstd, double* sum_dy,
                      double* sum_dy_xhat);

// dx = k1[c]*dy + k2[c]*(x - mean[c]) + k3[c], the backward formula expanded per channel:
//   train: k1 = gamma*invstd, k2 = -gamma*invstd^2*dgamma/M, k3 = -k1*dbeta/M
//   eval : k1 = gamma*invstd, k2 = 0, k3 = 0
template <class T, class A>
void bn_backward_dx(const T* x, const T* dy, int64_t P, int64_t C, const A* mean, const A* k1, const A* k2, const A* k3,
                    T* dx);

// Reference forward (train or eval) in double, written straight from the definition.
template <class T, class A>
void bn_forward_ref(const T* x, int64_t P, int64_t C, const A* gamma, const A* beta, const A* mean_in,
                    const A* var_in, bool train, double eps, T* y, double* mean_out, double* var_out);

}  // namespace seg::cpu
