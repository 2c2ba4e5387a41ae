// The one place that chooses how a convolution runs on the CPU, float32 and float64 alike.
//   depthwise (groups == C == O)             -> conv2d_depthwise.cpp (vector loops over channels)
//   3x3 stride 1 dense, float32, >= 32 ch.   -> conv2d_winograd.cpp (F(2x2))
//   backward weight with <= 4 input channels -> conv2d_direct.cpp (outer products per pixel chunk)
//   everything else                          -> conv2d_gemm.cpp (implicit GEMM)
// SEG_CONV_ALGO (or set_conv_algo) forces a path for tests and benchmarks; a forced path that cannot
// run the shape or the element type falls back to automatic (conv2d.h).
//
// The Winograd rule (winograd_tile below) and where it comes from (docs/performance.md, "Winograd"):
//  * error: `build/bin/lab_winograd error` measures each tile against a float64 convolution on the
//    3x3 layers of ResNet50dilated, the PPM decoder and the C1 head; the largest ratios to the f32
//    implicit GEMM's own error on the same layer and pass were 0.7 (F(2x2)), 8.2 (F(4x4)) and
//    12.8 (F(6x6)). The stated bound for the automatic choice is 1x: Winograd replaces the implicit
//    GEMM only where it rounds no more than it. The model goldens (bounds at 8x PyTorch's own
//    float32 error) leave no more room: with F(4x4) on these layers 3 of their 8 cases fail, with
//    F(2x2) all pass. F(4x4) and F(6x6) stay available through SEG_CONV_ALGO.
//  * cost: callgrind instruction counts of lab_winograd on ResNet50's layer3 (3x3, 256 channels,
//    dilation 2, 16x16, all three passes): implicit GEMM 264M, F(2x2) 151M, F(4x4) 143M.
//  * small channel counts: the transforms cost per channel what the GEMMs cost per channel pair, so
//    with few channels Winograd cannot win. The cut at 32 (GEMM depth and outputs) is the measured
//    crossover: `lab_winograd time --channels 16,24,32,...` (docs/performance.md, "The cut at 32
//    channels, measured"): below 32 the implicit GEMM is as fast or faster in the forward and
//    backward-data passes on AVX2 and AVX-512; from 32 F(2x2) wins or breaks even in every pass.
//    The 3x3 stride-1 dense layers of ResNet50dilated, PPM and C1 have >= 40 channels.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <type_traits>

#include "kernels/cpu/conv2d.h"
#include "kernels/cpu/conv2d_winograd.h"

