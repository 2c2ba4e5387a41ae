// Convolution versions of the CUDA kernel lab, f16 on NHWC activations and [O,KH,KW,Cg] weights,
// each direction (forward, backward data, backward weight) on its own:  lab_tc conv [version]
//
//   v1  naive direct: one thread per output element, the 7-deep loop of the definition (SIMT)
//   v2  implicit GEMM on tensor cores: the im2col addresses computed per 16-byte chunk in the
//       loader, ldmatrix + mma.sync, 128x128x32 tile, one stage, unpadded tiles
//   v3  the product (kernels/cuda/conv2d_tc.h): three cp.async stages, swizzled tiles, tile choice
//       and (backward weight) split-K over the pixels by shape
//   v4  v3's backward weight as it was before 2026-12-07: the old split count (about one block per
//       SM; seg::cuda::split_k_auto has the rule since) and no channel pad for C = 3 (ChannelPad):
//       the A/B of those changes on the GPU. Only backward weight, and only where it differs from
//       v3; elsewhere it is v3 and is not run again
//   v5  cuDNN (GPU build): the baseline
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>

#include "kernels/cuda/conv2d_tc.h"
#include "kernels/cuda/engine.h"
#include "kernels/cuda/engine_cudnn.h"
#include "kernels/cuda/gemm/conv2d_tc_impl.h"
#include "kernels/cuda/launch.h"
#include "kernels/lab/tc_lab.h"

namespace seg::lab {

namespace {

using namespace seg::cuda::tc;

// v1: forward y[p, o], backward data dx[q, c] (a gather over the taps that read pixel q), backward
// weight dw[o, kh, kw, c] (a sum over all output pixels), each one thread per output element.
__global__ void __launch_bounds__(256)
    conv_naive_kernel(ConvShape s, int dir, const __half* x, const __half* w, const __half* dy, __half* out) {
  const int64_t Ho = s.Ho(), Wo = s.Wo(), Cg = s.Cg(), Og = s.Og();
  const int64_t total = dir == 0 ? s.y_numel() : dir == 1 ? s.x_numel() : s.w_numel();
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float acc = 0.0f;
    if (dir == 0) {
      const int64_t o = i % s.O, pix = i / s.O, wo = pix % Wo, ho = (pix / Wo) % Ho, n = pix / (Wo * Ho);
      const int64_t g = o / Og;
      for (int64_t kh = 0; kh < s.KH; ++kh)
        for (int64_t kw = 0; kw < s.KW; ++kw) {
          const int64_t h = ho * s.stride_h - s.pad_h + kh * s.dil_h, ww = wo * s.stride_w - s.pad_w + kw * s.dil_w;
          if (h < 0 || h >= s.H || ww < 0 || ww >= s.W) continue;
          for (int64_t c = 0; c < Cg; ++c)
            acc = __fmaf_rn(__half2float(x[((n * s.H + h) * s.W + ww) * s.C + g * Cg + c]),
                            __half2float(w[((o * s.KH + kh) * s.KW + kw) * Cg + c]), acc);
        }
    } else if (dir == 1) {
      const int64_t c = i % s.C, pix = i / s.C, ww = pix % s.W, h = (pix / s.W) % s.H, n = pix / (s.W * s.H);
      const int64_t g = c / Cg, cg = c % Cg;
      for (int64_t kh = 0; kh < s.KH; ++kh)
        for (int64_t kw = 0; kw < s.KW; ++kw) {
          const int64_t hn = h + s.pad_h - kh * s.dil_h, wn = ww + s.pad_w - kw * s.dil_w;
          if (hn < 0 || wn < 0 || hn % s.stride_h || wn % s.stride_w) continue;
          const int64_t ho = hn / s.stride_h, wo = wn / s.stride_w;
          if (ho >= Ho || wo >= Wo) continue;
          for (int64_t o = g * Og; o < (g + 1) * Og; ++o)
            acc = __fmaf_rn(__half2float(dy[((n * Ho + ho) * Wo + wo) * s.O + o]),
                            __half2float(w[((o * s.KH + kh) * s.KW + kw) * Cg + cg]), acc);
        }
    } else {
      const int64_t c = i % Cg, kw = (i / Cg) % s.KW, kh = (i / (Cg * s.KW)) % s.KH, o = i / (Cg * s.KW * s.KH);
      const int64_t g = o / Og;
      for (int64_t n = 0; n < s.N; ++n)
        for (int64_t ho = 0; ho < Ho; ++ho)
          for (int64_t wo = 0; wo < Wo; ++wo) {
            const int64_t h = ho * s.stride_h - s.pad_h + kh * s.dil_h, ww = wo * s.stride_w - s.pad_w + kw * s.dil_w;
            if (h < 0 || h >= s.H || ww < 0 || ww >= s.W) continue;
            acc = __fmaf_rn(__half2float(dy[((n * Ho + ho) * Wo + wo) * s.O + o]),
                            __half2float(x[((n * s.H + h) * s.W + ww) * s.C + g * Cg + c]), acc);
          }
    }
    out[i] = __float2half_rn(acc);
  }
}

using OneStage = TileShape<128, 128, 32, 2, 4, 1>;
template <Major MA, Major MB, class G>
void run_one_stage(const G& g, seg::cuda::Stream stream) {
  using A = decltype(g.p.a);
  using B = decltype(g.p.b);
  using Kernel = GemmKernel<__half, OneStage, MA, MB, SmemKind::plain, MmaSyncWarpTile, A, B>;
  typename Kernel::Params q{};
  q.a = g.p.a;
  q.b = g.p.b;
  q.M = g.p.M;
  q.N = g.p.N;
  q.K = g.p.K;
  q.vec_a = g.p.vec_a;
  q.vec_b = g.p.vec_b;
  q.ep = g.p.ep;
  launch_gemm<Kernel>(q, g.groups, 1, seg::cuda::TcWorkspace{}, stream);
}

// The automatic split count of backward weight before 2026-12-07: split only when the output
// tiles leave most SMs idle (fewer than half the SMs), to about one block per SM, at least 4 K tiles
// per split, at most 32.
int splits_before_2026_12_07(const ConvShape& s) {
  const ConvDims d = conv_dims(s, "lab v4");
  const int64_t M = d.Og, N = static_cast<int64_t>(d.taps) * d.Cg;
  using L = Tiles<__half>::Large;
  using S = Tiles<__half>::Small;
  const bool large = use_large_tile(seg::cuda::TcTile::automatic, M, N, d.groups);
  const int BM = large ? L::BM : S::BM, BN = large ? L::BN : S::BN, BK = large ? L::BK : S::BK;
  const int64_t tiles = ((M + BM - 1) / BM) * ((N + BN - 1) / BN) * d.groups, k_tiles = (d.P + BK - 1) / BK;
  const int64_t sms = device_sm_count();
  int64_t splits = 1;
  if (2 * tiles < sms) splits = std::min<int64_t>({(sms + tiles - 1) / tiles, k_tiles / 4, 32});
  return static_cast<int>(std::clamp<int64_t>(splits, 1, k_tiles));
}

}  // namespace

