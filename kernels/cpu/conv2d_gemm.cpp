// Convolution as implicit GEMM on the CPU (kernels/cpu/gemm.h), float32 and float64.
//
// With P = N*Ho*Wo output pixels and Kc = KH*KW*Cg taps per output channel, per group g:
//   forward:         Y[P, Og]      = cols[P, Kc] * W_g[Og, Kc]^T
//   backward weight: dW_g[Og, Kc]  = dY[P, Og]^T * cols[P, Kc]
//   backward data:   dX            = the transposed convolution of dY with W (see below)
// where cols[p, (kh,kw,c)] = x[n, ho*s-p+kh*d, wo*s-p+kw*d, g*Cg+c] (0 outside) is never stored:
// Im2colPacker writes exactly the blocks the GEMM asks for, straight from x. A 1x1 stride-1 conv
// needs no packer at all (cols = x).
//
// Backward data, stride 1 (any dilation): dX[q, c] = sum_{tap, o} dY[q - offset(tap), o] * W[o, tap, c],
// again an implicit GEMM: A = "dY shifted by each tap" (TapShiftPacker), B = W reordered per tap.
// Stride > 1: dcols = dY * W (GEMM into a per-image buffer), then each input pixel gathers the
// entries of dcols that read it (no two threads write one element).
//
// T = float is the production path (SIMD micro-kernels); T = double runs the very same packers and
// blocking through gemm.h's double GEMM (a plain C++ micro-kernel), so the float64 gradient checks
// and golden runs test this file's index logic too.
#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/cpu/conv2d.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/thread_pool.h"

namespace seg::cpu {

namespace {

// Where output pixel p's window starts in x, for one image.
struct PixelOrigin {
  int64_t n, h0, w0;
};

// cols[p, kc] for one group, packed either as rows = pixels (forward: A operand) or as rows = kc
// (backward weight: B^T operand, depth = pixels).
template <class T>
class Im2colPacker final : public PackerOf<T> {
 public:
  Im2colPacker(const ConvShape& s, const T* x, int64_t group, bool rows_are_pixels)
      : s_(s), x_(x), c0_(group * s.Cg()), Ho_(s.Ho()), Wo_(s.Wo()), pixel_rows_(rows_are_pixels) {}

  PixelOrigin origin(int64_t p) const {
    const int64_t n = p / (Ho_ * Wo_), r = p % (Ho_ * Wo_);
    return {n, (r / Wo_) * s_.stride_h - s_.pad_h, (r % Wo_) * s_.stride_w - s_.pad_w};
  }
  // Pointer to x[n, h, w, c0 + ...] for tap (kh, kw) of pixel origin o, or null if outside.
  const T* tap_ptr(const PixelOrigin& o, int64_t kh, int64_t kw) const {
    const int64_t h = o.h0 + kh * s_.dil_h, w = o.w0 + kw * s_.dil_w;
    if (h < 0 || h >= s_.H || w < 0 || w >= s_.W) return nullptr;
    return x_ + ((o.n * s_.H + h) * s_.W + w) * s_.C + c0_;
  }

  void pack(int64_t i0, int64_t rows, int64_t k0, int64_t depth, int64_t mr, T* dst) const override {
    if (pixel_rows_) pack_pixel_rows(i0, rows, k0, depth, mr, dst);
    else pack_tap_rows(i0, rows, k0, depth, mr, dst);
  }

 private:
  // rows = pixels [i0, i0+rows), depth = kc [k0, k0+depth): out[k*mr + r].
  void pack_pixel_rows(int64_t i0, int64_t rows, int64_t k0, int64_t depth, int64_t mr, T* dst) const {
    const int64_t Cg = s_.Cg();
    PixelOrigin origins[kMaxPackRows];
    const T* src[kMaxPackRows];
    for (int64_t p = 0; p * mr < rows; ++p) {
      T* out = dst + p * depth * mr;
      const int64_t r_end = std::min(mr, rows - p * mr);
      for (int64_t r = 0; r < r_end; ++r) origins[r] = origin(i0 + p * mr + r);
      // Walk kc in runs of channels that share a tap: within a run every pixel row reads `run`
      // contiguous channels (or zeros: padding, rows past the end), so the run is a transposition.
      int64_t k = 0;
      while (k < depth) {
        const int64_t kc = k0 + k, tap = kc / Cg, c = kc % Cg;
        const int64_t run = std::min(Cg - c, depth - k);
        for (int64_t r = 0; r < mr; ++r) {
          const T* t = r < r_end ? tap_ptr(origins[r], tap / s_.KW, tap % s_.KW) : nullptr;
          src[r] = t ? t + c : nullptr;
        }
        pack_rows_transposed(src, mr, run, out + k * mr);
        k += run;
      }
    }
  }

