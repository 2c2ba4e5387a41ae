// The CUDA kernel lab's harness (llm.c dev/cuda style, with the gaps closed): for every version of
// a kernel family (gemm_tc_lab.cu, conv_tc_lab.cu) and every shape,
//   1. validate against the CPU on integer-valued inputs: every product and partial sum is an
//      integer below 2^24, so our versions must match exactly (tolerance 0, every element; NaN is a
//      mismatch, outputs start as NaN); the libraries are held to 2^-8 of the sum of |terms| (cuDNN
//      may pick Winograd or FFT algorithms, whose transforms round);
//   2. time it (GPU build): warm-up, then CUDA events around back-to-back runs (warm L2), then runs
//      each preceded by overwriting a buffer twice the L2 size (cold L2);
//   3. validate again after timing (a kernel that only works the first time is caught);
//   4. print ms, TFLOP/s and the share of cuBLASLt (GEMM) or cuDNN (conv) on the same shape; in the
//      simulated build, the simulator's counters and its H200 roofline estimate instead of times.
//
//   lab_tc gemm [version] [--size M N K] [--shapes ci|square]           (default: ci in the simulator, square on a GPU)
//   lab_tc conv [version] [--model mobilenet|resnet50|ci|split] [--dir fwd|bwd-data|bwd-weight] [--layer TEXT]
//   common: [--reps R] [--warmup W] [--no-cold] [--emit-auto-table] [--slow-cap GFLOP]
//   conv --plan: print how the product would launch each layer and direction (tile, blocks, split
//   count; v4's count beside it) on this device (132 SMs in the simulator) and run nothing
// --slow-cap G: the SIMT versions (GEMM v1 naive and v2 shared-memory tiling, conv v1 naive) run
// only on shapes of at most G GFLOP; above it they are neither validated nor timed and their row
// says so. On a GPU they are 10-100x slower than the tensor-core versions, and timing them warm
// and cold on every large shape would take most of a one-call GPU check (tools/gpu_check.sh).
// lab_tc_sim is the simulated build (CI runs `lab_tc_sim gemm` and `lab_tc_sim conv`); lab_tc the
// nvcc build, run by tools/gpu_check.sh. Exit status 1 if any validation fails.
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cpu/conv2d.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/cuda/engine.h"
#include "kernels/lab/tc_lab.h"

#ifdef SEG_LAB_SIM
#include "kernels/sim/counters.h"
#include "kernels/sim/sim.h"
#endif

using namespace seg;
using seg::lab::ConvDir;

namespace {

bool g_failed = false;

void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "lab_tc: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(4);
  }
}

template <class T>
struct Device {
  T* p = nullptr;
  size_t n = 0;
  explicit Device(size_t count) : n(count) {
    cuda_check(cudaMalloc(&p, std::max<size_t>(n, 1) * sizeof(T)), "cudaMalloc");
    poison();
  }
  ~Device() { cudaFree(p); }
  void poison() { cuda_check(cudaMemset(p, 0xFF, std::max<size_t>(n, 1) * sizeof(T)), "cudaMemset"); }
  void upload(const std::vector<T>& v) {
    cuda_check(cudaMemcpy(p, v.data(), n * sizeof(T), cudaMemcpyHostToDevice), "upload");
  }
  std::vector<T> download() const {
    cuda_check(cudaDeviceSynchronize(), "kernel");
    std::vector<T> v(n);
    cuda_check(cudaMemcpy(v.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost), "download");
    return v;
  }
};

// Small integers in [-2, 2] as f16 (a fixed LCG: reproducible, no dependency).
std::vector<f16> integers(size_t n, uint32_t seed) {
  std::vector<f16> v(n);
  uint32_t s = seed * 2654435761u + 12345u;
  for (auto& x : v) {
    s = s * 1664525u + 1013904223u;
    x = f16(static_cast<float>(static_cast<int>((s >> 16) % 5) - 2));
  }
  return v;
}
std::vector<float> to_float(const std::vector<f16>& v) { return {v.begin(), v.end()}; }

