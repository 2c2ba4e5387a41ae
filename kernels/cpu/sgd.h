// One SGD-with-momentum step, exactly torch.optim.SGD (dampening 0, no Nesterov), which upstream uses:
//
//   d   = grad + weight_decay * p
//   buf = momentum * buf + d          (buf starts at 0, so the first step gives buf = d)
//   p   = p - lr * buf
//
// In f32 or f64 (master weights are f32 under mixed precision). Memory traffic: read p, grad, buf;
// write p, buf: 20 bytes per f32 parameter, one pass.
//
// Each line is one fused multiply-add (std::fma: a*b+c rounded once), written out rather than left
// to the compiler: g++ contracts these three lines into exactly these fmas under -march=x86-64-v3
// (checked bit for bit, so writing them out changed no result), but only where it chooses to, and
// the CUDA twin (kernels/cuda/sgd.cu) must round at the same places to stay bit-identical on a GPU.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/cpu/thread_pool.h"

namespace seg::cpu {

template <class T>
void sgd_momentum_step(T* p, const T* grad, T* buf, int64_t n, double lr, double momentum, double weight_decay) {
  const T lr_ = static_cast<T>(lr), mom = static_cast<T>(momentum), wd = static_cast<T>(weight_decay);
  parallel_for(0, n, 1 << 15, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      const T d = std::fma(wd, p[i], grad[i]);
      buf[i] = std::fma(mom, buf[i], d);
      p[i] = std::fma(-lr_, buf[i], p[i]);
    }
  });
}

}  // namespace seg::cpu
