// The early-convolution lab (beside lab_gemm and lab_winograd): MobileNetV2dilated's stem and its
// layers at S/2 and S/4 (plus one dilated depthwise layer of the trunk), the shapes where segtrain
// was slowest against oneDNN (issue 20), each pass through each version:
//
//   plain   v1 of the depthwise loops: every tap one vector multiply-add over the channels, into
//           the output (forward, backward data) or the accumulators (backward weight) in memory.
//           Kept here as the readable baseline; the product kernels replaced it.
//   gemm    the implicit GEMM (kernels/cpu/conv2d_gemm.cpp), forced (not on depthwise layers, where it
//           is one GEMM per channel, 50-200x slower than the plain loops).
//   auto    what the dispatcher runs (kernels/cpu/conv2d_dispatch.cpp): for depthwise layers the
//           register-blocked loops (4 pixels x 16 channels forward, the flipped forward for
//           backward data, 8 channels x 9 taps per row for backward weight), for the stem's backward
//           weight the direct outer-product loop, the implicit GEMM elsewhere.
//
// Every version is validated first against the float64 implicit GEMM (max |f32 - f64| / max |f64|,
// which must stay below 1e-5; a NaN is a failure), then timed: the median wall time of --reps calls
// after one warm-up call, on --threads threads (default 2, the bench's setting). The inputs stay in
// cache between calls, unlike inside a training step, so the times are lower than the bench's
// per-layer table; compare versions within one run.
//
// usage: build/bin/lab_conv [--size S] [--batch B] [--threads T] [--reps R] [--layer SUBSTRING]
//        (defaults S=256 B=4 T=2 R=10: `segtrain bench`'s training shape)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cpu/conv2d.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/lab/conv_lab_check.h"

using namespace seg;
using cpu::ConvShape;