struct Check {
  size_t mismatches = 0, first = 0;
  double got = 0, want = 0;
};
template <class G>
Check compare(const std::vector<G>& got, const std::vector<float>& want, double atol) {
  Check c;
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = static_cast<float>(got[i]), w = want[i];
    const bool ok = std::isfinite(g) && std::isfinite(w) ? std::abs(g - w) <= atol : (std::isnan(g) && std::isnan(w)) || g == w;
    if (!ok && c.mismatches++ == 0) {
      c.first = i;
      c.got = g;
      c.want = w;
    }
  }
  return c;
}

struct Options {
  std::vector<int> versions;  // the [version] argument: one, or a comma-separated list ("3,8"); empty: all
  int reps = 20, warmup = 5;
  bool cold = true, emit_auto = false, plan = false;
  double slow_cap_gflop = -1;  // --slow-cap; negative: no cap
  std::string shapes, model, dir, layer;
  lab::ConvType dtype = lab::ConvType::f16;  // lab_tc conv --dtype
  seg::cuda::TcTile tile = seg::cuda::TcTile::automatic;  // lab_tc conv --tile
  std::vector<int> size;
};

#ifdef SEG_LAB_SIM
constexpr bool kSimulated = true;
#else
constexpr bool kSimulated = false;
#endif

// Times `run` (GPU build): average ms warm (back to back) and cold (L2 overwritten before each run).
template <class Run>
void time_it(const Options& o, Run run, double& warm_ms, double& cold_ms) {
  warm_ms = cold_ms = 0;
  if (kSimulated) return;
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  for (int i = 0; i < o.warmup; ++i) run();
  cudaEventRecord(a);
  for (int i = 0; i < o.reps; ++i) run();
  cudaEventRecord(b);
  cudaEventSynchronize(b);
  float ms = 0;
  cudaEventElapsedTime(&ms, a, b);
  warm_ms = ms / o.reps;
  if (o.cold) {
    int l2 = 0;
    cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0);
    Device<unsigned char> flush(static_cast<size_t>(std::max(l2, 1 << 20)) * 2);
    double total = 0;
    for (int i = 0; i < o.reps; ++i) {
      cudaMemsetAsync(flush.p, i & 0xFF, flush.n);
      cudaEventRecord(a);
      run();
      cudaEventRecord(b);
      cudaEventSynchronize(b);
      cudaEventElapsedTime(&ms, a, b);
      total += ms;
    }
    cold_ms = total / o.reps;
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
}

// Simulated build: the counters of the kernels one run launched, summed, and the estimate.
std::string counters_after(double flops) {
#ifdef SEG_LAB_SIM
  if (!seg::sim::counters_available()) return "  (no counters: sanitizer build)";
  uint64_t gl_req = 0, gl_sec = 0, gs_req = 0, gs_sec = 0, sh_ld_bc = 0, sh_st_bc = 0, sh_req = 0, mma = 0;
  double est = 0;
  std::string bound;
  for (const auto& k : seg::sim::kernel_counter_totals()) {
    gl_req += k.global_load.requests;
    gl_sec += k.global_load.sectors;
    gs_req += k.global_store.requests;
    gs_sec += k.global_store.sectors;
    sh_ld_bc += k.shared_load.bank_conflicts;
    sh_st_bc += k.shared_store.bank_conflicts;
    sh_req += k.shared_load.requests + k.shared_store.requests;
    mma += k.mma_instructions;
    est += k.estimated_us_sum;
    if (bound.empty()) bound = k.estimate.bound;
  }
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "  ld %.2f sec/req  st %.2f sec/req  smem bank conflicts ld %llu st %llu (of %llu requests)  mma %llu  "
                "est %.1f us (%s) = %.1f TFLOP/s",
                gl_req ? double(gl_sec) / gl_req : 0.0, gs_req ? double(gs_sec) / gs_req : 0.0,
                static_cast<unsigned long long>(sh_ld_bc), static_cast<unsigned long long>(sh_st_bc),
                static_cast<unsigned long long>(sh_req), static_cast<unsigned long long>(mma), est, bound.c_str(),
                est > 0 ? flops / (est * 1e-6) / 1e12 : 0.0);
  return buf;
#else
  (void)flops;
  return "";
#endif
}
void reset_counters() {
#ifdef SEG_LAB_SIM
  seg::sim::reset_kernel_counter_totals();
#endif
}

struct Row {
  int version;
  double warm_ms, cold_ms;
};

