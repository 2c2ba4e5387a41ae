// Tensor-core GEMM: where an operand's elements live. A source answers, for one 16-byte chunk of a
// tile, "where are these kChunk elements and how many of them exist", so one block kernel serves a
// strided matrix and the three implicit-GEMM convolutions alike.
//
// Coordinates. A chunk lies along the operand's contiguous dimension. Each thread of the loader
// copies the same tile positions at every K step, so one coordinate of its chunks is fixed for the
// whole kernel and one moves with K:
//   Major::k  operand (rows m or n, K contiguous):  fixed = the row (m or n), moving = k
//   Major::mn operand (rows k, M or N contiguous):  fixed = the column (m or n), moving = k
// slot(fixed) precomputes what depends on the fixed coordinate only (a pixel's image, row and
// column; a weight row), once per kernel; chunk(slot, moving, p) gives the address and the count of
// valid elements (0..kChunk; 0 outside the operand, where the tile is zero-filled) for the
// vectorised path, and element(slot, moving, e) the bits of element e of that chunk (0 outside) for
// the element-wise path taken when the operand is not 16-byte aligned. chunk() is only called when
// the launcher has checked that every chunk it returns is 16-byte aligned and contiguous.
// with_group(g) selects group g of a grouped convolution (the matrix of that group).
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/common/fast_divmod.h"
#include "kernels/cuda/gemm/tile_config.h"

namespace seg::cuda::tc {

template <class T>
__device__ __forceinline__ typename Element<T>::Bits bits_at(const T* p) {
  return *reinterpret_cast<const typename Element<T>::Bits*>(p);
}

// A strided matrix with `rows` x `cols` elements, element (r, c) at base[r * ld + c]; cols is the
// contiguous dimension. For a Major::k operand rows are m (n), for a Major::mn operand rows are k.
template <class T, Major Mj>
struct MatrixSource {
  static constexpr int kChunk = Element<T>::kChunk;
  const T* base;
  int64_t ld;
  int rows, cols;
  int64_t group_stride;

  __device__ MatrixSource with_group(int g) const {
    MatrixSource s = *this;
    s.base += g * group_stride;
    return s;
  }

  // What a loader thread's chunk position fixes, computed once per kernel (tile_loader.h). For
  // 16-bit elements:
  //   Major::k   the row's first element (base + fixed * ld) and how many of its columns exist
  //              (cols, or 0 for a row past the end);
  //   Major::mn  the column's element in row 0 (base + fixed) and how many of the chunk's kChunk
  //              columns exist (cols - fixed, clamped to 0..kChunk).
  // So a chunk's address is one add (Major::k) or one multiply-add (Major::mn) per K tile, and its
  // count a clamp or a compare, instead of the row * ld + column product and both bounds each time.
  // On sm_90 this took the f16/bf16 128x128 GEMMs from 161-164 registers to 128 or fewer (two blocks
  // per SM instead of one). For float (the TF32 WMMA kernels) ptxas went the other way (up to 194
  // registers, a spill in the forward convolution), so float keeps the bare fixed coordinate.
  static constexpr bool kPointerSlots = !std::is_same_v<T, float>;
  struct PointerSlot {
    const T* p;
    int limit;
  };
  struct IndexSlot {
    int fixed;
  };
  using Slot = std::conditional_t<kPointerSlots, PointerSlot, IndexSlot>;
  // Elements of a chunk that has `left` of them before the edge: left clamped to 0..kChunk.
  __device__ static int clamp_chunk(int left) { return left < 0 ? 0 : left < kChunk ? left : kChunk; }

  __device__ Slot slot(int fixed) const {
    if constexpr (!kPointerSlots) {
      return {fixed};
    } else if constexpr (Mj == Major::k) {
      const bool in = fixed < rows;
      return {in ? base + fixed * ld : base, in ? cols : 0};
    } else {
      const int left = cols - fixed;
      return {left > 0 ? base + fixed : base, clamp_chunk(left)};
    }
  }

