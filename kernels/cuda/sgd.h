// CUDA SGD-with-momentum step, exactly torch.optim.SGD (dampening 0, no Nesterov): the twin of
// kernels/cpu/sgd.h.
//
//   d   = grad + weight_decay * p
//   buf = momentum * buf + d          (buf starts at 0, so the first step gives buf = d)
//   p   = p - lr * buf
//
// f32 only on the device (f64 parameters are CPU-only, DESIGN 4; half parameters use
// sgd_half_step or the master-weight step of kernels/cuda/amp.h). Plain SGD is momentum 0 (buf
// then equals d and is still written, as on the CPU), no weight decay is weight_decay 0.
// Bit-identical to the CPU: every product and sum rounded once (__fmul_rn/__fadd_rn; nvcc would
// otherwise fuse them into fmas).
// Launch: 256 threads per block, a 16-byte pack (4 parameters) per thread and step when p, grad and
// buf reach alignment at the same element (scalar head and tail), else one element; grid =
// ceil(packs / 256) capped at 1024, grid-stride. Memory traffic: read p, grad, buf; write p, buf:
// 20 bytes per parameter, one pass, bandwidth-bound.
// Device pointers; no synchronisation, no allocation.
#pragma once

#include <cstdint>

#include "kernels/cuda/stream.h"

namespace seg::cuda {

template <class T>
void sgd_momentum_step(T* p, const T* grad, T* buf, int64_t n, double lr, double momentum, double weight_decay,
                       Stream stream);

}  // namespace seg::cuda
