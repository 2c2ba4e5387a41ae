// Tensor-core GEMM: where an operand's elements live. A source answers, for one 16-byte chunk of a
// tile, "where are these kChunk elements and how many of them exist", so one block kernel serves a
// strided matrix and the three implicit-GEMM convolutions alike.
//
// Coordinates. A chunk lies along the operand's contiguous dimension. Each thread of the loader
// copies the same tile positions at every K step, so one coordinate of its chunks is fixed for the
// whole kernel and one moves with K:
//   Major::k  operand (rows m or n, K contiguous):  fixed = the row (m or n), moving = k
//   Major::mn operand (rows k, M or N contiguous):  fixed = the column (m or n), moving = k
// A source has two small state types, both held by the loader (tile_loader.h):
//   Slot    what depends on the fixed coordinate only (a pixel's image, row and column; a weight
//           row), made once per kernel by slot(fixed);
//   Cursor  the moving coordinate, made once by cursor(k) (with divisions) and then moved one K
//           tile at a time by advance<STEP>() with adds and compares: for a convolution, k is a
//           tuple such as (kh, kw, c), and stepping the tuple replaces the divisions that
//           splitting k would cost on every copied chunk, in the loop the tensor cores wait on.
// chunk(slot, cursor, p) gives the address and the count of valid elements (0..kChunk; 0 outside
// the operand, where the tile is zero-filled) for the vectorised path; it is only called when the
// launcher has checked that every chunk it returns is 16-byte aligned and contiguous (for the
// convolutions: channels per group a multiple of kChunk, so a chunk never crosses a tap). For the
// element-wise path taken otherwise, element(slot, k, e) gives the bits of element e of the chunk
// at k = k_of(cursor) (0 outside), the plain way.
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
template <class T, Major Mj, bool PointerSlots = !std::is_same_v<T, float>>
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
  // registers, a spill in the forward convolution), so float keeps the bare fixed coordinate, and so
  // does the forward convolution's weight operand (ConvFwdWeights below).
  static constexpr bool kPointerSlots = PointerSlots;
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

  // A matrix's K position is k itself: one add per tile.
  struct Cursor {
    int k;
  };
  __device__ Cursor cursor(int k) const { return {k}; }
  template <int STEP>
  __device__ void advance(Cursor& c) const {
    c.k += STEP;
  }
  __device__ int k_of(const Cursor& c) const { return c.k; }

  // p is left at base for a chunk with no element (cp.async reads 0 bytes from it).
  __device__ int chunk(const Slot& s, const Cursor& cur, const T*& p) const {
    const int moving = cur.k;
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
  // chunk() for a K tile that lies wholly inside K (block_tile.h knows which tiles do: all but a
  // ragged last one). The K bound holds, so only the fixed coordinate's bound is left, and it does
  // not change from tile to tile. A Major::k chunk then has all kChunk elements or none (a count
  // that ptxas turns into a bare predicate on the copy instead of a byte count), and neither layout
  // needs the select of a safe address: a row or column past the end has its slot's pointer at
  // base, so p stays inside the matrix (moving < the K extent) and the copy reads nothing from it.
  // Pointer slots, and index slots of a Major::k operand (the forward convolution's weights):
  // there the row's offset is still a multiply per tile, but the count is whole or nothing.
  __device__ int chunk_inside_k(const Slot& s, const Cursor& cur, const T*& p) const
    requires(kPointerSlots || Mj == Major::k)
  {
    if constexpr (!kPointerSlots) {
      const bool in = s.fixed < rows;
      p = base + (in ? s.fixed * ld : 0) + cur.k;
      return in ? kChunk : 0;
    } else if constexpr (Mj == Major::k) {
      p = s.p + cur.k;
      return s.limit > 0 ? kChunk : 0;
    } else {
      p = s.p + cur.k * ld;
      return s.limit;
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

// The forward convolution's B, the weights [Og, taps*Cg] (Major::k), with index slots: in that kernel
// the pointer slots left ptxas at 128 registers recomputing the shared-memory offset and the row
// pointers per chunk; with index slots its main loop's 16-byte path is 274 instead of 317
// instructions per 32 HMMA (f16, 128x128, sm_90; 296 -> 265 and 80 -> 72 registers at 64x64),
// where the GEMMs and backward weight lost with them (docs/tensor-cores.md, "The third round").
template <class T>
using ConvFwdWeights = MatrixSource<T, Major::k, false>;

// Convolution geometry as the sources use it (int: every extent of the models fits), with its
// divisors as multiply-and-shift (kernels/common/fast_divmod.h): a GPU has no integer divide, and
// the backward-data source still divides by the strides once per tap in the main loop (the rest
// of the splits run once per kernel, in slot() and cursor()).
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
  // Per-kernel constants of the cursor's steps, set by derive() on the host (they live in the
  // kernel's parameter space: no registers): the element offset of one kw step and of one kh step
  // after kw wrapped, and the kw*dw and kh*dh that end a kernel row and the kernel.
  int64_t step_kw = 0, step_kh = 0;
  int kw_end = 0, kh_end = 0;

  void derive() {
    step_kw = static_cast<int64_t>(geo.dw) * ldx;
    step_kh = (static_cast<int64_t>(geo.dh) * geo.W - static_cast<int64_t>(geo.KW) * geo.dw) * ldx;
    kw_end = geo.KW * geo.dw;
    kh_end = geo.KH * geo.dh;
  }

  __device__ ConvFwdASource with_group(int g) const {
    ConvFwdASource s = *this;
    s.x += g * Cg;
    return s;
  }

  // Output pixel m = (n, ho, wo) reads input rows hb + kh*dh and columns wb + kw*dw, hb = ho*sh - ph,
  // wb = wo*sw - pw; off is the element offset of (n, hb, wb), which may lie outside the image
  // (only ever used with a tap that brings it inside). A pixel past M gets hb = kOutside, so that
  // every row it would read is negative: one bounds test rejects it.
  static constexpr int kOutside = -(1 << 29);
  struct Slot {
    int64_t off;
    int hb, wb;
  };
  __device__ Slot slot(int m) const {
    if (m >= M) return {0, kOutside, 0};
    int n, rest, ho, wo;
    geo.by_howo.divmod(m, n, rest);
    geo.by_wo.divmod(rest, ho, wo);
    const int hb = ho * geo.sh - geo.ph, wb = wo * geo.sw - geo.pw;
    return {(static_cast<int64_t>(n) * geo.H * geo.W + static_cast<int64_t>(hb) * geo.W + wb) * ldx, hb, wb};
  }
  // k = (kh, kw, c), c fastest, held as c, the tap's pixel offsets hoff = kh*dh and woff = kw*dw, and
  // off = (hoff*W + woff)*ldx + c. advance<STEP> adds STEP to c and carries whole taps into woff,
  // kernel rows into hoff (one pass of the loop when Cg >= STEP). Past K, hoff >= kh_end.
  struct Cursor {
    int c, woff, hoff;
    int64_t off;
  };
  __device__ Cursor cursor(int k) const {
    int tap, c, kh, kw;
    by_cg.divmod(k, tap, c);
    geo.by_kw.divmod(tap, kh, kw);
    const int hoff = kh * geo.dh, woff = kw * geo.dw;
    return {c, woff, hoff, (static_cast<int64_t>(hoff) * geo.W + woff) * ldx + c};
  }
  template <int STEP>
  __device__ void advance(Cursor& cur) const {
    cur.c += STEP;
    cur.off += STEP;
    while (cur.c >= Cg) {
      cur.c -= Cg;
      cur.off += step_kw - Cg;
      cur.woff += geo.dw;
      if (cur.woff == kw_end) {
        cur.woff = 0;
        cur.hoff += geo.dh;
        cur.off += step_kh;
      }
    }
  }
  __device__ int k_of(const Cursor& cur) const {
    return ((cur.hoff / geo.dh) * geo.KW + cur.woff / geo.dw) * Cg + cur.c;  // element-wise path only
  }

  // Whether (slot, cursor) lies inside the image, and its element offset from x. Plain selects, no
  // branches: nvcc predicates them (unsigned compares for 0 <= h < H).
  __device__ bool inside(const Slot& s, const Cursor& cur) const {
    const int h = s.hb + cur.hoff, w = s.wb + cur.woff;
    return cur.hoff < kh_end && static_cast<unsigned>(h) < static_cast<unsigned>(geo.H) &&
           static_cast<unsigned>(w) < static_cast<unsigned>(geo.W);
  }
  // Vectorised path: Cg is a multiple of kChunk, so an existing chunk is whole.
  __device__ int chunk(const Slot& s, const Cursor& cur, const T*& p) const {
    const bool in = inside(s, cur);
    p = in ? x + (s.off + cur.off) : x;
    return in ? kChunk : 0;
  }
  __device__ typename Element<T>::Bits element(const Slot& s, int k, int e) const {
    const Cursor cur = cursor(k + e);
    return inside(s, cur) ? bits_at(x + (s.off + cur.off)) : 0;
  }
};

// Which input pixels and taps one backward-data GEMM covers (conv2d_tc_impl.h, stride phases):
// the pixels h = h0 + i*step_h (i < Hp) by w = w0 + j*step_w (j < Wp) of every image, and the
// taps kh = kh0 + a*kstep_h (a < KHp) by kw = kw0 + b*kstep_w (b < KWp). The whole problem is
// h0 = kh0 = 0 with steps of 1 (all_pixels_and_taps); a stride phase is the pixels whose
// (h + ph) mod sh is one value, and the taps whose (kh*dh) mod sh is that value: the only taps
// that reach those pixels. Rows m = (n, i, j) and columns k = ((a, b), o), o fastest.
struct DgradCover {
  int h0 = 0, w0 = 0, Hp = 0, Wp = 0, step_h = 1, step_w = 1;
  int kh0 = 0, kw0 = 0, KHp = 0, KWp = 0, kstep_h = 1, kstep_w = 1;
  int kw_end = 0;  // kw0 + KWp*kstep_w: a kw at or past it wraps to the next tap row
  // KWp, kstep_h, kstep_w as divisors (set by finish()): a plain `/` by a runtime value is a long
  // routine, and the element-wise path divides per element inside the main loop, where its
  // registers count against every path's (fast_divmod.h).
  FastDivmod by_kwp, by_kstep_h, by_kstep_w;
  void finish() {
    kw_end = kw0 + KWp * kstep_w;
    by_kwp = FastDivmod(KWp > 0 ? KWp : 1);
    by_kstep_h = FastDivmod(kstep_h);
    by_kstep_w = FastDivmod(kstep_w);
  }
  // The cover's t-th tap (t < KHp*KWp) as (kh, kw).
  __device__ void tap(int t, int& kh, int& kw) const {
    int a, b;
    by_kwp.divmod(t, a, b);
    kh = kh0 + a * kstep_h;
    kw = kw0 + b * kstep_w;
  }
  // The inverse: the index t of the cover's tap (kh, kw).
  __device__ int index(int kh, int kw) const {
    return by_kstep_h.div(kh - kh0) * KWp + by_kstep_w.div(kw - kw0);
  }
};

// Backward data, A[m, k] (Major::k): m = input pixel (n, h, w), k = (kh, kw, o) with o fastest:
//   A[m, k] = dy[n, ho, wo, g*Og + o]  where ho*sh = h + ph - kh*dh and wo*sw = w + pw - kw*dw,
//   0 when either does not divide exactly or falls outside the output.
// Over a DgradCover: m numbers the cover's pixels and k its taps (with o), as above.
template <class T>
struct ConvBwdDataASource {
  static constexpr int kChunk = Element<T>::kChunk;
  const T* dy;
  int64_t lddy;
  ConvGeometry geo;
  int Og, M, K;
  FastDivmod by_og;  // Og
  DgradCover cover;

  __device__ ConvBwdDataASource with_group(int g) const {
    ConvBwdDataASource s = *this;
    s.dy += g * Og;
    return s;
  }

  // Input pixel m = (n, h, w). With hp = h + ph = sh*qh + rh (0 <= rh < sh) and a tap's
  // kh*dh = sh*kq + kr (0 <= kr < sh), hp - kh*dh = sh*(qh - kq) + (rh - kr) with |rh - kr| < sh:
  // the tap reaches an output row exactly when rh == kr, and that row is ho = qh - kq. Likewise
  // for w. So the slot keeps (qh, qw), the phase (rh, rw) packed as rh | rw << 16, and the element
  // offset of dy's (n, qh, qw); the cursor keeps the tap's (kq, kqw), phase and offset. Per chunk a
  // compare of phases and two subtractions remain, where every chunk used to divide by the strides.
  // (For stride 1 the phases are 0 and qh = hp.) A pixel past M gets qh = kOutside: every row it
  // would read is negative.
  static constexpr int kOutside = -(1 << 29);
  struct Slot {
    int64_t off;
    int qh, qw, phase;
  };
  __device__ Slot slot(int m) const {
    if (m >= M) return {0, kOutside, 0, 0};
    const int hw = cover.Hp * cover.Wp;
    const int n = m / hw, rest = m - n * hw, i = rest / cover.Wp, j = rest - i * cover.Wp;
    const int h = cover.h0 + i * cover.step_h, w = cover.w0 + j * cover.step_w;
    int qh, rh, qw, rw;
    geo.by_sh.divmod(h + geo.ph, qh, rh);
    geo.by_sw.divmod(w + geo.pw, qw, rw);
    return {(static_cast<int64_t>(n) * geo.Ho * geo.Wo + static_cast<int64_t>(qh) * geo.Wo + qw) * lddy, qh, qw,
            rh | (rw << 16)};
  }
  // k = (kh, kw, o), o fastest. A tap change (once per Og/STEP tiles) recomputes the tap's part
  // with two divisions by the strides; past K, kh >= KH (the tap after a cover's last is past it).
  struct Cursor {
    int o, kw, kh;
    int kq, kqw, phase;
    int64_t off;  // o - (kq*Wo + kqw)*lddy
  };
  __device__ void set_tap(Cursor& cur) const {
    int kr, krw;
    geo.by_sh.divmod(cur.kh * geo.dh, cur.kq, kr);
    geo.by_sw.divmod(cur.kw * geo.dw, cur.kqw, krw);
    cur.phase = kr | (krw << 16);
    cur.off = cur.o - (static_cast<int64_t>(cur.kq) * geo.Wo + cur.kqw) * lddy;
  }
  __device__ Cursor cursor(int k) const {
    Cursor cur;
    int tap;
    by_og.divmod(k, tap, cur.o);
    cover.tap(tap, cur.kh, cur.kw);
    set_tap(cur);
    return cur;
  }
  template <int STEP>
  __device__ void advance(Cursor& cur) const {
    cur.o += STEP;
    cur.off += STEP;
    if (cur.o >= Og) {
      do {
        cur.o -= Og;
        cur.kw += cover.kstep_w;
        if (cur.kw >= cover.kw_end) {
          cur.kw = cover.kw0;
          cur.kh += cover.kstep_h;
        }
      } while (cur.o >= Og);
      set_tap(cur);
    }
  }
  __device__ int k_of(const Cursor& cur) const { return cover.index(cur.kh, cur.kw) * Og + cur.o; }

  __device__ bool inside(const Slot& s, const Cursor& cur) const {
    const int ho = s.qh - cur.kq, wo = s.qw - cur.kqw;
    return cur.kh < geo.KH && s.phase == cur.phase && static_cast<unsigned>(ho) < static_cast<unsigned>(geo.Ho) &&
           static_cast<unsigned>(wo) < static_cast<unsigned>(geo.Wo);
  }
  // Vectorised path: Og is a multiple of kChunk, so an existing chunk is whole.
  __device__ int chunk(const Slot& s, const Cursor& cur, const T*& p) const {
    const bool in = inside(s, cur);
    p = in ? dy + (s.off + cur.off) : dy;
    return in ? kChunk : 0;
  }
  __device__ typename Element<T>::Bits element(const Slot& s, int k, int e) const {
    const Cursor cur = cursor(k + e);
    return inside(s, cur) ? bits_at(dy + (s.off + cur.off)) : 0;
  }
};

// Backward data, B[k, c] (Major::mn, c contiguous): k = (kh, kw, o) with o fastest,
//   B[k, c] = w[g*Og + o, kh, kw, c]   (w is [O, KH, KW, Cg]).
// Over a DgradCover (the A source's): k numbers the cover's taps (with o).
template <class T>
struct ConvBwdDataBSource {
  static constexpr int kChunk = Element<T>::kChunk;
  const T* w;
  int taps, Og, Cg, K;
  FastDivmod by_og;  // Og
  FastDivmod by_kw;  // KW
  DgradCover cover;

  __device__ ConvBwdDataBSource with_group(int g) const {
    ConvBwdDataBSource s = *this;
    s.w += static_cast<int64_t>(g) * Og * taps * Cg;
    return s;
  }
  struct Slot {
    int c;
  };
  __device__ Slot slot(int c) const { return {c}; }
  // k = (tap, o), o fastest, with tap = kh*KW + kw and off = (o*taps + tap)*Cg; past K, tap >= taps.
  // The cursor holds the tap alone (a Major::mn tile has one cursor per chunk row: registers); the
  // cover's next tap, once per Og/STEP tiles, takes it apart with one FastDivmod.
  struct Cursor {
    int o, tap;
    int64_t off;
  };
  __device__ int first_tap(int t) const {  // the cover's t-th tap
    int kh, kw;
    cover.tap(t, kh, kw);
    return kh * by_kw.d + kw;
  }
  __device__ Cursor cursor(int k) const {
    int o, t;
    by_og.divmod(k, t, o);
    const int tap = first_tap(t);
    return {o, tap, (static_cast<int64_t>(o) * taps + tap) * Cg};
  }
  template <int STEP>
  __device__ void advance(Cursor& cur) const {
    cur.o += STEP;
    cur.off += static_cast<int64_t>(STEP) * taps * Cg;
    if (cur.o >= Og) {
      int kh, kw;
      by_kw.divmod(cur.tap, kh, kw);
      do {
        cur.o -= Og;
        kw += cover.kstep_w;
        if (kw >= cover.kw_end) {
          kw = cover.kw0;
          kh += cover.kstep_h;
        }
      } while (cur.o >= Og);
      cur.tap = kh * by_kw.d + kw;
      cur.off = (static_cast<int64_t>(cur.o) * taps + cur.tap) * Cg;
    }
  }
  __device__ int k_of(const Cursor& cur) const {
    int kh, kw;
    by_kw.divmod(cur.tap, kh, kw);
    return cover.index(kh, kw) * Og + cur.o;
  }
  // Vectorised path: Cg is a multiple of kChunk, so an existing chunk is whole.
  __device__ int chunk(const Slot& s, const Cursor& cur, const T*& p) const {
    const bool in = cur.tap < taps && s.c < Cg;
    p = in ? w + (cur.off + s.c) : w;
    return in ? kChunk : 0;
  }
  __device__ typename Element<T>::Bits element(const Slot& s, int k, int e) const {
    const Cursor cur = cursor(k);
    const int c = s.c + e;
    return cur.tap < taps && c < Cg ? bits_at(w + (cur.off + c)) : 0;
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
  // Per-kernel constants of the cursor's steps, set by derive() on the host: the input column and
  // row one output column (row) further on, the ends of an output row and image in those units, and
  // the element offsets of a step of STEP pixels (without carries), one row carry, one image carry.
  int ws_end = 0, hs_end = 0;
  int64_t step_wo = 0, step_row = 0, step_image = 0;

  void derive() {
    ws_end = geo.Wo * geo.sw;
    hs_end = geo.Ho * geo.sh;
    step_wo = static_cast<int64_t>(geo.sw) * ldx;
    step_row = (static_cast<int64_t>(geo.sh) * geo.W - ws_end) * ldx;
    step_image = (static_cast<int64_t>(geo.H) - hs_end) * geo.W * ldx;
  }

  __device__ ConvBwdWeightBSource with_group(int g) const {
    ConvBwdWeightBSource s = *this;
    s.x += g * Cg;
    return s;
  }
  // Column j = (kh, kw, c): the tap's offsets hoff = kh*dh - ph, woff = kw*dw - pw and the element
  // offset (hoff*W + woff)*ldx + c. A column past J gets hoff = kOutside: every row it would read
  // is negative. j is kept for the element-wise path (element e is column j + e).
  static constexpr int kOutside = -(1 << 29);
  struct Slot {
    int64_t off;
    int hoff, woff, j;
  };
  __device__ Slot slot(int j) const {
    if (j >= J) return {0, kOutside, 0, j};
    const int tap = j / Cg, c = j - tap * Cg;
    const int kh = tap / geo.KW, kw = tap - kh * geo.KW;
    const int hoff = kh * geo.dh - geo.ph, woff = kw * geo.dw - geo.pw;
    return {(static_cast<int64_t>(hoff) * geo.W + woff) * ldx + c, hoff, woff, j};
  }
  // k = output pixel (n, ho, wo), wo fastest, held as ws = wo*sw, hs = ho*sh, n and the element
  // offset ((n*H + hs)*W + ws)*ldx. advance<STEP> adds STEP output columns and carries whole rows
  // into hs, whole images into n (one pass of the loop when Wo >= STEP). Past P, n >= N.
  struct Cursor {
    int ws, hs, n;
    int64_t off;
  };
  __device__ Cursor cursor(int k) const {
    int n, rest, ho, wo;
    geo.by_howo.divmod(k, n, rest);
    geo.by_wo.divmod(rest, ho, wo);
    const int hs = ho * geo.sh, ws = wo * geo.sw;
    return {ws, hs, n, ((static_cast<int64_t>(n) * geo.H + hs) * geo.W + ws) * ldx};
  }
  template <int STEP>
  __device__ void advance(Cursor& cur) const {
    cur.ws += STEP * geo.sw;
    cur.off += STEP * step_wo;
    while (cur.ws >= ws_end) {
      cur.ws -= ws_end;
      cur.hs += geo.sh;
      cur.off += step_row;
      if (cur.hs == hs_end) {
        cur.hs = 0;
        ++cur.n;
        cur.off += step_image;
      }
    }
  }
  __device__ int k_of(const Cursor& cur) const {
    return (cur.n * geo.Ho + cur.hs / geo.sh) * geo.Wo + cur.ws / geo.sw;  // element-wise path only
  }

  __device__ bool inside(const Slot& s, const Cursor& cur) const {
    const int h = cur.hs + s.hoff, w = cur.ws + s.woff;
    return cur.n < geo.N && static_cast<unsigned>(h) < static_cast<unsigned>(geo.H) &&
           static_cast<unsigned>(w) < static_cast<unsigned>(geo.W);
  }
  // Vectorised path: Cg is a multiple of kChunk, so an existing chunk is whole.
  __device__ int chunk(const Slot& s, const Cursor& cur, const T*& p) const {
    const bool in = inside(s, cur);
    p = in ? x + (cur.off + s.off) : x;
    return in ? kChunk : 0;
  }
  __device__ typename Element<T>::Bits element(const Slot& s, int k, int e) const {
    const Slot se = slot(s.j + e);
    const Cursor cur = cursor(k);
    return inside(se, cur) ? bits_at(x + (cur.off + se.off)) : 0;
  }
};

}  // namespace seg::cuda::tc