// Under a library version's line: which algorithm the library ran, and why (cuDNN; nothing for
// cuBLASLt).
void print_library_note() {
  const std::string note = lab::take_library_note();
  if (!note.empty()) std::printf("      %s\n", note.c_str());
}

// One shape, every selected version: validate, time, validate again, print. Versions 1..last_simt
// are the family's SIMT versions (no tensor cores), which --slow-cap keeps to small shapes.
template <class Run, class Out>
void bench_shape(const Options& o, const std::vector<lab::Version>& versions, int last_simt, double flops, Out& out,
                 const std::vector<float>& want, double lib_atol, Run run, std::vector<Row>& rows) {
  double lib_ms = 0;
  for (const auto& v : versions) {
    const bool chosen = o.versions.empty() || std::find(o.versions.begin(), o.versions.end(), v.id) != o.versions.end();
    if (!chosen && !(v.library && !kSimulated)) continue;
    if (kSimulated && v.id == 1 && flops > 2e9) continue;  // the naive versions only on small shapes
    if (!v.library && v.id <= last_simt && o.slow_cap_gflop >= 0 && flops > o.slow_cap_gflop * 1e9) {
      std::printf("  v%d %-18s skipped: %.3g GFLOP is above --slow-cap %g (a SIMT version)\n", v.id, v.name, flops / 1e9,
                  o.slow_cap_gflop);
      continue;
    }
    out.poison();
    reset_counters();
    const int ran = run(v.id);  // bool for the GEMM versions; 1, 0 or lab::kSameAsProduct for the convolutions
    if (ran == lab::kSameAsProduct) {
      std::printf("  v%d %-18s the product's kernel and plan here (not run again)\n", v.id, v.name);
      continue;
    }
    if (ran == lab::kF16Only || ran == lab::kF32Only) {
      std::printf("  v%d %-18s %s only\n", v.id, v.name, ran == lab::kF16Only ? "f16" : "f32");
      continue;
    }
    if (!ran) {
      std::printf("  v%d %-18s not in this build\n", v.id, v.name);
      continue;
    }
    const auto got = out.download();
    const std::string counters = counters_after(flops);
    Check c = compare(got, want, v.library ? lib_atol : 0.0);
    double warm = 0, cold = 0;
    time_it(o, [&] { run(v.id); }, warm, cold);
    if (!kSimulated && c.mismatches == 0) c = compare(out.download(), want, v.library ? lib_atol : 0.0);
    if (c.mismatches) {
      g_failed = true;
      std::printf("  v%d %-18s FAILED: %zu of %zu elements differ; first [%zu] got %g want %g\n", v.id, v.name,
                  c.mismatches, got.size(), c.first, c.got, c.want);
      if (v.library) print_library_note();
      continue;
    }
    if (v.library) lib_ms = warm;
    rows.push_back({v.id, warm, cold});
    if (kSimulated) {
      std::printf("  v%d %-18s ok (%zu elements exact)%s\n", v.id, v.name, got.size(), counters.c_str());
    } else {
      std::printf("  v%d %-18s %9.3f ms warm %9.3f ms cold  %7.1f TFLOP/s\n", v.id, v.name, warm, cold,
                  flops / (warm * 1e-3) / 1e12);
      if (v.library) print_library_note();
    }
  }
  if (lib_ms > 0)
    for (const Row& r : rows)
      if (r.warm_ms > 0) std::printf("    v%d reaches %.0f%% of the library's speed\n", r.version, 100.0 * lib_ms / r.warm_ms);
}

