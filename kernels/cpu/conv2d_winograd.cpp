// Winograd convolution drivers: tiling, blocking, the transforms and the GEMMs (math and layout in
// conv2d_winograd.h).
//
// Layouts (all float, rows contiguous):
//   U[xi][n][k]  (forward)  or  U[xi][k][n]  (backward data)   transformed weights of one block
//   V[xi][t][k]     transformed input tiles of one thread's block of tiles
//   M[xi][t][n]     the GEMM products of one super-block of tiles, summed over the K blocks
// where k runs over the GEMM's depth (input channels of the convolution being computed), n over its
// outputs, t over tiles, xi over the alpha^2 tile positions.
#include "kernels/cpu/conv2d_winograd.h"

#include <algorithm>
#include <vector>

#include "kernels/cpu/conv2d.h"
#include "kernels/cpu/conv2d_winograd_matrices.h"
#include "kernels/cpu/conv2d_winograd_transform.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/thread_pool.h"

namespace seg::cpu {

using winograd::TileFn;
using winograd::Transform;

namespace {

// The scratch limits (header). They depend on nothing but themselves, so the blocking, and with it
// every sum's order, is a function of the shape only, never of the thread count.
WinogradLimits& limits() {
  static WinogradLimits l;
  return l;
}

// A stride-1 3x3 convolution in forward form: backward data is one too (header).
struct Problem {
  int64_t N, H, W, K;     // input [N, H, W, K]
  int64_t Ho, Wo, Nc;     // output [N, Ho, Wo, Nc]
  int64_t pad_h, pad_w;   // may be negative (backward data when pad > 2 * dilation)
  int64_t dil_h, dil_w;
};

// Where the tiles lie. Along one axis of n_out outputs with dilation d: for each residue r < d,
// the outputs r, r + d, r + 2d, ... in runs of m, so a tile's outputs (and inputs) are d apart.
std::vector<int64_t> tile_origins(int64_t n_out, int64_t d, int m) {
  std::vector<int64_t> origins;
  for (int64_t r = 0; r < std::min(d, n_out); ++r) {
    const int64_t members = (n_out - r + d - 1) / d;
    for (int64_t k = 0; k < members; k += m) origins.push_back(r + k * d);
  }
  return origins;
}

struct Tiling {
  int m, alpha, a2;
  std::vector<int64_t> oh, ow;
  int64_t per_image, count;
  Tiling(int m_, int64_t N, int64_t Ho, int64_t Wo, int64_t dil_h, int64_t dil_w)
      : m(m_), alpha(m_ + 2), a2((m_ + 2) * (m_ + 2)), oh(tile_origins(Ho, dil_h, m_)), ow(tile_origins(Wo, dil_w, m_)) {
    per_image = static_cast<int64_t>(oh.size() * ow.size());
    count = N * per_image;
  }
  int64_t image(int64_t t) const { return t / per_image; }
  int64_t row0(int64_t t) const { return oh[static_cast<size_t>((t % per_image) / static_cast<int64_t>(ow.size()))]; }
  int64_t col0(int64_t t) const { return ow[static_cast<size_t>(t % static_cast<int64_t>(ow.size()))]; }
};

// Per-thread buffers that grow and are kept (header: "Scratch").
float* grow(std::vector<float>& v, int64_t n) {
  if (static_cast<int64_t>(v.size()) < n) v.resize(static_cast<size_t>(n));
  return v.data();
}
const float* zeros(int64_t n) {  // read where a tile reaches outside the input
  thread_local std::vector<float> z;
  if (static_cast<int64_t>(z.size()) < n) z.resize(static_cast<size_t>(n), 0.0f);
  return z.data();
}
float* discard(int64_t n) {  // written where a tile reaches past the output
  thread_local std::vector<float> d;
  return grow(d, n);
}

// The alpha x alpha input elements of tile t (channel k0 on): x[n, h0 + a*dil_h, w0 + b*dil_w, k0].
void input_pointers(const Problem& p, const Tiling& tl, int64_t t, const float* x, int64_t k0, const float* zero,
                    const float** out) {
  const int64_t n = tl.image(t), h0 = tl.row0(t) - p.pad_h, w0 = tl.col0(t) - p.pad_w;
  for (int a = 0; a < tl.alpha; ++a) {
    const int64_t h = h0 + a * p.dil_h;
    for (int b = 0; b < tl.alpha; ++b) {
      const int64_t w = w0 + b * p.dil_w;
      const bool inside = h >= 0 && h < p.H && w >= 0 && w < p.W;
      out[a * tl.alpha + b] = inside ? x + ((n * p.H + h) * p.W + w) * p.K + k0 : zero;
    }
  }
}

// The m x m output elements of tile t in an [N, Ho, Wo, C] tensor (channel c0 on); `outside` where
// the tile runs past the edge. Const-agnostic: used for y (written) and dy (read).
template <class P>
void output_pointers(const Tiling& tl, int64_t t, int64_t Ho, int64_t Wo, int64_t dil_h, int64_t dil_w, int64_t C,
                     P* y, int64_t c0, P* outside, P** out) {
  const int64_t n = tl.image(t), h0 = tl.row0(t), w0 = tl.col0(t);
  for (int i = 0; i < tl.m; ++i) {
    const int64_t h = h0 + i * dil_h;
    for (int j = 0; j < tl.m; ++j) {
      const int64_t w = w0 + j * dil_w;
      out[i * tl.m + j] = h < Ho && w < Wo ? y + ((n * Ho + h) * Wo + w) * C + c0 : outside;
    }
  }
}

// The weights as the GEMM's B: forward (U[xi][n][k] from w[n, kh, kw, k]) or backward data
// (U[xi][k][n] from w[k, 2-kh, 2-kw, n]: flipped in space, the channel roles swapped).
struct Weights {
  const float* w;
  bool flipped;
  int64_t C;  // w's last dimension