const char* conv_dir_name(ConvDir d) {
  return d == ConvDir::forward ? "fwd" : d == ConvDir::backward_data ? "bwd-data" : "bwd-weight";
}

const std::vector<Version>& conv_versions() {
  static const std::vector<Version> v = {
      {1, "naive", "one thread per output element, the definition's loop nest (SIMT)", false},
      {2, "igemm-1stage", "implicit GEMM, ldmatrix + mma.sync, 128x128x32, one stage, unpadded", false},
      {3, "product", "+ 3 cp.async stages, swizzle, tile and split-K by shape (conv2d_tc.h)", false},
      {4, "product-old-split", "v3 with backward weight as before 2026-12-07 (old split count, no channel pad)", false},
      {5, "cudnn", "cuDNN (the baseline)", true},
  };
  return v;
}

std::string take_library_note() { return seg::cuda::cudnn_last_choice(true); }

size_t conv_workspace_bytes(const ConvShape& s) {
  const size_t own = seg::cuda::conv2d_backward_weight_tc_workspace_bytes<seg::f16>(s, {});
  const size_t lib = size_t{256} << 20;  // cuDNN's fastest algorithms may want this much
  return own > lib ? own : lib;
}

std::string conv_plan(const ConvShape& s, ConvDir d) {
  const ConvDims dims = conv_dims(s, "lab_tc conv --plan");
  const int64_t taps = dims.taps;
  // The GEMM of each direction: M x N output, K deep (conv2d_tc_impl.h).
  const int64_t M = d == ConvDir::forward ? dims.P : d == ConvDir::backward_data ? dims.NHW : dims.Og;
  const int64_t N = d == ConvDir::forward ? dims.Og : d == ConvDir::backward_data ? dims.Cg : taps * dims.Cg;
  const int64_t K = d == ConvDir::forward ? taps * dims.Cg : d == ConvDir::backward_data ? taps * dims.Og : dims.P;
  const bool large = use_large_tile(seg::cuda::TcTile::automatic, M, N, dims.groups);
  const int B = large ? 128 : 64;
  const int64_t tiles = ((M + B - 1) / B) * ((N + B - 1) / B) * dims.groups;
  char line[256];
  if (d != ConvDir::backward_weight) {
    std::snprintf(line, sizeof line, "GEMM %lld x %lld x %lld, tile %dx%d, %lld blocks, no split", (long long)M,
                  (long long)N, (long long)K, B, B, (long long)tiles);
    return line;
  }
  // The product pads a C that is not whole 16-byte chunks (ChannelPad) and plans the padded GEMM.
  const ChannelPad pad = channel_pad<seg::f16>(s, {});
  ConvShape sp = s;
  if (pad.applies) sp.C = pad.Cp;
  const ConvDims pd = conv_dims(sp, "lab_tc conv --plan");
  const int64_t Np = taps * pd.Cg;
  const bool large_p = use_large_tile(seg::cuda::TcTile::automatic, M, Np, pd.groups);
  const int Bp = large_p ? 128 : 64;
  const int64_t tiles_p = ((M + Bp - 1) / Bp) * ((Np + Bp - 1) / Bp) * pd.groups;
  const int now = conv_backward_weight_plan<seg::f16>(pd, {}, SIZE_MAX).splits, before = splits_before_2026_12_07(s);
  char padded[64] = "";
  if (pad.applies) std::snprintf(padded, sizeof padded, " (x padded to %lld channels)", (long long)pad.Cp);
  std::snprintf(line, sizeof line,
                "GEMM %lld x %lld x %lld%s, tile %dx%d, %lld tiles x %d splits = %lld blocks (v4, the rule before: "
                "%lld x %lld, %lld tiles x %d splits = %lld blocks)",
                (long long)M, (long long)Np, (long long)K, padded, Bp, Bp, (long long)tiles_p, now,
                (long long)(tiles_p * now), (long long)M, (long long)N, (long long)tiles, before,
                (long long)(tiles * before));
  return line;
}