  // rows = kc [i0, i0+rows), depth = pixels [k0, k0+depth): out[p*mr + j] = cols[k0+p, i0+j].
  void pack_tap_rows(int64_t i0, int64_t rows, int64_t k0, int64_t depth, int64_t mr, T* dst) const {
    const int64_t Cg = s_.Cg();
    const int64_t panels = (rows + mr - 1) / mr;
    for (int64_t q = 0; q < depth; ++q) {
      const PixelOrigin o = origin(k0 + q);
      for (int64_t panel = 0; panel < panels; ++panel) {
        T* out = dst + (panel * depth + q) * mr;
        const int64_t j_end = std::min(mr, rows - panel * mr);
        int64_t j = 0;
        while (j < j_end) {
          const int64_t kc = i0 + panel * mr + j, tap = kc / Cg, c = kc % Cg;
          const int64_t run = std::min(Cg - c, j_end - j);
          const T* src = tap_ptr(o, tap / s_.KW, tap % s_.KW);
          if (src) std::memcpy(out + j, src + c, static_cast<size_t>(run) * sizeof(T));
          else std::fill(out + j, out + j + run, T(0));
          j += run;
        }
        std::fill(out + j_end, out + mr, T(0));
      }
    }
  }

  ConvShape s_;
  const T* x_;
  int64_t c0_, Ho_, Wo_;
  bool pixel_rows_;
};

// Backward data for stride 1: A(q, (tap, o)) = dY[pixel q shifted back by tap, g*Og + o] (0 outside).
// Input pixel q = (n, h, w) receives from output pixel (h + pad - kh*dil, w + pad - kw*dil).
template <class T>
class TapShiftPacker final : public PackerOf<T> {
 public:
  TapShiftPacker(const ConvShape& s, const T* dy, int64_t group)
      : s_(s), dy_(dy), o0_(group * s.Og()), Ho_(s.Ho()), Wo_(s.Wo()) {}
  void pack(int64_t i0, int64_t rows, int64_t k0, int64_t depth, int64_t mr, T* dst) const override {
    const int64_t Og = s_.Og();
    const T* src[kMaxPackRows];
    int64_t qn[kMaxPackRows], qh[kMaxPackRows], qw[kMaxPackRows];
    for (int64_t p = 0; p * mr < rows; ++p) {
      T* out = dst + p * depth * mr;
      const int64_t r_end = std::min(mr, rows - p * mr);
      for (int64_t r = 0; r < r_end; ++r) {
        const int64_t q = i0 + p * mr + r, hw = q % (s_.H * s_.W);
        qn[r] = q / (s_.H * s_.W), qh[r] = hw / s_.W, qw[r] = hw % s_.W;
      }
      // Runs of output channels that share a tap: a transposition of mr shifted dY rows.
      int64_t k = 0;
      while (k < depth) {
        const int64_t kk = k0 + k, tap = kk / Og, o = kk % Og;
        const int64_t run = std::min(Og - o, depth - k);
        for (int64_t r = 0; r < mr; ++r) {
          src[r] = nullptr;
          if (r >= r_end) continue;
          const int64_t ho = qh[r] + s_.pad_h - (tap / s_.KW) * s_.dil_h;
          const int64_t wo = qw[r] + s_.pad_w - (tap % s_.KW) * s_.dil_w;
          if (ho >= 0 && ho < Ho_ && wo >= 0 && wo < Wo_) src[r] = dy_ + ((qn[r] * Ho_ + ho) * Wo_ + wo) * s_.O + o0_ + o;
        }
        pack_rows_transposed(src, mr, run, out + k * mr);
        k += run;
      }
    }
  }

