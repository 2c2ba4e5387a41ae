// Convolution versions of the CUDA kernel lab, f16 or f32 (TF32 tensor cores, O0's default) on NHWC
// activations and [O,KH,KW,Cg] weights, each direction (forward, backward data, backward weight) on
// its own:  lab_tc conv [version] [--dtype f16|f32]. In f32 the product's kernels are the TF32 WMMA
// ones; v2 and v6 are f16 only.
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
//   v6  v3's backward data with the weights transposed once per call (a tiled transpose into the
//       workspace, [g][Cg][KH*KW][Og]) so that its B operand is K-major like forward's weights:
//       the same GEMM orientation as forward (A and B K-major) instead of B N-major. The first H200
//       run had backward data at half forward's speed on the same layers with a no longer main
//       loop; this is the A/B of one suspect. Only backward data; elsewhere it is v3. One GEMM
//       over every tap (its weight source reads whole rows of the transposed weights), so on a
//       strided layer it has no stride phases: compare it with v7 there, with v3 elsewhere
//   v7  v3's backward data as before 2026-12-07 on strided layers: one GEMM over every (pixel,
//       tap) pair instead of one per stride phase (ConvTcArgs::stride_phases). Only backward data
//       of strided layers; elsewhere it is v3
//   v8  v3's backward with the large tile's kernels as before 2026-12-07, one block of 8 warps
//       per SM where v3's have two (block_tile.h, min_blocks_per_sm): f16 backward weight without
//       its launch bound (160 registers against 128 and a longer main loop); f32 backward data and
//       weight on the BK 16 tile (184-192 registers) instead of BK 8 with 4 stages. Only those
//       directions with the large tile (and, for backward weight, no channel pad); elsewhere v3.
//       (The f32 kernels are WMMA's, with today's fragment loads: v9 below is the family A/B.)
//   v9  f32 only: v3 on TF32 WMMA m16n16k8 (TcFamily::wmma), the product's TF32 family before
//       2026-12-07, where v3 runs mma.sync m16n8k8: the A/B of that switch
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <type_traits>

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
__device__ __forceinline__ float to_f32(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_f32(float v) { return v; }
__device__ __forceinline__ void store_as(__half* p, float v) { *p = __float2half_rn(v); }
__device__ __forceinline__ void store_as(float* p, float v) { *p = v; }

template <class DT>
__global__ void __launch_bounds__(256)
    conv_naive_kernel(ConvShape s, int dir, const DT* x, const DT* w, const DT* dy, DT* out) {
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
            acc = __fmaf_rn(to_f32(x[((n * s.H + h) * s.W + ww) * s.C + g * Cg + c]),
                            to_f32(w[((o * s.KH + kh) * s.KW + kw) * Cg + c]), acc);
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
            acc = __fmaf_rn(to_f32(dy[((n * Ho + ho) * Wo + wo) * s.O + o]),
                            to_f32(w[((o * s.KH + kh) * s.KW + kw) * Cg + cg]), acc);
        }
    } else {
      const int64_t c = i % Cg, kw = (i / Cg) % s.KW, kh = (i / (Cg * s.KW)) % s.KH, o = i / (Cg * s.KW * s.KH);
      const int64_t g = o / Og;
      for (int64_t n = 0; n < s.N; ++n)
        for (int64_t ho = 0; ho < Ho; ++ho)
          for (int64_t wo = 0; wo < Wo; ++wo) {
            const int64_t h = ho * s.stride_h - s.pad_h + kh * s.dil_h, ww = wo * s.stride_w - s.pad_w + kw * s.dil_w;
            if (h < 0 || h >= s.H || ww < 0 || ww >= s.W) continue;
            acc = __fmaf_rn(to_f32(dy[((n * Ho + ho) * Wo + wo) * s.O + o]),
                            to_f32(x[((n * s.H + h) * s.W + ww) * s.C + g * Cg + c]), acc);
          }
    }
    store_as(out + i, acc);
  }
}