// ---- GEMM ----------------------------------------------------------------------------------------
void run_gemm(const Options& o) {
  std::vector<std::array<int, 3>> shapes;
  std::string set = o.shapes.empty() ? (kSimulated ? "ci" : "square") : o.shapes;
  if (o.size.size() == 3) shapes = {{o.size[0], o.size[1], o.size[2]}};
  else if (set == "ci") shapes = {{256, 256, 256}, {200, 136, 264}, {64, 48, 2048}};
  else shapes = {{4096, 4096, 4096}, {8192, 8192, 8192}, {64, 576, 32768}};
  std::printf("GEMM lab (%s): C = A * B, f16 in, f32 out, A and B row-major\n",
              kSimulated ? "simulated GPU: counters and H200 estimates, no times" : "GPU");
  for (const auto& sh : shapes) {
    const int M = sh[0], N = sh[1], K = sh[2];
    const auto A = integers(static_cast<size_t>(M) * K, 1), B = integers(static_cast<size_t>(K) * N, 2);
    std::vector<float> want(static_cast<size_t>(M) * N);
    const auto Af = to_float(A), Bf = to_float(B);
    cpu::gemm_f32(false, false, M, N, K, Af.data(), K, Bf.data(), N, want.data(), N, false);  // exact: integers
    Device<f16> dA(A.size()), dB(B.size());
    dA.upload(A);
    dB.upload(B);
    Device<float> dC(want.size());
    const size_t ws_bytes = lab::gemm_workspace_bytes(M, N, K);
    Device<unsigned char> ws(ws_bytes);
    const lab::GemmProblem p{M, N, K, dA.p, dB.p, dC.p, ws.p, ws_bytes};
    const double flops = 2.0 * M * N * K;
    std::printf("%d x %d x %d  (%.1f GFLOP)\n", M, N, K, flops / 1e9);
    std::vector<Row> rows;
    bench_shape(o, lab::gemm_versions(), 2, flops, dC, want, std::ldexp(1.0, -8) * 4.0 * K,
                [&](int id) { return lab::run_gemm_version(id, p, nullptr); }, rows);
  }
}

// ---- convolution ---------------------------------------------------------------------------------
struct Layer {
  const char* name;
  int count;  // how many convolutions of the model have this shape
  int N, H, C, O, K, stride, pad, dil;
};

