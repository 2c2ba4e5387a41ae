// The Winograd lab (beside lab_gemm): every 3x3 stride-1 layer of ResNet50dilated, the PPM decoder
// and MobileNetV2's C1 head, through the implicit GEMM and each Winograd tile, in two modes:
//
//   error   the rounding error of each path, forward, backward data and backward weight, against
//           the float64 convolution (the float64 implicit GEMM, itself checked against the naive
//           reference in tests/kernels/test_conv_paths.cpp), as max |f32 - f64| / max |f64| over the
//           tensor, and its ratio to the float32 implicit GEMM's error. Inputs like a trained
//           network's: x >= 0 (half-normal: post-ReLU), w ~ N(0, 2 / (9 C)) (He), dy ~ N(0, 1).
//           The dispatcher (kernels/cpu/conv2d_dispatch.cpp) picks no tile whose ratio exceeds 1 on
//           any of these layers (F(2x2): 0.7).
//   time    CPU seconds per call of each path (validated first against the float32 implicit GEMM),
//           as milliseconds and as the implicit GEMM's FLOP count per second (2 * pixels * O * 9C:
//           "effective" GFLOP/s, so the columns compare directly).
//
// usage: build/bin/lab_winograd [error|time] [--size S] [--batch B] [--threads T] [--reps R]
//                               [--layer SUBSTRING] [--algos gemm,winograd2,...] [--channels C1,C2,...]
//   --channels replaces the model layers by square C -> C 3x3 layers at S/4, one per C: the sweep
//   behind the dispatcher's smallest channel count for Winograd (kernels/cpu/conv2d_dispatch.cpp).
//   --size is the input image's side: the stem layers run at S/2, layer1 at S/4, the rest at S/8
//   (defaults: error: S=128 B=1; time: S=256 B=4, the bench's training shape). CPU seconds of the
//   process: with --threads 1 they are stable on a shared machine, and only ratios within one run
//   mean anything there (docs/performance.md, "Winograd").
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cpu/conv2d.h"
#include "kernels/cpu/conv2d_winograd.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/lab/conv_lab_check.h"

using namespace seg;
using cpu::ConvShape;