using OneStage = TileShape<128, 128, 32, 2, 4, 1>;
template <Major MA, Major MB, class G>
void run_one_stage(const G& g, seg::cuda::Stream stream) {
  using A = decltype(g.p.a);
  using B = decltype(g.p.b);
  using Kernel = GemmKernel<__half, OneStage, MA, MB, SmemKind::plain, MmaSyncWarpTile, A, B>;
  launch_gemm_args<Kernel>(g.p, g.groups, 1, seg::cuda::TcWorkspace{}, stream);
}

// The automatic split count of backward weight before 2026-12-07: split only when the output
// tiles leave most SMs idle (fewer than half the SMs), to about one block per SM, at least 4 K tiles
// per split, at most 32.
template <class DT>
int splits_before_2026_12_07(const ConvShape& s) {
  const ConvDims d = conv_dims(s, "lab v4");
  const int64_t M = d.Og, N = static_cast<int64_t>(d.taps) * d.Cg;
  using L = typename Tiles<DT>::Backward;
  using S = typename Tiles<DT>::Small;
  const bool large = use_large_tile(seg::cuda::TcTile::automatic, M, N, d.groups);
  const int BM = large ? L::BM : S::BM, BN = large ? L::BN : S::BN, BK = large ? L::BK : S::BK;
  const int64_t tiles = ((M + BM - 1) / BM) * ((N + BN - 1) / BN) * d.groups, k_tiles = (d.P + BK - 1) / BK;
  const int64_t sms = device_sm_count();
  int64_t splits = 1;
  if (2 * tiles < sms) splits = std::min<int64_t>({(sms + tiles - 1) / tiles, k_tiles / 4, 32});
  return static_cast<int>(std::clamp<int64_t>(splits, 1, k_tiles));
}

// v6's transpose of one group's weights: for every tap t, src[o][t][c] (rows of taps*Cg) ->
// dst[c][t][o] (rows of taps*Og), through a 32x34 shared tile so that both the reads (along c) and
// the writes (along o) are coalesced. Rows of 34 halves are 17 words, an odd count, so the column
// a warp reads lies in 32 different banks (33 halves would not do it for 2-byte elements).
// Grid: (ceil(Cg/32), ceil(Og/32), groups*taps), 32x8 threads.
__global__ void __launch_bounds__(256)
    transpose_weights_kernel(const __half* w, __half* wt, int groups, int taps, int Og, int Cg) {
  __shared__ __half tile[32][34];
  const int t = static_cast<int>(blockIdx.z) % taps, g = static_cast<int>(blockIdx.z) / taps;
  const int c0 = static_cast<int>(blockIdx.x) * 32, o0 = static_cast<int>(blockIdx.y) * 32;
  const int64_t group = static_cast<int64_t>(g) * Og * taps * Cg;  // the same size in both layouts
  for (int r = threadIdx.y; r < 32; r += 8) {
    const int o = o0 + r, c = c0 + static_cast<int>(threadIdx.x);
    if (o < Og && c < Cg) tile[r][threadIdx.x] = w[group + (static_cast<int64_t>(o) * taps + t) * Cg + c];
  }
  __syncthreads();
  for (int r = threadIdx.y; r < 32; r += 8) {
    const int c = c0 + r, o = o0 + static_cast<int>(threadIdx.x);
    if (c < Cg && o < Og) wt[group + (static_cast<int64_t>(c) * taps + t) * Og + o] = tile[threadIdx.x][r];
  }
}