// ResNet50dilated + PPM_deepsup and MobileNetV2dilated + C1_deepsup at 512x512, batch 8 (upstream's
// architectures with output stride 8; depthwise convolutions excluded: they have their own kernel).
const Layer kResNet50[] = {
    {"stem 3x3 3->64 s2", 1, 8, 512, 3, 64, 3, 2, 1, 1},
    {"stem 3x3 64->64", 1, 8, 256, 64, 64, 3, 1, 1, 1},
    {"stem 3x3 64->128", 1, 8, 256, 64, 128, 3, 1, 1, 1},
    {"layer1 1x1 128->64", 1, 8, 128, 128, 64, 1, 1, 0, 1},
    {"layer1 1x1 256->64", 2, 8, 128, 256, 64, 1, 1, 0, 1},
    {"layer1 3x3 64->64", 3, 8, 128, 64, 64, 3, 1, 1, 1},
    {"layer1 1x1 64->256", 3, 8, 128, 64, 256, 1, 1, 0, 1},
    {"layer1 downsample 128->256", 1, 8, 128, 128, 256, 1, 1, 0, 1},
    {"layer2 1x1 256->128", 1, 8, 128, 256, 128, 1, 1, 0, 1},
    {"layer2 3x3 128->128 s2", 1, 8, 128, 128, 128, 3, 2, 1, 1},
    {"layer2 downsample 256->512 s2", 1, 8, 128, 256, 512, 1, 2, 0, 1},
    {"layer2 1x1 128->512", 4, 8, 64, 128, 512, 1, 1, 0, 1},
    {"layer2 1x1 512->128", 3, 8, 64, 512, 128, 1, 1, 0, 1},
    {"layer2 3x3 128->128", 3, 8, 64, 128, 128, 3, 1, 1, 1},
    {"layer3 1x1 512->256", 1, 8, 64, 512, 256, 1, 1, 0, 1},
    {"layer3 3x3 256->256", 1, 8, 64, 256, 256, 3, 1, 1, 1},
    {"layer3 3x3 256->256 dil 2", 5, 8, 64, 256, 256, 3, 1, 2, 2},
    {"layer3 1x1 256->1024", 6, 8, 64, 256, 1024, 1, 1, 0, 1},
    {"layer3 downsample 512->1024", 1, 8, 64, 512, 1024, 1, 1, 0, 1},
    {"layer3 1x1 1024->256", 5, 8, 64, 1024, 256, 1, 1, 0, 1},
    {"layer4 1x1 1024->512", 1, 8, 64, 1024, 512, 1, 1, 0, 1},
    {"layer4 3x3 512->512 dil 2", 1, 8, 64, 512, 512, 3, 1, 2, 2},
    {"layer4 3x3 512->512 dil 4", 2, 8, 64, 512, 512, 3, 1, 4, 4},
    {"layer4 1x1 512->2048", 3, 8, 64, 512, 2048, 1, 1, 0, 1},
    {"layer4 downsample 1024->2048", 1, 8, 64, 1024, 2048, 1, 1, 0, 1},
    {"layer4 1x1 2048->512", 2, 8, 64, 2048, 512, 1, 1, 0, 1},
    {"ppm 1x1 2048->512 (pooled 1x1)", 1, 8, 1, 2048, 512, 1, 1, 0, 1},
    {"ppm 1x1 2048->512 (pooled 2x2)", 1, 8, 2, 2048, 512, 1, 1, 0, 1},
    {"ppm 1x1 2048->512 (pooled 3x3)", 1, 8, 3, 2048, 512, 1, 1, 0, 1},
    {"ppm 1x1 2048->512 (pooled 6x6)", 1, 8, 6, 2048, 512, 1, 1, 0, 1},
    {"ppm conv_last 3x3 4096->512", 1, 8, 64, 4096, 512, 3, 1, 1, 1},
    {"ppm conv_last 1x1 512->150", 1, 8, 64, 512, 150, 1, 1, 0, 1},
    {"deepsup 3x3 1024->256", 1, 8, 64, 1024, 256, 3, 1, 1, 1},
    {"deepsup 1x1 256->150", 1, 8, 64, 256, 150, 1, 1, 0, 1},
};
const Layer kMobileNetV2[] = {
    {"features.0 3x3 3->32 s2", 1, 8, 512, 3, 32, 3, 2, 1, 1},
    {"1x1 32->16", 1, 8, 256, 32, 16, 1, 1, 0, 1},
    {"1x1 16->96", 1, 8, 256, 16, 96, 1, 1, 0, 1},
    {"1x1 96->24", 1, 8, 128, 96, 24, 1, 1, 0, 1},
    {"1x1 24->144", 2, 8, 128, 24, 144, 1, 1, 0, 1},
    {"1x1 144->24", 1, 8, 128, 144, 24, 1, 1, 0, 1},
    {"1x1 144->32", 1, 8, 64, 144, 32, 1, 1, 0, 1},
    {"1x1 32->192", 3, 8, 64, 32, 192, 1, 1, 0, 1},
    {"1x1 192->32", 2, 8, 64, 192, 32, 1, 1, 0, 1},
    {"1x1 192->64", 1, 8, 64, 192, 64, 1, 1, 0, 1},
    {"1x1 64->384", 4, 8, 64, 64, 384, 1, 1, 0, 1},
    {"1x1 384->64", 3, 8, 64, 384, 64, 1, 1, 0, 1},
    {"1x1 384->96", 1, 8, 64, 384, 96, 1, 1, 0, 1},
    {"1x1 96->576", 3, 8, 64, 96, 576, 1, 1, 0, 1},
    {"1x1 576->96", 2, 8, 64, 576, 96, 1, 1, 0, 1},
    {"1x1 576->160", 1, 8, 64, 576, 160, 1, 1, 0, 1},
    {"1x1 160->960", 3, 8, 64, 160, 960, 1, 1, 0, 1},
    {"1x1 960->160", 2, 8, 64, 960, 160, 1, 1, 0, 1},
    {"1x1 960->320", 1, 8, 64, 960, 320, 1, 1, 0, 1},
    {"c1 cbr 3x3 320->80", 1, 8, 64, 320, 80, 3, 1, 1, 1},
    {"c1 conv_last 1x1 80->150", 1, 8, 64, 80, 150, 1, 1, 0, 1},
    {"c1 cbr_deepsup 3x3 160->80", 1, 8, 64, 160, 80, 3, 1, 1, 1},
    {"c1 conv_last_deepsup 1x1 80->150", 1, 8, 64, 80, 150, 1, 1, 0, 1},
};
// The simulator's shapes: one of each kind, small.
const Layer kCi[] = {
    {"1x1 24->40", 1, 1, 8, 24, 40, 1, 1, 0, 1},
    {"3x3 16->24", 1, 1, 9, 16, 24, 3, 1, 1, 1},
    {"3x3 16->16 dil 2", 1, 1, 10, 16, 16, 3, 1, 2, 2},
    {"3x3 3->16 s2 (first conv, C = 3)", 1, 1, 12, 3, 16, 3, 2, 1, 1},
    {"1x1 32->150", 1, 1, 6, 32, 150, 1, 1, 0, 1},
};