namespace {

struct Layer {
  const char* name;
  int64_t C, O, scale, dil, count;  // scale: the feature map is S / scale; count: layers of this shape
};
const Layer kLayers[] = {
    {"resnet50 stem conv2 64->64", 64, 64, 2, 1, 1},
    {"resnet50 stem conv3 64->128", 64, 128, 2, 1, 1},
    {"resnet50 layer1 3x3 64", 64, 64, 4, 1, 3},
    {"resnet50 layer2 3x3 128", 128, 128, 8, 1, 3},
    {"resnet50 layer3 3x3 256 dil1", 256, 256, 8, 1, 1},
    {"resnet50 layer3 3x3 256 dil2", 256, 256, 8, 2, 5},
    {"resnet50 layer4 3x3 512 dil2", 512, 512, 8, 2, 1},
    {"resnet50 layer4 3x3 512 dil4", 512, 512, 8, 4, 2},
    {"ppm conv_last 4096->512", 4096, 512, 8, 1, 1},
    {"ppm cbr_deepsup 1024->256", 1024, 256, 8, 1, 1},
    {"c1 cbr 320->80 (mobilenetv2)", 320, 80, 8, 1, 1},
    {"c1 cbr_deepsup 160->80 (mobilenetv2)", 160, 80, 8, 1, 1},
};


double cpu_seconds() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

ConvShape shape_of(const Layer& l, int64_t size, int64_t batch) {
  ConvShape s;
  s.N = batch;
  s.H = s.W = std::max<int64_t>(1, size / l.scale);
  s.C = l.C, s.O = l.O, s.KH = s.KW = 3;
  s.pad_h = s.pad_w = s.dil_h = s.dil_w = l.dil;
  return s;
}

// Deterministic normal numbers (Box-Muller on a 64-bit LCG).
struct Normal {
  uint64_t state;
  double uniform() {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (static_cast<double>(state >> 11) + 0.5) * 0x1.0p-53;
  }
  double operator()() { return std::sqrt(-2.0 * std::log(uniform())) * std::cos(6.283185307179586 * uniform()); }
};

struct Data {
  std::vector<float> x, w, dy;
};
Data make_data(const ConvShape& s) {
  Data d{std::vector<float>(s.x_numel()), std::vector<float>(s.w_numel()), std::vector<float>(s.y_numel())};
  Normal n{12345};
  const double w_std = std::sqrt(2.0 / (9.0 * static_cast<double>(s.C)));
  for (float& v : d.x) v = static_cast<float>(std::abs(n()));
  for (float& v : d.w) v = static_cast<float>(w_std * n());
  for (float& v : d.dy) v = static_cast<float>(n());
  return d;
}

// Runs one pass of one path (float32). algo: gemm or winograd2/4/6.
void run(const std::string& algo, int pass, const ConvShape& s, const Data& d, float* out) {
  const int m = algo == "gemm" ? 0 : algo.back() - '0';
  switch (pass) {
    case 0:
      if (m) cpu::conv2d_forward_winograd(m, s, d.x.data(), d.w.data(), nullptr, out);
      else cpu::conv2d_forward_gemm<float>(s, d.x.data(), d.w.data(), nullptr, out);
      break;
    case 1:
      if (m) cpu::conv2d_backward_data_winograd(m, s, d.w.data(), d.dy.data(), out);
      else cpu::conv2d_backward_data_gemm<float>(s, d.w.data(), d.dy.data(), out);
      break;
    default:
      if (m) cpu::conv2d_backward_weight_winograd(m, s, d.x.data(), d.dy.data(), out, nullptr);
      else cpu::conv2d_backward_weight_gemm<float>(s, d.x.data(), d.dy.data(), out, nullptr);
  }
}
std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t a = 0;
  while (a <= s.size()) {
    const size_t b = std::min(s.find(',', a), s.size());
    if (b > a) out.push_back(s.substr(a, b - a));
    a = b + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = "error", filter, algos_arg = "gemm,winograd2,winograd4,winograd6", channels_arg;
  int64_t size = -1, batch = -1;
  int threads = 1, reps = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "lab_winograd: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "error" || a == "time") mode = a;
    else if (a == "--size") size = std::atoll(next().c_str());
    else if (a == "--batch") batch = std::atoll(next().c_str());
    else if (a == "--threads") threads = std::atoi(next().c_str());
    else if (a == "--reps") reps = std::atoi(next().c_str());
    else if (a == "--layer") filter = next();
    else if (a == "--algos") algos_arg = next();
    else if (a == "--channels") channels_arg = next();
    else {
      std::fprintf(stderr, "usage: lab_winograd [error|time] [--size S] [--batch B] [--threads T] [--reps R] "
                           "[--layer SUBSTRING] [--algos gemm,winograd2,...] [--channels C1,C2,...]\n");
      return 2;
    }
  }
  const bool timing = mode == "time";
  if (size < 0) size = timing ? 256 : 128;
  if (batch < 0) batch = timing ? 4 : 1;
  set_num_threads(threads);
  const std::vector<std::string> algos = split(algos_arg);
  std::printf("Winograd lab, %s: image %lld x %lld, batch %lld, %d thread(s), ISA %s\n", mode.c_str(),
              static_cast<long long>(size), static_cast<long long>(size), static_cast<long long>(batch), threads,
              cpu_isa_name(cpu_isa()));
  if (timing) std::printf("  ms per call (CPU seconds of the process) and effective GFLOP/s (2*pixels*O*9C / t)\n");
  else std::printf("  max |f32 - f64| / max |f64|, and in brackets the ratio to the implicit GEMM's\n");
  std::printf("%-46s %-16s", "layer (feature map)", "pass");
  for (const auto& a : algos) std::printf(" %20s", a.c_str());
  std::printf("\n");
  std::vector<Layer> layers(std::begin(kLayers), std::end(kLayers));
  std::vector<std::string> sweep_names;  // the Layer names point into these
  if (!channels_arg.empty()) {
    layers.clear();
    for (const std::string& c : split(channels_arg)) sweep_names.push_back("sweep 3x3 " + c + "->" + c);
    for (const std::string& name : sweep_names) {
      const int64_t c = std::atoll(name.c_str() + name.rfind('>') + 1);
      if (c < 1) {
        std::fprintf(stderr, "lab_winograd: --channels wants positive channel counts, got '%s'\n", channels_arg.c_str());
        return 2;
      }
      layers.push_back({name.c_str(), c, c, 4, 1, 1});
    }
  }
  double worst_ratio[7] = {};
  for (const Layer& l : layers) {
    if (!filter.empty() && std::string(l.name).find(filter) == std::string::npos) continue;
    const ConvShape s = shape_of(l, size, batch);
    const Data d = make_data(s);
    const double flops = 2.0 * static_cast<double>(s.N * s.Ho() * s.Wo() * s.O * 9 * s.C);
    for (int pass = 0; pass < 3; ++pass) {
      char label[64];
      std::snprintf(label, sizeof label, "%s (%lldx%lld)", l.name, static_cast<long long>(s.H), static_cast<long long>(s.W));
      std::printf("%-46s %-16s", label, lab::conv_pass_label(pass));
      std::fflush(stdout);
      const int64_t n = lab::conv_pass_numel(pass, s);
      std::vector<double> ref;
      std::vector<float> base;
      double base_err = 0;
      if (!timing) ref = lab::conv_reference_f64(pass, s, d.x, d.w, d.dy);
      for (const auto& a : algos) {
        std::vector<float> out(static_cast<size_t>(n), NAN);
        run(a, pass, s, d, out.data());
        if (!timing) {
          const double e = lab::normalized_error(out, ref);
          if (a == "gemm") base_err = e;
          const double ratio = base_err > 0 ? e / base_err : 0;
          if (a != "gemm" && a.back() >= '0' && a.back() <= '6') worst_ratio[a.back() - '0'] = std::max(worst_ratio[a.back() - '0'], ratio);
          char cell[64];
          std::snprintf(cell, sizeof cell, "%.2e (%.1f)", e, ratio);
          std::printf(" %20s", cell);
        } else {
          // validate against the implicit GEMM (a wrong index gives errors of order 1)
          if (a == "gemm") base = out;
          else if (!base.empty()) {
            const std::vector<double> want(base.begin(), base.end());
            const double e = lab::normalized_error(out, want);
            if (!(e < 1e-2)) {
              std::printf("\n%s FAILED validation on %s %s: error %g\n", a.c_str(), l.name, lab::conv_pass_label(pass), e);
              return 1;
            }
          }
          const int r = reps > 0 ? reps : std::max(1, static_cast<int>(std::min(20.0, 2e9 / flops)));
          const double t0 = cpu_seconds();
          for (int k = 0; k < r; ++k) run(a, pass, s, d, out.data());
          const double t = (cpu_seconds() - t0) / r;
          char cell[64];
          std::snprintf(cell, sizeof cell, "%8.2f ms %6.1f", 1e3 * t, flops / t / 1e9);
          std::printf(" %20s", cell);
        }
        std::fflush(stdout);
      }
      std::printf("\n");
    }
  }
  if (!timing) {
    std::printf("largest ratio to the implicit GEMM's error over these layers and passes:");
    for (int m : {2, 4, 6})
      if (worst_ratio[m] > 0) std::printf("  winograd%d %.1f", m, worst_ratio[m]);
    std::printf("\n");
  }
  return 0;
}