// v6: backward data as v3 runs it, but with B = the transposed weights read K-major (the forward
// convolution's weight source over [g][Cg][taps*Og]). The transpose is timed with the GEMM.
void backward_data_k_major_weights(const ConvProblem& p, const seg::cuda::ConvTcArgs& args, seg::cuda::Stream stream) {
  const ConvShape& s = p.s;
  const ConvDims d = conv_dims(s, "lab v6");
  const size_t wt_bytes = (static_cast<size_t>(s.w_numel()) * sizeof(__half) + 255) / 256 * 256;
  if (args.workspace.bytes < wt_bytes) throw std::runtime_error("lab v6: the workspace cannot hold the transposed weights");
  auto* wt = static_cast<__half*>(args.workspace.data);
  const dim3 grid((d.Cg + 31) / 32, (d.Og + 31) / 32, d.groups * d.taps);
  SEG_LAUNCH(transpose_weights_kernel, grid, dim3(32, 8), 0, stream, reinterpret_cast<const __half*>(p.w), wt,
             d.groups, d.taps, d.Og, d.Cg);
  const auto g = backward_data_gemm<seg::f16>(s, static_cast<const seg::f16*>(p.w), static_cast<const seg::f16*>(p.dy),
                                              static_cast<seg::f16*>(p.out), args);
  const int K = d.taps * d.Og;
  GemmArgs<ConvBwdDataASource<__half>, ConvFwdWeights<__half>> q;
  q.a = g.p.a;
  q.b = ConvFwdWeights<__half>{wt, K, d.Cg, K, static_cast<int64_t>(d.Cg) * K};
  q.M = g.p.M;
  q.N = g.p.N;
  q.K = g.p.K;
  q.vec_a = g.p.vec_a;
  q.vec_b = K % Element<__half>::kChunk == 0;  // wt is the workspace's start: 256-byte aligned
  q.ep = g.p.ep;
  const seg::cuda::TcWorkspace rest{static_cast<char*>(args.workspace.data) + wt_bytes, args.workspace.bytes - wt_bytes};
  // The product's kernels for these orientations (dispatch_gemm's mma.sync choice), except that
  // the large tile keeps one main-loop form, and B is the forward's weight source (a bare row
  // index), not the GEMM's (a row pointer): with the inside-K copies this kernel took 168
  // registers on sm_90, with the GEMM's source 165, either one block per SM where v3's backward
  // data has 128 registers and two. As built here it has 128 (`cuobjdump -res-usage` on
  // build-gpu's conv_tc_lab.cu.o), at the cost of a longer loop: a steady trip of 325
  // instructions per 32 HMMA against v3's 216 (tools/sass_loop_report.py). The first run had
  // backward data at one HMMA per ~55 clocks per scheduler, with ~7 instructions to issue per
  // HMMA: stalls, not issue, so the orientation can still show through the longer loop.
  auto go = [&](auto kernel_tag) {
    launch_gemm_args<typename decltype(kernel_tag)::type>(q, g.groups, args.options.split_k, rest, stream);
  };
  using A = ConvBwdDataASource<__half>;
  using B = ConvFwdWeights<__half>;
  if (use_large_tile(args.options.tile, q.M, q.N, g.groups))
    go(std::type_identity<GemmKernel<__half, Tiles<__half>::Large, Major::k, Major::k, SmemKind::swizzled, MmaSyncWarpTile, A, B>>{});
  else
    go(std::type_identity<GemmKernel<__half, Tiles<__half>::Small, Major::k, Major::k, SmemKind::swizzled, MmaSyncWarpTile, A, B>>{});
}

// v8's kernels: the large tile's backward kernels as before 2026-12-07, with no launch bound
// (MinBlocks_ = 0): f16 the product's tile and main loop (dispatch_gemm's mma.sync choice), f32 the
// BK 16 tile that the forward convolution keeps.
template <class DT, Major MA, Major MB, class A, class B>
struct OneBlockKernel;
template <Major MA, Major MB, class A, class B>
struct OneBlockKernel<__half, MA, MB, A, B> {
  using type = GemmKernel<__half, Tiles<__half>::Backward, MA, MB, SmemKind::swizzled, MmaSyncWarpTile, A, B,
                          Plant::none, MainLoop::barrier_first, true, 0>;
};
template <Major MA, Major MB, class A, class B>
struct OneBlockKernel<float, MA, MB, A, B> {
  using type = GemmKernel<float, Tiles<float>::Large, MA, MB, SmemKind::padded, WmmaWarpTile, A, B, Plant::none,
                          MainLoop::barrier_first, false, 0>;
};

