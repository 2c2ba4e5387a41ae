// One SGD-with-momentum step, exactly torch.optim.SGD (dampening 0, no Nesterov), which upstream uses:
//
//   d   = grad + weight_decay * p
//   buf = momentum * buf + d          (buf starts at 0, so the first step gives buf = d)
//   p   = p - lr * buf
//
// In f32 or f64 (master weights are f32 under mixed precision). Memory traffic: read p, grad, buf;
// write p, buf: 20 bytes per f32 parameter, one pass.
#pragma once

#include <cstdint>

#include "kernels/cpu/thread_pool.h"

namespace seg::cpu {

template <class T>
void sgd_momentum_step(T* p, const T* grad, T* buf, int64_t n, double lr, double momentum, double weight_decay) {
  const T lr_ = static_cast<T>(lr), mom = static_cast<T>(momentum), wd = static_cast<T>(weight_decay);
  parallel_for(0, n, 1 << 15, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      const T d = grad[i] + wd * p[i];
      buf[i] = mom * buf[i] + d;
      p[i] -= lr_ * buf[i];
    }
  });
}

}  // namespace seg::cpu