  // p is left at base for a chunk with no element (cp.async reads 0 bytes from it).
  __device__ int chunk(const Slot& s, int moving, const T*& p) const {
    if constexpr (!kPointerSlots) {
      const int r = Mj == Major::k ? s.fixed : moving, c = Mj == Major::k ? moving : s.fixed;
      p = base;
      if (r >= rows || c >= cols) return 0;
      p = base + r * ld + c;
      return cols - c < kChunk ? cols - c : kChunk;
    } else if constexpr (Mj == Major::k) {
      const int n = clamp_chunk(s.limit - moving);
      p = n > 0 ? s.p + moving : base;
      return n;
    } else {
      const int n = moving < rows ? s.limit : 0;
      p = n > 0 ? s.p + moving * ld : base;
      return n;
    }
  }
  __device__ typename Element<T>::Bits element(const Slot& s, int moving, int e) const {
    if constexpr (!kPointerSlots) {
      const int r = Mj == Major::k ? s.fixed : moving, c = (Mj == Major::k ? moving : s.fixed) + e;
      if (r >= rows || c >= cols) return 0;
      return bits_at(base + r * ld + c);
    } else if constexpr (Mj == Major::k) {
      return moving + e < s.limit ? bits_at(s.p + moving + e) : 0;
    } else {
      return moving < rows && e < s.limit ? bits_at(s.p + moving * ld + e) : 0;
    }
  }
};

// Convolution geometry as the sources use it (int: every extent of the models fits), with the
// divisors the main loop divides by as multiply-and-shift (kernels/common/fast_divmod.h): the
// K-index splits below run once per copied chunk, in the loop the tensor cores wait on.
struct ConvGeometry {
  int N, H, W, Ho, Wo, KH, KW;
  int sh, sw, ph, pw, dh, dw;
  FastDivmod by_kw, by_wo, by_howo, by_sh, by_sw;  // KW, Wo, Ho*Wo, sh, sw
};

// Forward, A[m, k] (Major::k): m = output pixel (n, ho, wo), k = (kh, kw, c) with c fastest:
//   A[m, k] = x[n, ho*sh - ph + kh*dh, wo*sw - pw + kw*dw, g*Cg + c]   (0 outside the image)
// x has `ldx` elements between pixels (>= C; more for a channel slice of a wider tensor).
template <class T>
struct ConvFwdASource {
  static constexpr int kChunk = Element<T>::kChunk;
  const T* x;
  int64_t ldx;
  ConvGeometry geo;
  int Cg, M, K;
  FastDivmod by_cg;  // Cg

  __device__ ConvFwdASource with_group(int g) const {
    ConvFwdASource s = *this;
    s.x += g * Cg;
    return s;
  }

