// Fused log-softmax + negative log-likelihood over channels, with ignore index -1.
//
//   logits [P, C]  (P = N*H*W pixels of an [N, H, W, C] tensor; C contiguous)
//   labels [P]     int32 in [0, C) or -1 (ignored)
//   lse[p]   = log sum_c exp(logits[p, c])            (max-shifted for stability)
//   loss     = (1/V) * sum_{p: label>=0} (lse[p] - logits[p, label[p]]),  V = number of valid pixels
//   dlogits[p, c] = g/V * (exp(logits[p, c] - lse[p]) - [c == label[p]])  for valid p, 0 otherwise
//
// Why fused: log_softmax followed by NLL would store a second [P, C] tensor and read it back; the fused
// form saves only lse (one value per pixel) and recomputes the softmax in backward, in f32 or better.
// When no pixel is valid the loss is 0 with zero gradient (PyTorch returns NaN; a NaN would also wipe
// out the loss scaler's state, see docs).
// Memory traffic: forward reads P*C logits once; backward reads them again and writes P*C gradients.
#pragma once

#include <cstdint>

namespace seg::cpu {

struct NllResult {
  double loss_sum = 0;       // sum over valid pixels of -log p(label)
  int64_t valid = 0;         // V
  int64_t bad_pixel = -1;    // first pixel whose label is outside [-1, C), or -1
  int32_t bad_label = 0;
};

// T = float or double (halves are cast to float by the op before this kernel); L = acc type for lse.
template <class T, class L>
NllResult softmax_nll_forward(const T* logits, const int32_t* labels, int64_t P, int64_t C, L* lse);

template <class T, class L>
void softmax_nll_backward(const T* logits, const int32_t* labels, const L* lse, int64_t P, int64_t C, double scale,
                          T* dlogits);

// Reference: the textbook formula with double precision and no fusion.
template <class T>
NllResult softmax_nll_forward_ref(const T* logits, const int32_t* labels, int64_t P, int64_t C);

}  // namespace seg::cpu