namespace {

struct Layer {
  const char* name;
  int64_t C, O, K, stride, dil, scale, groups;  // scale: the input is S / scale
};
const Layer kLayers[] = {
    {"stem 3x3 s2 3->32", 3, 32, 3, 2, 1, 1, 1},
    {"dw 3x3 32 (S/2)", 32, 32, 3, 1, 1, 2, 32},
    {"1x1 32->16 (S/2)", 32, 16, 1, 1, 1, 2, 1},
    {"1x1 16->96 (S/2)", 16, 96, 1, 1, 1, 2, 1},
    {"dw 3x3 s2 96 (S/2)", 96, 96, 3, 2, 1, 2, 96},
    {"1x1 96->24 (S/4)", 96, 24, 1, 1, 1, 4, 1},
    {"1x1 24->144 (S/4)", 24, 144, 1, 1, 1, 4, 1},
    {"dw 3x3 144 (S/4)", 144, 144, 3, 1, 1, 4, 144},
    {"dw 3x3 s2 144 (S/4)", 144, 144, 3, 2, 1, 4, 144},
    {"dw 3x3 960 dil4 (S/8)", 960, 960, 3, 1, 4, 8, 960},
    // The trunk's widest 1x1 layers (the largest conv costs of the step: `segtrain bench`'s top layers)
    {"1x1 160->960 (S/8)", 160, 960, 1, 1, 1, 8, 1},
    {"1x1 960->160 (S/8)", 960, 160, 1, 1, 1, 8, 1},
};

ConvShape shape_of(const Layer& l, int64_t size, int64_t batch) {
  ConvShape s;
  s.N = batch;
  s.H = s.W = std::max<int64_t>(1, size / l.scale);
  s.C = l.C, s.O = l.O, s.KH = s.KW = l.K, s.stride_h = s.stride_w = l.stride, s.groups = l.groups;
  s.dil_h = s.dil_w = l.dil;
  s.pad_h = s.pad_w = l.K == 1 ? 0 : l.dil;
  return s;
}

// v1 of the depthwise loops (the product's before the register blocking), float32.
void plain_forward(const ConvShape& s, const float* x, const float* w, float* y) {
  const int64_t Ho = s.Ho(), Wo = s.Wo(), C = s.C;
  const std::vector<float> wt = cpu::depthwise_weights_by_tap(s, w);
  parallel_for(0, s.N * Ho, 1, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t wo = 0; wo < Wo; ++wo) {
        float* out = y + (r * Wo + wo) * C;
        std::fill(out, out + C, 0.0f);
        cpu::for_each_input_tap(s, r % Ho, wo, [&](int64_t kh, int64_t kw, int64_t h, int64_t wi) {
          const float* in = x + (((r / Ho) * s.H + h) * s.W + wi) * C;
          const float* k = wt.data() + (kh * s.KW + kw) * C;
          for (int64_t c = 0; c < C; ++c) out[c] += in[c] * k[c];
        });
      }
  });
}
void plain_backward_data(const ConvShape& s, const float* w, const float* dy, float* dx) {
  const int64_t Ho = s.Ho(), Wo = s.Wo(), C = s.C;
  const std::vector<float> wt = cpu::depthwise_weights_by_tap(s, w);
  parallel_for(0, s.N * s.H, 1, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t wi = 0; wi < s.W; ++wi) {
        float* out = dx + (r * s.W + wi) * C;
        std::fill(out, out + C, 0.0f);
        cpu::for_each_output_reading(s, r % s.H, wi, [&](int64_t kh, int64_t kw, int64_t ho, int64_t wo) {
          const float* g = dy + (((r / s.H) * Ho + ho) * Wo + wo) * C;
          const float* k = wt.data() + (kh * s.KW + kw) * C;
          for (int64_t c = 0; c < C; ++c) out[c] += g[c] * k[c];
        });
      }
  });
}
void plain_backward_weight(const ConvShape& s, const float* x, const float* dy, float* dw) {
  const int64_t Ho = s.Ho(), Wo = s.Wo(), C = s.C, taps = s.KH * s.KW;
  parallel_for(0, C, 16, [&](int64_t c0, int64_t c1) {
    const int64_t width = c1 - c0;
    std::vector<float> acc(static_cast<size_t>(taps * width), 0.0f);
    for (int64_t n = 0; n < s.N; ++n)
      for (int64_t ho = 0; ho < Ho; ++ho)
        for (int64_t wo = 0; wo < Wo; ++wo) {
          const float* g = dy + ((n * Ho + ho) * Wo + wo) * C + c0;
          cpu::for_each_input_tap(s, ho, wo, [&](int64_t kh, int64_t kw, int64_t h, int64_t wi) {
            const float* in = x + ((n * s.H + h) * s.W + wi) * C + c0;
            float* a = acc.data() + (kh * s.KW + kw) * width;
            for (int64_t c = 0; c < width; ++c) a[c] += g[c] * in[c];
          });
        }
    for (int64_t c = 0; c < width; ++c)
      for (int64_t t = 0; t < taps; ++t) dw[(c0 + c) * taps + t] = acc[t * width + c];
  });
}

struct Data {
  std::vector<float> x, w, dy;
};
Data make_data(const ConvShape& s) {
  Data d{std::vector<float>(s.x_numel()), std::vector<float>(s.w_numel()), std::vector<float>(s.y_numel())};
  uint64_t state = 12345;
  auto uniform = [&] {  // in [-1, 1)
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<float>(static_cast<double>(state >> 11) * 0x1.0p-52 - 1.0);
  };
  for (float& v : d.x) v = uniform();
  for (float& v : d.w) v = uniform();
  for (float& v : d.dy) v = uniform();
  return d;
}
// One pass of one version; false when the version does not apply to the layer.
bool run(const std::string& version, int pass, const ConvShape& s, const Data& d, float* out) {
  const float *x = d.x.data(), *w = d.w.data(), *dy = d.dy.data();
  if (version == "plain") {
    if (!cpu::conv2d_is_depthwise(s)) return false;
    if (pass == 0) plain_forward(s, x, w, out);
    else if (pass == 1) plain_backward_data(s, w, dy, out);
    else plain_backward_weight(s, x, dy, out);
    return true;
  }
  if (version == "gemm") {
    if (cpu::conv2d_is_depthwise(s)) return false;  // one GEMM per channel: 50-200x the plain loop
    if (pass == 0) cpu::conv2d_forward_gemm<float>(s, x, w, nullptr, out);
    else if (pass == 1) cpu::conv2d_backward_data_gemm<float>(s, w, dy, out);
    else cpu::conv2d_backward_weight_gemm<float>(s, x, dy, out, nullptr);
    return true;
  }
  if (pass == 0) cpu::conv2d_forward<float>(s, x, w, nullptr, out);
  else if (pass == 1) cpu::conv2d_backward_data<float>(s, w, dy, out);
  else cpu::conv2d_backward_weight<float>(s, x, dy, out, nullptr);
  return true;
}