  void transform(TileFn fn, const Tiling& tl, int64_t n0, int64_t nb, int64_t k0, int64_t kb, float* U) const {
    const int64_t rows = flipped ? kb : nb, cols = flipped ? nb : kb;
    parallel_for(0, rows, 4, [&](int64_t r0, int64_t r1) {
      const float* g[9];
      float* dst[winograd::kMaxAlpha * winograd::kMaxAlpha];
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t o = flipped ? k0 + r : n0 + r, c0 = flipped ? n0 : k0;
        for (int a = 0; a < 3; ++a)
          for (int b = 0; b < 3; ++b) {
            const int64_t kh = flipped ? 2 - a : a, kw = flipped ? 2 - b : b;
            g[a * 3 + b] = w + ((o * 3 + kh) * 3 + kw) * C + c0;
          }
        for (int xi = 0; xi < tl.a2; ++xi) dst[xi] = U + (xi * rows + r) * cols;
        fn(g, dst, cols, nullptr);
      }
    });
  }
  // B^T(n, k) of tile position xi.
  MatrixPacker<float> packer(const float* U, int xi, int64_t nb, int64_t kb) const {
    const float* u = U + xi * nb * kb;
    return flipped ? MatrixPacker<float>(u, 1, nb) : MatrixPacker<float>(u, kb, 1);
  }
};

int64_t round_block(int64_t want, int64_t full) {
  const int64_t b = limits().channel_block;
  return std::min(std::max(want / b * b, b), full);
}

// y = conv(x, w) (+ bias) for a stride-1 3x3 problem in forward form.
void winograd_conv(int m, const Problem& p, const Weights& ws, const float* x, const float* bias, float* y) {
  const Tiling tl(m, p.N, p.Ho, p.Wo, p.dil_h, p.dil_w);
  const int a2 = tl.a2;
  const int64_t T = tl.count;
  const WinogradLimits lim = limits();
  int64_t kb = p.K, nb = p.Nc;
  if (a2 * p.K * p.Nc > lim.weight_floats) {
    if (p.K >= p.Nc) kb = round_block(lim.weight_floats / (a2 * p.Nc), p.K);
    else nb = round_block(lim.weight_floats / (a2 * p.K), p.Nc);
  }
  const int64_t SB = std::clamp<int64_t>(lim.product_floats / (a2 * nb), 1, T);
  thread_local std::vector<float> u_buf, m_buf;
  float* U = grow(u_buf, a2 * kb * nb);
  float* M = grow(m_buf, a2 * SB * nb);
  const TileFn f_in = winograd::tile_transform(m, Transform::input);
  const TileFn f_w = winograd::tile_transform(m, Transform::weight);
  const TileFn f_out = winograd::tile_transform(m, Transform::output);
  const int threads = in_parallel_region() ? 1 : num_threads();
  int64_t u_n0 = -1, u_k0 = -1;  // the block U holds now

  for (int64_t n0 = 0; n0 < p.Nc; n0 += nb) {
    const int64_t nbc = std::min(nb, p.Nc - n0);
    for (int64_t s0 = 0; s0 < T; s0 += SB) {
      const int64_t sbc = std::min(SB, T - s0);
      for (int64_t k0 = 0; k0 < p.K; k0 += kb) {
        const int64_t kbc = std::min(kb, p.K - k0);
        const bool last_k = k0 + kbc == p.K;
        if (u_n0 != n0 || u_k0 != k0) {
          ws.transform(f_w, tl, n0, nbc, k0, kbc, U);
          u_n0 = n0, u_k0 = k0;
        }
        // Blocks of tiles: one per thread unless V would outgrow its budget.
        const int64_t per_thread = (sbc + threads - 1) / threads;
        const int64_t tb_max = std::max<int64_t>(1, lim.input_floats / (a2 * kbc));
        const int64_t rounds = (per_thread + tb_max - 1) / tb_max;
        const int64_t tb = std::max<int64_t>(1, (sbc + threads * rounds - 1) / (threads * rounds));
        const int64_t blocks = (sbc + tb - 1) / tb;
        const int gemm_threads = blocks == 1 ? 0 : 1;  // one block: let the GEMM use the pool itself
        parallel_for(0, blocks, 1, [&](int64_t b0, int64_t b1) {
          thread_local std::vector<float> v_buf;
          float* V = grow(v_buf, a2 * tb * kbc);
          const float* zero = zeros(kbc);
          float* junk = discard(nbc);
          const float* src[winograd::kMaxAlpha * winograd::kMaxAlpha];
          float* dst[winograd::kMaxAlpha * winograd::kMaxAlpha];
          for (int64_t b = b0; b < b1; ++b) {
            const int64_t t0 = s0 + b * tb, tc = std::min(tb, s0 + sbc - t0);
            for (int64_t t = 0; t < tc; ++t) {
              input_pointers(p, tl, t0 + t, x, k0, zero, src);
              for (int xi = 0; xi < a2; ++xi) dst[xi] = V + (xi * tc + t) * kbc;
              f_in(src, dst, kbc, nullptr);
            }
            for (int xi = 0; xi < a2; ++xi) {
              const MatrixPacker<float> a(V + xi * tc * kbc, kbc, 1);
              gemm({tc, nbc, kbc}, a, ws.packer(U, xi, nbc, kbc), M + (xi * sbc + (t0 - s0)) * nbc, nbc, k0 > 0,
                   gemm_threads);
            }
            if (!last_k) continue;
            for (int64_t t = 0; t < tc; ++t) {
              for (int xi = 0; xi < a2; ++xi) src[xi] = M + (xi * sbc + (t0 - s0 + t)) * nbc;
              output_pointers(tl, t0 + t, p.Ho, p.Wo, p.dil_h, p.dil_w, p.Nc, y, n0, junk, dst);
              f_out(src, dst, nbc, bias ? bias + n0 : nullptr);
            }
          }
        });
      }
    }
  }
}

}  // namespace

