// Softmax, log-softmax and argmax over the channel dimension of [P, C] (channels-last pixels).
//
//   softmax:     y = exp(x - max) / sum exp(x - max)      dx = y * (dy - sum_c dy*y)
//   log_softmax: y = x - max - log sum exp(x - max)        dx = dy - exp(y) * sum_c dy
//   argmax:      index of the first maximum (NaN wins, like PyTorch), int32
// Arithmetic in acc_t (f32 for halves). Memory traffic: read x, write y; backward reads y and dy.
#pragma once

#include <cstdint>

namespace seg::cpu {

template <class T> void softmax_forward(const T* x, int64_t P, int64_t C, T* y, bool log);
template <class T> void softmax_backward(const T* y, const T* dy, int64_t P, int64_t C, T* dx, bool log);
template <class T> void argmax_channels(const T* x, int64_t P, int64_t C, int32_t* out);

}  // namespace seg::cpu
