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
//
// The per-channel steps between the passes (finalize, backward coefficients) and the fused
// activation of BN+ReLU(6) are kernels/common/batchnorm_math.h, shared with the CUDA kernels; the
// functions below that take C and per-channel arrays apply them channel by channel. The CUDA twins
// (kernels/cuda/batchnorm.h) have the same names and arguments plus scratch and a stream.
#pragma once

#include <cstdint>

#include "kernels/common/batchnorm_math.h"

namespace seg::cpu {

using ::seg::BnActivation;

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

// mean/invstd/scale (and, in train mode, the running statistics) from the moments of M values per
// channel (kernels/common/batchnorm_math.h). In eval mode mean_in and m2_in are not read (may be null).
template <class A>
void bn_finalize(const double* mean_in, const double* m2_in, int64_t C, double M, bool training, double momentum,
                 double eps, const A* gamma, A* running_mean, A* running_var, A* mean, A* invstd, A* scale);

// SyncBN between bn_channel_moments and bn_finalize, in two all-reduces that keep the precision of
// the local moments (the op layer's reducer sums the buffers over ranks in between):
//   bn_sync_first:  sums[c] = mean[c]*P                     (all-reduce sums; the counts give M)
//   bn_sync_second: global = sums[c]/M; m2[c] += P*(mean[c] - global)^2; mean[c] = global
//                                                           (all-reduce m2: the global M2)
void bn_sync_first(const double* mean, int64_t P, int64_t C, double* sums);
void bn_sync_second(const double* sums, double M, int64_t P, int64_t C, double* mean, double* m2);

// k1, k2, k3 of bn_backward_dx from the (possibly all-reduced) sums.
template <class A>
void bn_backward_coefficients(const double* sum_dy, const double* sum_dy_xhat, int64_t C, double M, bool training,
                              const A* gamma, const A* invstd, A* k1, A* k2, A* k3);

// dbeta = sum_dy, dgamma = sum_dy_xhat, rounded to A (this rank's parameter gradients).
template <class A> void bn_param_grads(const double* sum_dy, const double* sum_dy_xhat, int64_t C, A* dgamma, A* dbeta);

// BN fused with the activation that follows it in the model (BN+ReLU in ResNet, PPM and the C1
// heads, BN+ReLU6 in MobileNetV2): y = act((x - mean)*scale + beta). The backward of the pair runs
// the BN backward on dy masked by the activation's gradient: dy' = act passes at y ? dy : 0. y is
// not read: the mask is decided on v = (x - mean)*scale + beta, recomputed from the forward's mean,
// scale and beta with the forward's expression (bn_affine), against the bounds where rounding to T
// puts 0 and 6 (bn_pass_bounds), which gives the same mask bit for bit; so each backward pass reads
// x and dy, as the unfused BatchNorm's do. With act = none they are bn_apply, bn_backward_sums,
// bn_backward_dx (scale and beta are then not read and may be null).
template <class T, class A>
void bn_apply_act(const T* x, int64_t P, int64_t C, const A* mean, const A* scale, const A* beta, BnActivation act,
                  T* y);
template <class T, class A>
void bn_backward_sums_act(const T* x, const T* dy, int64_t P, int64_t C, const A* mean, const A* invstd, const A* scale,
                          const A* beta, BnActivation act, double* sum_dy, double* sum_dy_xhat);
template <class T, class A>
void bn_backward_dx_act(const T* x, const T* dy, int64_t P, int64_t C, const A* mean, const A* scale, const A* beta,
                        const A* k1, const A* k2, const A* k3, BnActivation act, T* dx);

// Reference forward (train or eval) in double, written straight from the definition.
template <class T, class A>
void bn_forward_ref(const T* x, int64_t P, int64_t C, const A* gamma, const A* beta, const A* mean_in,
                    const A* var_in, bool train, double eps, T* y, double* mean_out, double* var_out);

}  // namespace seg::cpu