int run_conv_version(int id, const ConvProblem& p, seg::cuda::Stream stream) {
  seg::cuda::ConvTcArgs args;
  args.workspace = seg::cuda::TcWorkspace{p.workspace, p.workspace_bytes};
  const ConvShape& s = p.s;
  switch (id) {
    case 1: {
      const int64_t total = p.dir == ConvDir::forward ? s.y_numel() : p.dir == ConvDir::backward_data ? s.x_numel() : s.w_numel();
      const int64_t blocks = (total + 255) / 256 < 65536 ? (total + 255) / 256 : 65536;
      SEG_LAUNCH(conv_naive_kernel, static_cast<unsigned>(blocks), 256, 0, stream, s, static_cast<int>(p.dir),
                 reinterpret_cast<const __half*>(p.x), reinterpret_cast<const __half*>(p.w),
                 reinterpret_cast<const __half*>(p.dy), reinterpret_cast<__half*>(p.out));
      return true;
    }
    case 2:
      if (p.dir == ConvDir::forward)
        run_one_stage<Major::k, Major::k>(forward_gemm<seg::f16>(s, p.x, p.w, nullptr, p.out, args), stream);
      else if (p.dir == ConvDir::backward_data)
        run_one_stage<Major::k, Major::mn>(backward_data_gemm<seg::f16>(s, p.w, p.dy, p.out, args), stream);
      else
        run_one_stage<Major::mn, Major::mn>(backward_weight_gemm<seg::f16>(s, p.x, p.dy, p.out, args), stream);
      return true;
    case 3:
      if (p.dir == ConvDir::forward)
        seg::cuda::conv2d_forward_tc<seg::f16>(s, p.x, p.w, nullptr, p.out, stream, args);
      else if (p.dir == ConvDir::backward_data)
        seg::cuda::conv2d_backward_data_tc<seg::f16>(s, p.w, p.dy, p.out, stream, args);
      else
        seg::cuda::conv2d_backward_weight_tc<seg::f16>(s, p.x, p.dy, p.out, nullptr, stream, args);
      return true;
    case 4: {
      // The product as it was before 2026-12-07: the old split count, and no channel pad (its
      // workspace holds only the split partials, so conv_backward_weight_impl does not pad).
      if (p.dir != ConvDir::backward_weight) return kSameAsProduct;
      const ConvDims dims = conv_dims(s, "lab v4");
      const int before = splits_before_2026_12_07(s);
      const bool pads = channel_pad<seg::f16>(s, {}).applies;
      if (!pads && before == conv_backward_weight_plan<seg::f16>(dims, {}, SIZE_MAX).splits) return kSameAsProduct;
      const size_t partials = before > 1 ? static_cast<size_t>(before) * dims.groups * dims.Og * dims.taps * dims.Cg * 4 : 0;
      args.options.split_k = before;
      args.workspace.bytes = std::min(args.workspace.bytes, partials);
      seg::cuda::conv2d_backward_weight_tc<seg::f16>(s, p.x, p.dy, p.out, nullptr, stream, args);
      return true;
    }
    case 5:
      if (!seg::cuda::engine_available(seg::cuda::Engine::cudnn)) return false;
      if (p.dir == ConvDir::forward)
        seg::cuda::conv2d_forward_cudnn<seg::f16>(s, p.x, p.w, nullptr, p.out, stream, args);
      else if (p.dir == ConvDir::backward_data)
        seg::cuda::conv2d_backward_data_cudnn<seg::f16>(s, p.w, p.dy, p.out, stream, args);
      else
        seg::cuda::conv2d_backward_weight_cudnn<seg::f16>(s, p.x, p.dy, p.out, nullptr, stream, args);
      return true;
    default: return false;
  }
}

}  // namespace seg::lab