  struct Slot {
    int64_t image;  // n * H * W
    int hb, wb;     // ho*sh - ph, wo*sw - pw
    bool valid;
  };
  __device__ Slot slot(int m) const {
    Slot s{0, 0, 0, m < M};
    if (!s.valid) return s;
    const int hw = geo.Ho * geo.Wo;
    const int n = m / hw, rest = m - n * hw, ho = rest / geo.Wo, wo = rest - ho * geo.Wo;
    s.image = static_cast<int64_t>(n) * geo.H * geo.W;
    s.hb = ho * geo.sh - geo.ph;
    s.wb = wo * geo.sw - geo.pw;
    return s;
  }
  // The address of x for (slot, k), or null outside the image; `c` receives k's channel. Written
  // without early returns (one select at the end, unsigned compares for 0 <= h < H) so that nvcc
  // predicates it instead of branching around each test: this runs per copied chunk in the main
  // loop. k may pass K by less than a tile, so the splits stay within FastDivmod's range.
  __device__ const T* at(const Slot& s, int k, int& c) const {
    int tap, kh, kw;
    by_cg.divmod(k, tap, c);
    geo.by_kw.divmod(tap, kh, kw);
    const int h = s.hb + kh * geo.dh, w = s.wb + kw * geo.dw;
    const bool in = s.valid && k < K && static_cast<unsigned>(h) < static_cast<unsigned>(geo.H) &&
                    static_cast<unsigned>(w) < static_cast<unsigned>(geo.W);
    return in ? x + (s.image + static_cast<int64_t>(h) * geo.W + w) * ldx + c : nullptr;
  }
  __device__ int chunk(const Slot& s, int k, const T*& p) const {
    int c = 0;
    const T* q = at(s, k, c);
    p = q ? q : x;
    return q ? (Cg - c < kChunk ? Cg - c : kChunk) : 0;
  }
  __device__ typename Element<T>::Bits element(const Slot& s, int k, int e) const {
    int c = 0;
    const T* q = at(s, k + e, c);
    return q ? bits_at(q) : 0;
  }
};

// Backward data, A[m, k] (Major::k): m = input pixel (n, h, w), k = (kh, kw, o) with o fastest:
//   A[m, k] = dy[n, ho, wo, g*Og + o]  where ho*sh = h + ph - kh*dh and wo*sw = w + pw - kw*dw,
//   0 when either does not divide exactly or falls outside the output.
template <class T>
struct ConvBwdDataASource {
  static constexpr int kChunk = Element<T>::kChunk;
  const T* dy;
  int64_t lddy;
  ConvGeometry geo;
  int Og, M, K;
  FastDivmod by_og;  // Og

  __device__ ConvBwdDataASource with_group(int g) const {
    ConvBwdDataASource s = *this;
    s.dy += g * Og;
    return s;
  }

  struct Slot {
    int64_t image;  // n * Ho * Wo
    int hp, wp;     // h + ph, w + pw
    bool valid;
  };
  __device__ Slot slot(int m) const {
    Slot s{0, 0, 0, m < M};
    if (!s.valid) return s;
    const int hw = geo.H * geo.W;
    const int n = m / hw, rest = m - n * hw, h = rest / geo.W, w = rest - h * geo.W;
    s.image = static_cast<int64_t>(n) * geo.Ho * geo.Wo;
    s.hp = h + geo.ph;
    s.wp = w + geo.pw;
    return s;
  }
  __device__ const T* at(const Slot& s, int k, int& o) const {
    // Branch-free like ConvFwdASource::at; a negative hn or wn is clamped to 0 before the divide
    // (FastDivmod's range) and rejected by `in` anyway. by_sh/by_sw are the identity for stride 1.
    int tap, kh, kw;
    by_og.divmod(k, tap, o);
    geo.by_kw.divmod(tap, kh, kw);
    const int hp = s.hp - kh * geo.dh, wp = s.wp - kw * geo.dw;
    int hn, wn, hr, wr;
    geo.by_sh.divmod(hp > 0 ? hp : 0, hn, hr);
    geo.by_sw.divmod(wp > 0 ? wp : 0, wn, wr);
    const bool in = s.valid && k < K && hp >= 0 && wp >= 0 && hr == 0 && wr == 0 && hn < geo.Ho && wn < geo.Wo;
    return in ? dy + (s.image + static_cast<int64_t>(hn) * geo.Wo + wn) * lddy + o : nullptr;
  }
  __device__ int chunk(const Slot& s, int k, const T*& p) const {
    int o = 0;
    const T* q = at(s, k, o);
    p = q ? q : dy;
    return q ? (Og - o < kChunk ? Og - o : kChunk) : 0;
  }
  __device__ typename Element<T>::Bits element(const Slot& s, int k, int e) const {
    int o = 0;
    const T* q = at(s, k + e, o);
    return q ? bits_at(q) : 0;
  }
};

// Backward data, B[k, c] (Major::mn, c contiguous): k = (kh, kw, o) with o fastest,
//   B[k, c] = w[g*Og + o, kh, kw, c]   (w is [O, KH, KW, Cg]).
template <class T>
struct ConvBwdDataBSource {
  static constexpr int kChunk = Element<T>::kChunk;
  const T* w;
  int taps, Og, Cg, K;
  FastDivmod by_og;  // Og

