// BatchNorm2d on the GPU, channels-last x [P, C] (P = N*H*W pixels): the twins of
// kernels/cpu/batchnorm.h with the same split, so the op layer keeps one body:
//   bn_channel_moments -> [SyncBN: bn_sync_first, all-reduce, bn_sync_second, all-reduce]
//                      -> bn_finalize -> bn_apply[_act]
//   bn_backward_sums[_act] -> (all-reduce) -> bn_backward_coefficients -> bn_backward_dx[_act]
//                          \-> bn_param_grads (this rank's dgamma, dbeta)
// Same names and arguments as the CPU functions, plus the scratch of the two reductions (workspace,
// bn_reduce_workspace_bytes(P, C) bytes, 8-byte aligned, contents undefined on entry) and the stream.
// Math: kernels/cpu/batchnorm.h and kernels/common/batchnorm_math.h (finalize, coefficients and the
// activation are the very functions the CPU calls). Statistics (double), parameters (A = float) and
// outputs stay on the device; nothing synchronises or allocates. T in {float, f16, bf16}.
//
// Moments: each block takes a chunk of L pixels (chunks = min(ceil(P/256), 1024), L = ceil(P/chunks),
// so a function of P only) and a tile of channels; a thread owns V channels (V = 4 floats / 8 halves,
// a 16-byte load, when C % V == 0 and x is 16-byte aligned; else 1) and every R-th pixel of the chunk
// (R = 256 / channel packs per block), and runs Welford's update in f32 on x - pivot (pivot: the
// chunk's first value of the channel, so the f32 running mean stays small whatever |mean|). The R
// rows of the block are merged in double with Chan's formula in row order by the threads of row 0,
// giving the chunk's (mean, M2) in double; a second kernel merges the chunks in chunk order (a
// thread per channel and chunk stripe, then the 8 stripes in order). The result depends only on P,
// C, V and the data: bit-identical from run to run (DESIGN 11).
//   n = n_a + n_b, delta = mean_b - mean_a, mean = mean_a + delta*n_b/n, M2 = M2_a + M2_b + delta^2*n_a*n_b/n
// Backward sums: the same two-level layout with plain sums (f32 within a thread, double across rows
// and chunks) of dy' and dy'*xhat, xhat = (x - mean)*invstd, dy' = dy masked by the activation
// (decided on v = (x - mean)*scale + beta recomputed, against bn_pass_bounds: kernels/cpu/batchnorm.h).
// Apply and dx: grid-stride loops over (pixel, channel pack), 16-byte accesses when C % V == 0 and
// x, y/dy, dx and the per-channel arrays are 16-byte aligned; the per-channel values come from L1.
// Finalize, SyncBN steps, coefficients, param grads: one thread per channel.
//
// Launch: moments/sums partial kernel grid (chunks, channel tiles) x 256 threads; merge kernel
// grid ceil(C/32) x (32, 8) threads; element-wise kernels 256 threads, grid_for() blocks.
// Memory traffic: moments read x once; apply reads x, writes y; backward sums read x, dy; dx reads
// x, dy, writes dx (the _act variants too: their mask is recomputed from x, not read from y). The
// partials are chunks*C*16 bytes (<= 1/16 of x in f32 for P >= 4096), read once by the merge.
//
// Atomics (DESIGN 11): the reductions could add each block's partial into the C results with
// atomicAdd (double atomics, or f32 sums), skipping the merge kernel and the workspace; they do not,
// because the order of the additions would then change from run to run and so would the bits, and a
// Welford/Chan merge is not a single atomic operation anyway.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/common/batchnorm_math.h"
#include "kernels/cuda/stream.h"

namespace seg::cuda {

using ::seg::BnActivation;

// Bytes of scratch bn_channel_moments and bn_backward_sums[_act] need for P pixels of C channels.
size_t bn_reduce_workspace_bytes(int64_t P, int64_t C);

template <class T>
void bn_channel_moments(const T* x, int64_t P, int64_t C, double* mean, double* m2, void* workspace, Stream stream);

// SyncBN's steps between the two all-reduces of device buffers (kernels/cpu/batchnorm.h).
void bn_sync_first(const double* mean, int64_t P, int64_t C, double* sums, Stream stream);
void bn_sync_second(const double* sums, double M, int64_t P, int64_t C, double* mean, double* m2, Stream stream);

template <class A>
void bn_finalize(const double* mean_in, const double* m2_in, int64_t C, double M, bool training, double momentum,
                 double eps, const A* gamma, A* running_mean, A* running_var, A* mean, A* invstd, A* scale,
                 Stream stream);

template <class T, class A>
void bn_apply(const T* x, int64_t P, int64_t C, const A* mean, const A* scale, const A* beta, T* y, Stream stream);
template <class T, class A>
void bn_apply_act(const T* x, int64_t P, int64_t C, const A* mean, const A* scale, const A* beta, BnActivation act,
                  T* y, Stream stream);

template <class T, class A>
void bn_backward_sums(const T* x, const T* dy, int64_t P, int64_t C, const A* mean, const A* invstd, double* sum_dy,
                      double* sum_dy_xhat, void* workspace, Stream stream);
template <class T, class A>
void bn_backward_sums_act(const T* x, const T* dy, int64_t P, int64_t C, const A* mean, const A* invstd, const A* scale,
                          const A* beta, BnActivation act, double* sum_dy, double* sum_dy_xhat, void* workspace,
                          Stream stream);

template <class A>
void bn_backward_coefficients(const double* sum_dy, const double* sum_dy_xhat, int64_t C, double M, bool training,
                              const A* gamma, const A* invstd, A* k1, A* k2, A* k3, Stream stream);
template <class A>
void bn_param_grads(const double* sum_dy, const double* sum_dy_xhat, int64_t C, A* dgamma, A* dbeta, Stream stream);

template <class T, class A>
void bn_backward_dx(const T* x, const T* dy, int64_t P, int64_t C, const A* mean, const A* k1, const A* k2, const A* k3,
                    T* dx, Stream stream);
template <class T, class A>
void bn_backward_dx_act(const T* x, const T* dy, int64_t P, int64_t C, const A* mean, const A* scale, const A* beta,
                        const A* k1, const A* k2, const A* k3, BnActivation act, T* dx, Stream stream);

}  // namespace seg::cuda