// One layer whose backward weight the product splits differently from v4 (the rule before
// 2026-12-07) in the simulator: 2048 pixels deep, one output tile. So v4 runs in CI (ctest
// lab_tc_sim_conv_split), not only on a GPU.
const Layer kSplit[] = {
    {"1x1 8->16, 2048 pixels (split-K)", 1, 2, 32, 8, 16, 1, 1, 0, 1},
};

ConvShape shape_of(const Layer& l) {
  ConvShape s;
  s.N = l.N;
  s.H = s.W = l.H;
  s.C = l.C;
  s.O = l.O;
  s.KH = s.KW = l.K;
  s.stride_h = s.stride_w = l.stride;
  s.pad_h = s.pad_w = l.pad;
  s.dil_h = s.dil_w = l.dil;
  return s;
}

std::vector<float> conv_reference(const ConvShape& s, ConvDir d, const std::vector<float>& x, const std::vector<float>& w,
                                  const std::vector<float>& dy, lab::ConvType type) {
  std::vector<float> out;
  if (d == ConvDir::forward) {
    out.resize(static_cast<size_t>(s.y_numel()));
    cpu::conv2d_forward<float>(s, x.data(), w.data(), nullptr, out.data());
  } else if (d == ConvDir::backward_data) {
    out.resize(static_cast<size_t>(s.x_numel()));
    cpu::conv2d_backward_data<float>(s, w.data(), dy.data(), out.data());
  } else {
    out.resize(static_cast<size_t>(s.w_numel()));
    cpu::conv2d_backward_weight<float>(s, x.data(), dy.data(), out.data(), nullptr);
  }
  if (type == lab::ConvType::f16)
    for (float& v : out) v = static_cast<float>(f16(v));  // the kernels write f16
  return out;
}

// Every selected direction of one layer, with the operands and outputs in the element type E the
// kernels take: f16, or float for the TF32 runs. The same integers in [-2, 2] in either type: exact
// in f16 and in TF32 (10 mantissa bits), and every sum of their products is an integer below 2^24,
// exact in the f32 accumulators.
template <class E>
void run_conv_layer(const Options& o, const Layer& l, const ConvShape& s, const std::vector<ConvDir>& dirs,
                    const std::vector<f16>& x, const std::vector<f16>& w, const std::vector<f16>& dy,
                    double own_total[3], double lib_total[3], std::vector<std::string>& auto_rows) {
  const auto xf = to_float(x), wf = to_float(w), dyf = to_float(dy);
  Device<E> dx(x.size()), dw(w.size()), ddy(dy.size());
  dx.upload(std::vector<E>(x.begin(), x.end()));
  dw.upload(std::vector<E>(w.begin(), w.end()));
  ddy.upload(std::vector<E>(dy.begin(), dy.end()));
  const size_t ws_bytes = lab::conv_workspace_bytes(s, o.dtype);
  Device<unsigned char> ws(ws_bytes);
  const double depth = static_cast<double>(s.KH * s.KW * s.C);
  const double flops = 2.0 * static_cast<double>(s.N * s.Ho() * s.Wo()) * s.O * depth;
  for (ConvDir d : dirs) {
    const auto want = conv_reference(s, d, xf, wf, dyf, o.dtype);
    Device<E> out(want.size());
    const lab::ConvProblem p{s, d, o.dtype, dx.p, dw.p, ddy.p, out.p, ws.p, ws_bytes, o.tile};
    std::printf("%s x%d  %s  N=%lld H=W=%lld C=%lld O=%lld %lldx%lld s%lld d%lld  (%.2f GFLOP)\n", l.name, l.count,
                lab::conv_dir_name(d), (long long)s.N, (long long)s.H, (long long)s.C, (long long)s.O,
                (long long)s.KH, (long long)s.KW, (long long)s.stride_h, (long long)s.dil_h, flops / 1e9);
    std::vector<Row> rows;
    const double reduction = d == ConvDir::backward_weight ? s.N * s.Ho() * s.Wo() : depth;
    // cuDNN may run a transform (Winograd, FFT) whose rounding the exact check of our versions
    // would not allow: its tolerance is 2^-8 of the largest possible sum (4 per term).
    const double lib_atol = std::ldexp(1.0, -8) * 4.0 * reduction;
    auto run = [&](int id) { return lab::run_conv_version(id, p, nullptr); };
    bench_shape(o, lab::conv_versions(), 1, flops, out, want, lib_atol, run, rows);
    double own = 0, lib = 0;
    for (const Row& r : rows) {
      if (r.version == 3) own = r.warm_ms;
      if (r.version == 5) lib = r.warm_ms;
    }
    own_total[static_cast<int>(d)] += own * l.count;
    lib_total[static_cast<int>(d)] += lib * l.count;
    if (o.emit_auto && own > 0 && lib > 0 && lib < own) {
      const char* op = d == ConvDir::forward ? "conv_fwd" : d == ConvDir::backward_data ? "conv_bwd_data" : "conv_bwd_weight";
      const double work = static_cast<double>(s.N * s.Ho() * s.Wo()) * s.O * depth;
      char row[200];
      std::snprintf(row, sizeof row, "    {\"%s\", DType::%s, %.0f, %.0f, Engine::cudnn},  // %s: own %.3f ms, cuDNN %.3f ms",
                    op, lab::conv_type_name(o.dtype), work, work + 1, l.name, own, lib);
      auto_rows.push_back(row);
    }
  }
}