  __device__ ConvBwdDataBSource with_group(int g) const {
    ConvBwdDataBSource s = *this;
    s.w += static_cast<int64_t>(g) * Og * taps * Cg;
    return s;
  }
  struct Slot {
    int c;
  };
  __device__ Slot slot(int c) const { return {c}; }
  __device__ const T* at(int k, int c) const {
    if (k >= K || c >= Cg) return nullptr;
    int tap, o;
    by_og.divmod(k, tap, o);
    return w + (static_cast<int64_t>(o) * taps + tap) * Cg + c;
  }
  __device__ int chunk(const Slot& s, int k, const T*& p) const {
    const T* q = at(k, s.c);
    p = q ? q : w;
    return q ? (Cg - s.c < kChunk ? Cg - s.c : kChunk) : 0;
  }
  __device__ typename Element<T>::Bits element(const Slot& s, int k, int e) const {
    const T* q = at(k, s.c + e);
    return q ? bits_at(q) : 0;
  }
};

// Backward weight, B[k, j] (Major::mn, j contiguous): k = output pixel (n, ho, wo), j = (kh, kw, c)
// with c fastest:  B[k, j] = x[n, ho*sh - ph + kh*dh, wo*sw - pw + kw*dw, g*Cg + c]  (0 outside).
// (A is dy as a Major::mn MatrixSource: A[o, k] = dy[k, g*Og + o].)
template <class T>
struct ConvBwdWeightBSource {
  static constexpr int kChunk = Element<T>::kChunk;
  const T* x;
  int64_t ldx;
  ConvGeometry geo;
  int Cg, P, J;  // P = N*Ho*Wo (the GEMM's K), J = KH*KW*Cg (its N)

  __device__ ConvBwdWeightBSource with_group(int g) const {
    ConvBwdWeightBSource s = *this;
    s.x += g * Cg;
    return s;
  }
  struct Slot {
    int j, c, hoff, woff;  // hoff = kh*dh - ph, woff = kw*dw - pw
    bool valid;
  };
  __device__ Slot slot_of(int j) const {
    Slot s{j, 0, 0, 0, j < J};
    if (!s.valid) return s;
    const int tap = j / Cg;
    s.c = j - tap * Cg;
    const int kh = tap / geo.KW, kw = tap - kh * geo.KW;
    s.hoff = kh * geo.dh - geo.ph;
    s.woff = kw * geo.dw - geo.pw;
    return s;
  }
  __device__ Slot slot(int j) const { return slot_of(j); }
  // Branch-free like ConvFwdASource::at (k may pass P by less than a tile).
  __device__ const T* at(const Slot& s, int k) const {
    int n, rest, ho, wo;
    geo.by_howo.divmod(k, n, rest);
    geo.by_wo.divmod(rest, ho, wo);
    const int h = ho * geo.sh + s.hoff, w = wo * geo.sw + s.woff;
    const bool in = s.valid && k < P && static_cast<unsigned>(h) < static_cast<unsigned>(geo.H) &&
                    static_cast<unsigned>(w) < static_cast<unsigned>(geo.W);
    return in ? x + ((static_cast<int64_t>(n) * geo.H + h) * geo.W + w) * ldx + s.c : nullptr;
  }
  __device__ int chunk(const Slot& s, int k, const T*& p) const {
    const T* q = at(s, k);
    p = q ? q : x;
    return q ? (Cg - s.c < kChunk ? Cg - s.c : kChunk) : 0;
  }
  __device__ typename Element<T>::Bits element(const Slot& s, int k, int e) const {
    const T* q = at(slot_of(s.j + e), k);
    return q ? bits_at(q) : 0;
  }
};

}  // namespace seg::cuda::tc