WinogradLimits winograd_limits() { return limits(); }
void set_winograd_limits(const WinogradLimits& l) { limits() = l; }

bool conv2d_winograd_applicable(const ConvShape& s) {
  return s.KH == 3 && s.KW == 3 && s.stride_h == 1 && s.stride_w == 1 && s.groups == 1;
}

void conv2d_forward_winograd(int m, const ConvShape& s, const float* x, const float* w, const float* b, float* y) {
  const Problem p{s.N, s.H, s.W, s.C, s.Ho(), s.Wo(), s.O, s.pad_h, s.pad_w, s.dil_h, s.dil_w};
  winograd_conv(m, p, Weights{w, false, s.C}, x, b, y);
}

// dx[h] = sum_{kh, o} dy[h + pad - kh*d, o] w[o, kh, c] = sum_a dy[h - (2d - pad) + a*d, o] w[o, 2-a, c].
void conv2d_backward_data_winograd(int m, const ConvShape& s, const float* w, const float* dy, float* dx) {
  const Problem p{s.N, s.Ho(), s.Wo(), s.O, s.H, s.W, s.C,
                  2 * s.dil_h - s.pad_h, 2 * s.dil_w - s.pad_w, s.dil_h, s.dil_w};
  winograd_conv(m, p, Weights{w, true, s.C}, dy, nullptr, dx);
}