void run_conv(const Options& o) {
  std::string model = o.model.empty() ? (kSimulated ? "ci" : "resnet50") : o.model;
  std::vector<Layer> layers;
  if (model == "resnet50") layers.assign(std::begin(kResNet50), std::end(kResNet50));
  else if (model == "mobilenet") layers.assign(std::begin(kMobileNetV2), std::end(kMobileNetV2));
  else if (model == "split") layers.assign(std::begin(kSplit), std::end(kSplit));
  else if (model == "ci") layers.assign(std::begin(kCi), std::end(kCi));
  else {
    std::fprintf(stderr, "lab_tc: unknown --model '%s': choose ci, mobilenet, resnet50 or split\n", model.c_str());
    std::exit(2);
  }
  std::vector<ConvDir> dirs = {ConvDir::forward, ConvDir::backward_data, ConvDir::backward_weight};
  if (!o.dir.empty()) {
    dirs.clear();
    for (ConvDir d : {ConvDir::forward, ConvDir::backward_data, ConvDir::backward_weight})
      if (o.dir == lab::conv_dir_name(d)) dirs.push_back(d);
  }
  std::printf("convolution lab (%s): model %s, %s, NHWC\n",
              kSimulated ? "simulated GPU: counters and H200 estimates, no times" : "GPU", model.c_str(),
              o.dtype == lab::ConvType::f16 ? "f16" : "f32 (TF32 tensor cores, as O0 runs them)");
  double own_total[3] = {}, lib_total[3] = {};
  std::vector<std::string> auto_rows;
  for (const Layer& l : layers) {
    if (!o.layer.empty() && std::string(l.name).find(o.layer) == std::string::npos) continue;
    const ConvShape s = shape_of(l);
    if (o.plan) {  // how the product would launch each direction; nothing is run
      for (ConvDir d : dirs)
        std::printf("%s x%d  %s: %s\n", l.name, l.count, lab::conv_dir_name(d), lab::conv_plan(s, d, o.dtype).c_str());
      continue;
    }
    const auto x = integers(static_cast<size_t>(s.x_numel()), 3), w = integers(static_cast<size_t>(s.w_numel()), 4),
               dy = integers(static_cast<size_t>(s.y_numel()), 5);
    if (o.dtype == lab::ConvType::f32)
      run_conv_layer<float>(o, l, s, dirs, x, w, dy, own_total, lib_total, auto_rows);
    else
      run_conv_layer<f16>(o, l, s, dirs, x, w, dy, own_total, lib_total, auto_rows);
  }
  if (!kSimulated) {
    std::printf("model total (each layer times its count), own product kernel (v3) vs cuDNN (v5):\n");
    for (int d = 0; d < 3; ++d)
      if (own_total[d] > 0)
        std::printf("  %-10s own %8.3f ms  cuDNN %8.3f ms  own reaches %.0f%% of cuDNN's speed\n",
                    lab::conv_dir_name(static_cast<ConvDir>(d)), own_total[d], lib_total[d],
                    lib_total[d] > 0 ? 100.0 * lib_total[d] / own_total[d] : 0.0);
  }
  if (o.emit_auto) {
    std::printf("auto table rows (kernels/cuda/engine.cu, kAutoTable): shapes where cuDNN was faster\n");
    for (const auto& r : auto_rows) std::printf("%s\n", r.c_str());
  }
}