 private:
  ConvShape s_;
  const T* dy_;
  int64_t o0_, Ho_, Wo_;
};

// B^T for the stride-1 backward data: Bt(c, (tap, o)) = W[g*Og + o, tap, c].
template <class T>
class TapWeightPacker final : public PackerOf<T> {
 public:
  TapWeightPacker(const ConvShape& s, const T* w, int64_t group) : s_(s), w_(w + group * s.Og() * s.KH * s.KW * s.Cg()) {}
  void pack(int64_t i0, int64_t rows, int64_t k0, int64_t depth, int64_t mr, T* dst) const override {
    const int64_t Og = s_.Og(), Cg = s_.Cg(), taps = s_.KH * s_.KW;
    const int64_t panels = (rows + mr - 1) / mr;
    for (int64_t k = 0; k < depth; ++k) {
      const int64_t kk = k0 + k, tap = kk / Og, o = kk % Og;
      const T* src = w_ + (o * taps + tap) * Cg;
      for (int64_t panel = 0; panel < panels; ++panel) {
        T* out = dst + (panel * depth + k) * mr;
        const int64_t j_end = std::min(mr, rows - panel * mr);
        std::memcpy(out, src + i0 + panel * mr, static_cast<size_t>(j_end) * sizeof(T));
        std::fill(out + j_end, out + mr, T(0));
      }
    }
  }

 private:
  ConvShape s_;
  const T* w_;
};

bool is_pointwise(const ConvShape& s) {
  return s.KH == 1 && s.KW == 1 && s.stride_h == 1 && s.stride_w == 1 && s.pad_h == 0 && s.pad_w == 0;
}

}  // namespace

template <class T>
void conv2d_forward_gemm(const ConvShape& s, const T* x, const T* w, const T* b, T* y) {
  const int64_t P = s.N * s.Ho() * s.Wo(), Og = s.Og(), Cg = s.Cg(), Kc = s.KH * s.KW * Cg;
  for (int64_t g = 0; g < s.groups; ++g) {
    const MatrixPacker<T> weights(w + g * Og * Kc, Kc, 1);  // Bt(o, kc) = W[o, kc]
    if (is_pointwise(s)) {
      const MatrixPacker<T> cols(x + g * Cg, s.C, 1);
      gemm({P, Og, Kc}, cols, weights, y + g * Og, s.O, false);
    } else {
      const Im2colPacker<T> cols(s, x, g, true);
      gemm({P, Og, Kc}, cols, weights, y + g * Og, s.O, false);
    }
  }
  if (b) {
    parallel_for(0, P, 1024, [&](int64_t lo, int64_t hi) {
      for (int64_t p = lo; p < hi; ++p)
        for (int64_t o = 0; o < s.O; ++o) y[p * s.O + o] += b[o];
    });
  }
}

template <class T>
void conv2d_backward_weight_gemm(const ConvShape& s, const T* x, const T* dy, T* dw, T* db) {
  const int64_t P = s.N * s.Ho() * s.Wo(), Og = s.Og(), Cg = s.Cg(), Kc = s.KH * s.KW * Cg;
  if (dw) {
    for (int64_t g = 0; g < s.groups; ++g) {
      const MatrixPacker<T> dy_t(dy + g * Og, 1, s.O);  // A(o, p) = dY[p, g*Og + o]
      if (is_pointwise(s)) {
        const MatrixPacker<T> cols_t(x + g * Cg, 1, s.C);  // Bt(c, p) = x[p, g*Cg + c]
        gemm({Og, Kc, P}, dy_t, cols_t, dw + g * Og * Kc, Kc, false);
      } else {
        const Im2colPacker<T> cols_t(s, x, g, false);
        gemm({Og, Kc, P}, dy_t, cols_t, dw + g * Og * Kc, Kc, false);
      }
    }
  }
  if (db) {
    // Sum over pixels in fixed chunks (deterministic), per output channel.
    const int64_t chunk = 1024, chunks = (P + chunk - 1) / chunk;
    std::vector<double> part(static_cast<size_t>(chunks * s.O), 0.0);
    parallel_for(0, chunks, 1, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        double* acc = part.data() + c * s.O;
        std::vector<T> row(static_cast<size_t>(s.O), T(0));  // float sums for float, as before
        for (int64_t p = c * chunk; p < std::min(P, (c + 1) * chunk); ++p)
          for (int64_t o = 0; o < s.O; ++o) row[o] += dy[p * s.O + o];
        for (int64_t o = 0; o < s.O; ++o) acc[o] = row[o];
      }
    });
    for (int64_t o = 0; o < s.O; ++o) {
      double sum = 0;
      for (int64_t c = 0; c < chunks; ++c) sum += part[c * s.O + o];
      db[o] = static_cast<T>(sum);
    }
  }
}