void conv2d_backward_weight_winograd(int m, const ConvShape& s, const float* x, const float* dy, float* dw, float* db) {
  if (dw) {
    const int64_t Ho = s.Ho(), Wo = s.Wo();
    const Problem p{s.N, s.H, s.W, s.C, Ho, Wo, s.O, s.pad_h, s.pad_w, s.dil_h, s.dil_w};
    const Tiling tl(m, s.N, Ho, Wo, s.dil_h, s.dil_w);
    const int a2 = tl.a2;
    const int64_t T = tl.count, O = s.O;
    const WinogradLimits lim = limits();
    const int64_t cb = a2 * O * s.C > lim.weight_floats ? round_block(lim.weight_floats / (a2 * O), s.C) : s.C;
    const int64_t chunk = std::clamp<int64_t>(lim.product_floats / (a2 * (cb + O)), 1, T);  // tiles per GEMM depth
    thread_local std::vector<float> du_buf, v_buf, mdy_buf;
    float* dU = grow(du_buf, a2 * O * cb);
    float* V = grow(v_buf, a2 * chunk * cb);
    float* Mdy = grow(mdy_buf, a2 * chunk * O);
    const TileFn f_in = winograd::tile_transform(m, Transform::input);
    const TileFn f_dy = winograd::tile_transform(m, Transform::out_grad);
    const TileFn f_dw = winograd::tile_transform(m, Transform::weight_grad);
    for (int64_t c0 = 0; c0 < s.C; c0 += cb) {
      const int64_t cbc = std::min(cb, s.C - c0);
      for (int64_t t0 = 0; t0 < T; t0 += chunk) {
        const int64_t tc = std::min(chunk, T - t0);
        parallel_for(0, tc, 8, [&](int64_t lo, int64_t hi) {
          const float* zero = zeros(std::max(cbc, O));
          const float* src[winograd::kMaxAlpha * winograd::kMaxAlpha];
          float* dst[winograd::kMaxAlpha * winograd::kMaxAlpha];
          for (int64_t t = lo; t < hi; ++t) {
            input_pointers(p, tl, t0 + t, x, c0, zero, src);
            for (int xi = 0; xi < a2; ++xi) dst[xi] = V + (xi * tc + t) * cbc;
            f_in(src, dst, cbc, nullptr);
            output_pointers<const float>(tl, t0 + t, Ho, Wo, s.dil_h, s.dil_w, O, dy, 0, zero, src);
            for (int xi = 0; xi < a2; ++xi) dst[xi] = Mdy + (xi * tc + t) * O;
            f_dy(src, dst, O, nullptr);
          }
        });
        // dU_xi[o, c] (+)= sum_t Mdy_xi[t, o] V_xi[t, c]: the alpha^2 GEMMs side by side.
        parallel_for(0, a2, 1, [&](int64_t x0, int64_t x1) {
          for (int64_t xi = x0; xi < x1; ++xi) {
            const MatrixPacker<float> a(Mdy + xi * tc * O, 1, O);    // A(o, t)
            const MatrixPacker<float> bt(V + xi * tc * cbc, 1, cbc); // B^T(c, t)
            gemm({O, cbc, tc}, a, bt, dU + xi * O * cbc, cbc, t0 > 0, 1);
          }
        });
      }
      parallel_for(0, O, 4, [&](int64_t o0, int64_t o1) {
        const float* src[winograd::kMaxAlpha * winograd::kMaxAlpha];
        float* dst[9];
        for (int64_t o = o0; o < o1; ++o) {
          for (int xi = 0; xi < a2; ++xi) src[xi] = dU + (xi * O + o) * cbc;
          for (int k = 0; k < 9; ++k) dst[k] = dw + (o * 9 + k) * s.C + c0;
          f_dw(src, dst, cbc, nullptr);
        }
      });
    }
  }
  if (db) conv2d_backward_weight_gemm<float>(s, x, dy, nullptr, db);
}

}  // namespace seg::cpu