[[noreturn]] void usage() {
  std::fprintf(stderr,
               "usage: lab_tc gemm [version] [--size M N K] [--shapes ci|square]\n"
               "       lab_tc conv [version] [--model ci|mobilenet|resnet50|split] [--dir fwd|bwd-data|bwd-weight] [--layer TEXT]\n"
               "                   [--dtype f16|f32]  (f32: TF32 tensor cores, as O0 runs its convolutions)\n"
               "                   [--tile auto|large|small]  (the product's tile choice, or one forced on every version)\n"
               "                   [--plan]  (print the product's launch plan per layer; run nothing)\n"
               "       common: [--reps R] [--warmup W] [--no-cold] [--emit-auto-table] [--slow-cap GFLOP]\n"
               "       version: one number, or a comma-separated list (3,8); the library baseline always runs on a GPU\n");
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) usage();
  const std::string family = argv[1];
  Options o;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) usage();
      return argv[++i];
    };
    if (a == "--reps") o.reps = std::atoi(next().c_str());
    else if (a == "--warmup") o.warmup = std::atoi(next().c_str());
    else if (a == "--no-cold") o.cold = false;
    else if (a == "--emit-auto-table") o.emit_auto = true;
    else if (a == "--plan") o.plan = true;
    else if (a == "--slow-cap") {
      const std::string v = next();
      char* end = nullptr;
      o.slow_cap_gflop = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || !(o.slow_cap_gflop >= 0)) {
        std::fprintf(stderr, "lab_tc: --slow-cap takes GFLOP, a number >= 0, not '%s'\n", v.c_str());
        std::exit(2);
      }
    }
    else if (a == "--shapes") o.shapes = next();
    else if (a == "--model") o.model = next();
    else if (a == "--dir") o.dir = next();
    else if (a == "--layer") o.layer = next();
    else if (a == "--tile") {
      const std::string t = next();
      if (t == "auto") o.tile = seg::cuda::TcTile::automatic;
      else if (t == "large") o.tile = seg::cuda::TcTile::large;
      else if (t == "small") o.tile = seg::cuda::TcTile::small;
      else {
        std::fprintf(stderr, "lab_tc: --tile takes auto, large or small, not '%s'\n", t.c_str());
        std::exit(2);
      }
    } else if (a == "--dtype") {
      const std::string t = next();
      if (t == "f16") o.dtype = lab::ConvType::f16;
      else if (t == "f32") o.dtype = lab::ConvType::f32;
      else {
        std::fprintf(stderr, "lab_tc: --dtype takes f16 or f32, not '%s'\n", t.c_str());
        std::exit(2);
      }
    }
    else if (a == "--size") {
      for (int k = 0; k < 3; ++k) o.size.push_back(std::atoi(next().c_str()));
    } else if (!a.empty() && a[0] != '-' && o.versions.empty()) {
      size_t at = 0;
      while (at <= a.size()) {
        const size_t comma = std::min(a.find(',', at), a.size());
        const std::string item = a.substr(at, comma - at);
        char* end = nullptr;
        const long id = std::strtol(item.c_str(), &end, 10);
        if (item.empty() || *end != '\0' || id < 1) {
          std::fprintf(stderr, "lab_tc: a version is a number >= 1, or a comma-separated list of them, not '%s'\n",
                       a.c_str());
          std::exit(2);
        }
        o.versions.push_back(static_cast<int>(id));
        at = comma + 1;
      }
    }
    else usage();
  }
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    std::fprintf(stderr, "lab_tc: no CUDA device (the simulated build is lab_tc_sim)\n");
    return 4;
  }
#ifdef SEG_LAB_SIM
  seg::sim::Options sim = seg::sim::options();
  sim.counters = true;
  seg::sim::set_options(sim);
#endif
  std::printf("%s\n", seg::cuda::describe_engines().c_str());
  if (family == "gemm") run_gemm(o);
  else if (family == "conv") run_conv(o);
  else usage();
  if (g_failed) std::printf("VALIDATION FAILED\n");
  return g_failed ? 1 : 0;
}