namespace seg::cpu {

namespace {
ConvAlgo algo_from_env() {
  const char* env = std::getenv("SEG_CONV_ALGO");
  if (!env) return ConvAlgo::automatic;
  for (ConvAlgo a : {ConvAlgo::direct, ConvAlgo::gemm, ConvAlgo::depthwise, ConvAlgo::winograd, ConvAlgo::winograd2,
                     ConvAlgo::winograd4, ConvAlgo::winograd6, ConvAlgo::no_winograd})
    if (!std::strcmp(env, conv_algo_name(a))) return a;
  return ConvAlgo::automatic;
}
std::atomic<int>& algo_state() {
  static std::atomic<int> state{static_cast<int>(algo_from_env())};
  return state;
}

ConvAlgo winograd_of(int m) { return m == 2 ? ConvAlgo::winograd2 : m == 6 ? ConvAlgo::winograd6 : ConvAlgo::winograd4; }
int tile_of(ConvAlgo a) { return a == ConvAlgo::winograd2 ? 2 : a == ConvAlgo::winograd6 ? 6 : 4; }

// The GEMM a pass runs, in the forward form of conv2d_winograd.h: depth K, outputs N, output pixels.
struct PassShape {
  int64_t K, N, pixels;
};
PassShape pass_shape(const ConvShape& s, ConvPass pass) {
  const int64_t out = s.N * s.Ho() * s.Wo(), in = s.N * s.H * s.W;
  if (pass == ConvPass::backward_data) return {s.O, s.C, in};
  return {s.C, s.O, out};
}

// The Winograd tile for a 3x3 stride-1 dense float32 layer (the rule above), 0 = implicit GEMM.
int winograd_tile(const ConvShape& s, ConvPass pass) {
  const PassShape p = pass_shape(s, pass);
  if (p.K < 32 || p.N < 32) return 0;
  return 2;
}

// The first layer of every model (RGB: 3 input channels) computes its weight gradient directly:
// a GEMM of depth N*Ho*Wo with only KH*KW*3 x O outputs, which the implicit GEMM packs 3 floats at a
// time on one thread (it never splits the depth). MobileNetV2dilated's first conv (3 -> 32, 3x3,
// stride 2, input 4 x 256x256): 7.18 ms (implicit GEMM) against 2.23 ms (direct), `build/bin/lab_conv
// --layer stem` (2 threads, wall-clock medians; docs/performance.md, "Early convolutions").
constexpr int64_t kDirectWeightMaxChannels = 4;

bool is_winograd(ConvAlgo a) {
  return a == ConvAlgo::winograd || a == ConvAlgo::winograd2 || a == ConvAlgo::winograd4 || a == ConvAlgo::winograd6;
}

// The choice log (header): a linear search, as a model has a few dozen distinct layers.
std::atomic<bool> g_recording{false};
std::mutex g_choices_mutex;
std::vector<ConvChoice>& choices() {
  static std::vector<ConvChoice> v;
  return v;
}
bool same_shape(const ConvShape& a, const ConvShape& b) {
  return a.N == b.N && a.H == b.H && a.W == b.W && a.C == b.C && a.O == b.O && a.KH == b.KH && a.KW == b.KW &&
         a.stride_h == b.stride_h && a.stride_w == b.stride_w && a.pad_h == b.pad_h && a.pad_w == b.pad_w &&
         a.dil_h == b.dil_h && a.dil_w == b.dil_w && a.groups == b.groups;
}
template <class T>
ConvAlgo choose(const ConvShape& s, ConvPass pass) {
  constexpr bool f32 = std::is_same_v<T, float>;
  const ConvAlgo a = conv_algo_chosen(s, pass, f32);
  if (g_recording.load(std::memory_order_relaxed)) {
    const std::lock_guard<std::mutex> lock(g_choices_mutex);
    auto& v = choices();
    auto it = std::find_if(v.begin(), v.end(), [&](const ConvChoice& c) {
      return c.pass == pass && c.f32 == f32 && c.algo == a && same_shape(c.shape, s);
    });
    if (it == v.end()) v.push_back({s, pass, f32, a, 1});
    else ++it->calls;
  }
  return a;
}
}  // namespace

void set_conv_choice_recording(bool on) {
  const std::lock_guard<std::mutex> lock(g_choices_mutex);
  if (on) choices().clear();
  g_recording.store(on, std::memory_order_relaxed);
}
std::vector<ConvChoice> conv_choices() {
  const std::lock_guard<std::mutex> lock(g_choices_mutex);
  return choices();
}
const char* conv_pass_name(ConvPass pass) {
  switch (pass) {
    case ConvPass::forward: return "forward";
    case ConvPass::backward_data: return "backward data";
    case ConvPass::backward_weight: return "backward weight";
  }
  return "?";
}

ConvAlgo conv_algo() { return static_cast<ConvAlgo>(algo_state().load(std::memory_order_relaxed)); }
void set_conv_algo(ConvAlgo algo) { algo_state().store(static_cast<int>(algo), std::memory_order_relaxed); }

const char* conv_algo_name(ConvAlgo algo) {
  switch (algo) {
    case ConvAlgo::automatic: return "auto";
    case ConvAlgo::direct: return "direct";
    case ConvAlgo::gemm: return "gemm";
    case ConvAlgo::depthwise: return "depthwise";
    case ConvAlgo::winograd: return "winograd";
    case ConvAlgo::winograd2: return "winograd2";
    case ConvAlgo::winograd4: return "winograd4";
    case ConvAlgo::winograd6: return "winograd6";
    case ConvAlgo::no_winograd: return "no-winograd";
  }
  return "?";
}

ConvAlgo conv_algo_chosen(const ConvShape& s, ConvPass pass, bool f32) {
  const ConvAlgo forced = conv_algo();
  if (forced == ConvAlgo::direct || forced == ConvAlgo::gemm) return forced;
  const bool winograd_ok = f32 && forced != ConvAlgo::no_winograd && conv2d_winograd_applicable(s);
  if (is_winograd(forced) && winograd_ok) {
    if (forced != ConvAlgo::winograd) return forced;
    const int m = winograd_tile(s, pass);
    return winograd_of(m ? m : 2);
  }
  if (conv2d_is_depthwise(s)) return ConvAlgo::depthwise;
  if (pass == ConvPass::backward_weight && s.Cg() <= kDirectWeightMaxChannels) return ConvAlgo::direct;
  if (winograd_ok) {
    const int m = winograd_tile(s, pass);
    if (m) return winograd_of(m);
  }
  return ConvAlgo::gemm;
}

template <class T>
void conv2d_forward(const ConvShape& s, const T* x, const T* w, const T* b, T* y) {
  const ConvAlgo a = choose<T>(s, ConvPass::forward);
  if constexpr (std::is_same_v<T, float>)
    if (is_winograd(a)) return conv2d_forward_winograd(tile_of(a), s, x, w, b, y);
  switch (a) {
    case ConvAlgo::depthwise: return conv2d_forward_depthwise<T>(s, x, w, b, y);
    case ConvAlgo::direct: return conv2d_forward_direct<T>(s, x, w, b, y);
    default: return conv2d_forward_gemm<T>(s, x, w, b, y);
  }
}

template <class T>
void conv2d_backward_data(const ConvShape& s, const T* w, const T* dy, T* dx) {
  const ConvAlgo a = choose<T>(s, ConvPass::backward_data);
  if constexpr (std::is_same_v<T, float>)
    if (is_winograd(a)) return conv2d_backward_data_winograd(tile_of(a), s, w, dy, dx);
  switch (a) {
    case ConvAlgo::depthwise: return conv2d_backward_data_depthwise<T>(s, w, dy, dx);
    case ConvAlgo::direct: return conv2d_backward_data_direct<T>(s, w, dy, dx);
    default: return conv2d_backward_data_gemm<T>(s, w, dy, dx);
  }
}

template <class T>
void conv2d_backward_weight(const ConvShape& s, const T* x, const T* dy, T* dw, T* db) {
  const ConvAlgo a = choose<T>(s, ConvPass::backward_weight);
  if constexpr (std::is_same_v<T, float>)
    if (is_winograd(a)) return conv2d_backward_weight_winograd(tile_of(a), s, x, dy, dw, db);
  switch (a) {
    case ConvAlgo::depthwise: return conv2d_backward_weight_depthwise<T>(s, x, dy, dw, db);
    case ConvAlgo::direct: return conv2d_backward_weight_direct<T>(s, x, dy, dw, db);
    default: return conv2d_backward_weight_gemm<T>(s, x, dy, dw, db);
  }
}

#define SEG_CONV_DISPATCH_INSTANTIATE(T)                                                       \
  template void conv2d_forward<T>(const ConvShape&, const T*, const T*, const T*, T*);       \
  template void conv2d_backward_data<T>(const ConvShape&, const T*, const T*, T*);           \
  template void conv2d_backward_weight<T>(const ConvShape&, const T*, const T*, T*, T*);
SEG_CONV_DISPATCH_INSTANTIATE(float)
SEG_CONV_DISPATCH_INSTANTIATE(double)
#undef SEG_CONV_DISPATCH_INSTANTIATE

}  // namespace seg::cpu