// v8, backward weight: as v3 runs it (the same GEMM and workspace; the split plan is launch_gemm's
// for that kernel's tile). v3 takes the same path when the large tile is chosen and the channels
// need no pad; the caller checks both.
template <class T>
void backward_weight_one_block(const ConvProblem& p, const seg::cuda::ConvTcArgs& args, seg::cuda::Stream stream) {
  using DT = device_t<T>;
  const auto g = backward_weight_gemm<T>(p.s, static_cast<const T*>(p.x), static_cast<const T*>(p.dy),
                                         static_cast<T*>(p.out), args);
  using Kernel =
      typename OneBlockKernel<DT, Major::mn, Major::mn, MatrixSource<DT, Major::mn>, ConvBwdWeightBSource<DT>>::type;
  launch_gemm_args<Kernel>(g.p, g.groups, args.options.split_k, args.workspace, stream);
}

// v8, backward data (f32 only: f16's backward data already had two blocks per SM): v3's stride
// phases and zero fills (the product's loop), each phase's GEMM with the one-block kernel where the
// large tile is chosen.
void backward_data_one_block(const ConvProblem& p, const seg::cuda::ConvTcArgs& args, seg::cuda::Stream stream) {
  using A = ConvBwdDataASource<float>;
  using B = ConvBwdDataBSource<float>;
  for_each_dgrad_gemm(p.s, static_cast<const float*>(p.w), static_cast<const float*>(p.dy), static_cast<float*>(p.out),
                      stream, args, [&](const auto& g) {
                        if (use_large_tile(args.options.tile, g.p.M, g.p.N, g.groups))
                          launch_gemm_args<OneBlockKernel<float, Major::k, Major::mn, A, B>::type>(
                              g.p, g.groups, args.options.split_k, args.workspace, stream);
                        else
                          launch_gemm_args<GemmKernel<float, Tiles<float>::Small, Major::k, Major::mn,
                                                      SmemKind::padded, WmmaWarpTile, A, B>>(
                              g.p, g.groups, args.options.split_k, args.workspace, stream);
                      });
}

// Whether any GEMM of v3's backward data would take the large tile (else v8 is v3).
bool backward_data_takes_large(const ConvShape& s, seg::cuda::TcTile tile) {
  const ConvDims d = conv_dims(s, "lab v8");
  for (const DgradCover& c : dgrad_covers(s, true))
    if (c.KHp > 0 && c.KWp > 0 && use_large_tile(tile, s.N * c.Hp * c.Wp, d.Cg, d.groups)) return true;
  return false;
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
      {6, "bwd-data-w-kmajor", "v3 with backward data's weights transposed once, read K-major as forward's", false},
      {7, "product-no-phases", "v3 with strided backward data as one GEMM over every tap, as before 2026-12-07", false},
      {8, "bwd-1-block", "v3 with backward's large-tile kernels as before: 1 block per SM (f16 weight; f32 data, weight)", false},
      {9, "tf32-wmma", "f32 only: v3 on TF32 WMMA m16n16k8, the TF32 family before 2026-12-07 (v3: mma.sync m16n8k8)", false},
  };
  return v;
}

std::string take_library_note() { return seg::cuda::cudnn_last_choice(true); }

const char* conv_type_name(ConvType t) { return t == ConvType::f16 ? "f16" : "f32"; }

size_t conv_workspace_bytes(const ConvShape& s, ConvType t) {
  const size_t own = t == ConvType::f16 ? seg::cuda::conv2d_backward_weight_tc_workspace_bytes<seg::f16>(s, {})
                                        : seg::cuda::conv2d_backward_weight_tc_workspace_bytes<float>(s, {});
  const size_t lib = size_t{256} << 20;  // cuDNN's fastest algorithms may want this much
  return own > lib ? own : lib;
}