template <class T>
void conv2d_backward_data_gemm(const ConvShape& s, const T* w, const T* dy, T* dx) {
  const int64_t Og = s.Og(), Cg = s.Cg(), Kc = s.KH * s.KW * Cg, taps = s.KH * s.KW;
  const int64_t Ho = s.Ho(), Wo = s.Wo();
  if (is_pointwise(s)) {
    for (int64_t g = 0; g < s.groups; ++g) {
      const MatrixPacker<T> a(dy + g * Og, s.O, 1);         // A(p, o) = dY[p, g*Og + o]
      const MatrixPacker<T> bt(w + g * Og * Kc, 1, Kc);     // Bt(c, o) = W[o, c]
      gemm({s.N * s.H * s.W, Cg, Og}, a, bt, dx + g * Cg, s.C, false);
    }
    return;
  }
  if (s.stride_h == 1 && s.stride_w == 1) {
    for (int64_t g = 0; g < s.groups; ++g) {
      const TapShiftPacker<T> a(s, dy, g);
      const TapWeightPacker<T> bt(s, w, g);
      gemm({s.N * s.H * s.W, Cg, taps * Og}, a, bt, dx + g * Cg, s.C, false);
    }
    return;
  }
  // Strided: per image, dcols[Ho*Wo, Kc] = dY_n * W_g, then gather into dx.
  std::vector<T> dcols(static_cast<size_t>(Ho * Wo * Kc));
  for (int64_t n = 0; n < s.N; ++n) {
    for (int64_t g = 0; g < s.groups; ++g) {
      const MatrixPacker<T> a(dy + n * Ho * Wo * s.O + g * Og, s.O, 1);  // A(p, o)
      const MatrixPacker<T> bt(w + g * Og * Kc, 1, Kc);                  // Bt(kc, o) = W[o, kc]
      gemm({Ho * Wo, Kc, Og}, a, bt, dcols.data(), Kc, false);
      parallel_for(0, s.H, 1, [&](int64_t h0, int64_t h1) {
        for (int64_t h = h0; h < h1; ++h)
          for (int64_t wi = 0; wi < s.W; ++wi) {
            T* out = dx + ((n * s.H + h) * s.W + wi) * s.C + g * Cg;
            std::fill(out, out + Cg, T(0));
            for_each_output_reading(s, h, wi, [&](int64_t kh, int64_t kw, int64_t ho, int64_t wo) {
              const T* src = dcols.data() + (ho * Wo + wo) * Kc + (kh * s.KW + kw) * Cg;
              for (int64_t c = 0; c < Cg; ++c) out[c] += src[c];
            });
          }
      });
    }
  }
}

#define SEG_CONV_GEMM_INSTANTIATE(T)                                                                   \
  template void conv2d_forward_gemm<T>(const ConvShape&, const T*, const T*, const T*, T*);          \
  template void conv2d_backward_data_gemm<T>(const ConvShape&, const T*, const T*, T*);              \
  template void conv2d_backward_weight_gemm<T>(const ConvShape&, const T*, const T*, T*, T*);
SEG_CONV_GEMM_INSTANTIATE(float)
SEG_CONV_GEMM_INSTANTIATE(double)
#undef SEG_CONV_GEMM_INSTANTIATE

}  // namespace seg::cpu