int64_t parse_positive(const char* flag, const char* value) {
  char* end = nullptr;
  const long long v = std::strtoll(value, &end, 10);
  if (!*value || *end || v <= 0) {
    std::fprintf(stderr, "lab_conv: %s needs a positive integer, got '%s'\n", flag, value);
    std::exit(2);
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t size = 256, batch = 4, threads = 2, reps = 10;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc || a.rfind("--", 0) != 0) {
      std::fprintf(stderr, "usage: lab_conv [--size S] [--batch B] [--threads T] [--reps R] [--layer SUBSTRING]\n");
      return 2;
    }
    const char* v = argv[++i];
    if (a == "--size") size = parse_positive("--size", v);
    else if (a == "--batch") batch = parse_positive("--batch", v);
    else if (a == "--threads") threads = parse_positive("--threads", v);
    else if (a == "--reps") reps = parse_positive("--reps", v);
    else if (a == "--layer") only = v;
    else {
      std::fprintf(stderr, "lab_conv: unknown option '%s'\n", a.c_str());
      return 2;
    }
  }
  set_num_threads(static_cast<int>(threads));
  std::printf("lab_conv: S=%lld B=%lld, %lld threads, ISA %s, median of %lld calls (wall ms)\n",
              static_cast<long long>(size), static_cast<long long>(batch), static_cast<long long>(threads),
              cpu_isa_name(cpu_isa()), static_cast<long long>(reps));
  std::printf("%-24s %-16s %-10s %10s %10s %10s %8s\n", "layer", "pass", "auto runs", "plain", "gemm", "auto",
              "speedup");
  bool ok = true;
  for (const Layer& l : kLayers) {
    if (!only.empty() && std::string(l.name).find(only) == std::string::npos) continue;
    const ConvShape s = shape_of(l, size, batch);
    const Data d = make_data(s);
    for (int pass = 0; pass < 3; ++pass) {
      const std::vector<double> want = lab::conv_reference_f64(pass, s, d.x, d.w, d.dy);
      double ms[3] = {NAN, NAN, NAN};
      const char* versions[3] = {"plain", "gemm", "auto"};
      for (int v = 0; v < 3; ++v) {
        std::vector<float> out(static_cast<size_t>(lab::conv_pass_numel(pass, s)));
        if (!run(versions[v], pass, s, d, out.data())) continue;
        const double err = lab::normalized_error(out, want);
        if (!(err < 1e-5)) {
          std::printf("%-24s %-16s %s: error %.3g against float64 (bound 1e-5): MISMATCH\n", l.name, lab::conv_pass_label(pass),
                      versions[v], err);
          ok = false;
          continue;
        }
        std::vector<double> t;
        for (int64_t r = 0; r < reps; ++r) {
          const auto t0 = std::chrono::steady_clock::now();
          run(versions[v], pass, s, d, out.data());
          t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        }
        std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
        ms[v] = t[t.size() / 2];
      }
      const cpu::ConvPass p = lab::conv_pass_of(pass);
      // Speedup of auto over v1: the plain loops for a depthwise layer, the implicit GEMM otherwise.
      const double base = std::isnan(ms[0]) ? ms[1] : ms[0];
      // A version that does not apply (plain loops on a dense layer, the GEMM on a depthwise one) or
      // failed its check prints "-", not a time.
      char cells[3][16];
      for (int v = 0; v < 3; ++v) {
        if (std::isnan(ms[v])) std::snprintf(cells[v], sizeof cells[v], "-");
        else std::snprintf(cells[v], sizeof cells[v], "%.3f", ms[v]);
      }
      std::printf("%-24s %-16s %-10s %10s %10s %10s %7.2fx\n", l.name, lab::conv_pass_label(pass),
                  cpu::conv_algo_name(cpu::conv_algo_chosen(s, p, true)), cells[0], cells[1], cells[2], base / ms[2]);
    }
  }
  return ok ? 0 : 1;
}