namespace {

template <class T>
std::string conv_plan_of(const ConvShape& s, ConvDir d) {
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
  if (d == ConvDir::backward_data && (s.stride_h > 1 || s.stride_w > 1)) {
    // One GEMM per stride phase over the taps that reach it, or a zero fill (dgrad_covers).
    std::string out;
    int fills = 0;
    for (const DgradCover& c : dgrad_covers(s, true)) {
      if (c.KHp == 0 || c.KWp == 0) {
        ++fills;
        continue;
      }
      const int64_t Mp = s.N * c.Hp * c.Wp, Kp = static_cast<int64_t>(c.KHp) * c.KWp * dims.Og;
      const int Bp = use_large_tile(seg::cuda::TcTile::automatic, Mp, N, dims.groups) ? 128 : 64;
      std::snprintf(line, sizeof line, "%sGEMM %lld x %lld x %lld (tile %dx%d, %lld blocks)", out.empty() ? "" : " + ",
                    (long long)Mp, (long long)N, (long long)Kp, Bp, Bp,
                    (long long)(((Mp + Bp - 1) / Bp) * ((N + Bp - 1) / Bp) * dims.groups));
      out += line;
    }
    if (fills) out += " + zero fill of " + std::to_string(fills) + (fills > 1 ? " phases" : " phase");
    std::snprintf(line, sizeof line, " (v7, one GEMM: %lld x %lld x %lld, tile %dx%d, %lld blocks)", (long long)M,
                  (long long)N, (long long)K, B, B, (long long)tiles);
    return "stride phases: " + out + line;
  }
  if (d != ConvDir::backward_weight) {
    std::snprintf(line, sizeof line, "GEMM %lld x %lld x %lld, tile %dx%d, %lld blocks, no split", (long long)M,
                  (long long)N, (long long)K, B, B, (long long)tiles);
    return line;
  }
  // The product pads a C that is not whole 16-byte chunks (ChannelPad) and plans the padded GEMM.
  const ChannelPad pad = channel_pad<T>(s, {});
  ConvShape sp = s;
  if (pad.applies) sp.C = pad.Cp;
  const ConvDims pd = conv_dims(sp, "lab_tc conv --plan");
  const int64_t Np = taps * pd.Cg;
  const bool large_p = use_large_tile(seg::cuda::TcTile::automatic, M, Np, pd.groups);
  const int Bp = large_p ? 128 : 64;
  const int64_t tiles_p = ((M + Bp - 1) / Bp) * ((Np + Bp - 1) / Bp) * pd.groups;
  const int now = conv_backward_weight_plan<T>(pd, {}, SIZE_MAX).splits,
            before = splits_before_2026_12_07<device_t<T>>(s);
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

// The product's launcher for p's direction, with args (v3, and the versions that change one of
// its options).
template <class T>
void run_product(const ConvProblem& p, const seg::cuda::ConvTcArgs& args, seg::cuda::Stream stream) {
  const T* x = static_cast<const T*>(p.x);
  const T* w = static_cast<const T*>(p.w);
  const T* dy = static_cast<const T*>(p.dy);
  T* out = static_cast<T*>(p.out);
  if (p.dir == ConvDir::forward)
    seg::cuda::conv2d_forward_tc<T>(p.s, x, w, nullptr, out, stream, args);
  else if (p.dir == ConvDir::backward_data)
    seg::cuda::conv2d_backward_data_tc<T>(p.s, w, dy, out, stream, args);
  else
    seg::cuda::conv2d_backward_weight_tc<T>(p.s, x, dy, out, nullptr, stream, args);
}

template <class T>
int run_version(int id, const ConvProblem& p, seg::cuda::Stream stream) {
  using DT = device_t<T>;
  constexpr bool kF16 = std::is_same_v<T, seg::f16>;
  seg::cuda::ConvTcArgs args;
  args.workspace = seg::cuda::TcWorkspace{p.workspace, p.workspace_bytes};
  args.options.tile = p.tile;
  const ConvShape& s = p.s;
  const T* x = static_cast<const T*>(p.x);
  const T* w = static_cast<const T*>(p.w);
  const T* dy = static_cast<const T*>(p.dy);
  T* out = static_cast<T*>(p.out);
  switch (id) {
    case 1: {
      const int64_t total = p.dir == ConvDir::forward ? s.y_numel() : p.dir == ConvDir::backward_data ? s.x_numel() : s.w_numel();
      const int64_t blocks = (total + 255) / 256 < 65536 ? (total + 255) / 256 : 65536;
      SEG_LAUNCH(conv_naive_kernel<DT>, static_cast<unsigned>(blocks), 256, 0, stream, s, static_cast<int>(p.dir),
                 reinterpret_cast<const DT*>(x), reinterpret_cast<const DT*>(w), reinterpret_cast<const DT*>(dy),
                 reinterpret_cast<DT*>(out));
      return true;
    }
    case 2:
      if constexpr (!kF16) return kF16Only;
      else if (p.dir == ConvDir::forward)
        run_one_stage<Major::k, Major::k>(forward_gemm<seg::f16>(s, x, w, nullptr, out, args), stream);
      else if (p.dir == ConvDir::backward_data)
        run_one_stage<Major::k, Major::mn>(backward_data_gemm<seg::f16>(s, w, dy, out, args), stream);
      else
        run_one_stage<Major::mn, Major::mn>(backward_weight_gemm<seg::f16>(s, x, dy, out, args), stream);
      return true;
    case 3:
      run_product<T>(p, args, stream);
      return true;
    case 4: {
      // The product as it was before 2026-12-07: the old split count, and no channel pad (its
      // workspace holds only the split partials, so conv_backward_weight_impl does not pad).
      if (p.dir != ConvDir::backward_weight) return kSameAsProduct;
      const ConvDims dims = conv_dims(s, "lab v4");
      const int before = splits_before_2026_12_07<DT>(s);
      const bool pads = channel_pad<T>(s, {}).applies;
      if (!pads && before == conv_backward_weight_plan<T>(dims, {}, SIZE_MAX).splits) return kSameAsProduct;
      const size_t partials = before > 1 ? static_cast<size_t>(before) * dims.groups * dims.Og * dims.taps * dims.Cg * 4 : 0;
      args.options.split_k = before;
      args.workspace.bytes = std::min(args.workspace.bytes, partials);
      seg::cuda::conv2d_backward_weight_tc<T>(s, x, dy, out, nullptr, stream, args);
      return true;
    }
    case 5:
      if (!seg::cuda::engine_available(seg::cuda::Engine::cudnn)) return false;
      if (p.dir == ConvDir::forward)
        seg::cuda::conv2d_forward_cudnn<T>(s, x, w, nullptr, out, stream, args);
      else if (p.dir == ConvDir::backward_data)
        seg::cuda::conv2d_backward_data_cudnn<T>(s, w, dy, out, stream, args);
      else
        seg::cuda::conv2d_backward_weight_cudnn<T>(s, x, dy, out, nullptr, stream, args);
      return true;
    case 6:
      if constexpr (!kF16) return kF16Only;
      else {
        if (p.dir != ConvDir::backward_data) return kSameAsProduct;
        backward_data_k_major_weights(p, args, stream);
        return true;
      }
    case 7:
      if (p.dir != ConvDir::backward_data || (s.stride_h == 1 && s.stride_w == 1)) return kSameAsProduct;
      args.stride_phases = false;
      seg::cuda::conv2d_backward_data_tc<T>(s, w, dy, out, stream, args);
      return true;
    case 8: {
      if (p.dir == ConvDir::forward) return kSameAsProduct;
      if (p.dir == ConvDir::backward_data) {
        if (kF16 || !backward_data_takes_large(s, args.options.tile)) return kSameAsProduct;
        if constexpr (!kF16) backward_data_one_block(p, args, stream);
        return true;
      }
      if (channel_pad<T>(s, {}).applies) return kSameAsProduct;
      const ConvDims dims = conv_dims(s, "lab v8");
      if (!use_large_tile(args.options.tile, dims.Og, static_cast<int64_t>(dims.taps) * dims.Cg, dims.groups))
        return kSameAsProduct;
      backward_weight_one_block<T>(p, args, stream);
      return true;
    }
    case 9:
      if constexpr (kF16) {
        return kF32Only;
      } else {
        args.options.family = seg::cuda::TcFamily::wmma;
        run_product<T>(p, args, stream);
        return true;
      }
    default: return false;
  }
}

}  // namespace

std::string conv_plan(const ConvShape& s, ConvDir d, ConvType t) {
  return t == ConvType::f16 ? conv_plan_of<seg::f16>(s, d) : conv_plan_of<float>(s, d);
}

int run_conv_version(int id, const ConvProblem& p, seg::cuda::Stream stream) {
  return p.type == ConvType::f16 ? run_version<seg::f16>(id, p, stream) : run_version<float>(id, p, stream);
}

}  // namespace seg::lab
