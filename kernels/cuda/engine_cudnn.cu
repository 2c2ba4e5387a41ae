// The cuDNN engine (engine_cudnn.h): cuDNN's legacy convolution API through function pointers
// resolved with dlopen/dlsym, so the build needs only cudnn.h. Host code only.
#include "kernels/cuda/engine_cudnn.h"

#include <atomic>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "kernels/cuda/engine.h"

#if defined(SEG_WITH_CUDNN) && !defined(SEG_CUDA_SIM)
#include <cuda_runtime.h>
#include <cudnn.h>
#include <dlfcn.h>
#include <glob.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>
#endif

namespace seg::cuda {

#if defined(SEG_WITH_CUDNN) && !defined(SEG_CUDA_SIM)

namespace {

#define SEG_CUDNN_FUNCTIONS(X)                                                                                   \
  X(cudnnGetVersion) X(cudnnGetErrorString) X(cudnnCreate) X(cudnnSetStream) X(cudnnCreateTensorDescriptor)     \
  X(cudnnDestroyTensorDescriptor) X(cudnnSetTensor4dDescriptor) X(cudnnSetTensor4dDescriptorEx)                 \
  X(cudnnCreateFilterDescriptor)                                                                                 \
  X(cudnnDestroyFilterDescriptor) X(cudnnSetFilter4dDescriptor) X(cudnnCreateConvolutionDescriptor)             \
  X(cudnnDestroyConvolutionDescriptor) X(cudnnSetConvolution2dDescriptor) X(cudnnSetConvolutionGroupCount)      \
  X(cudnnSetConvolutionMathType) X(cudnnGetConvolutionForwardAlgorithm_v7)                                       \
  X(cudnnGetConvolutionBackwardDataAlgorithm_v7) X(cudnnGetConvolutionBackwardFilterAlgorithm_v7)               \
  X(cudnnFindConvolutionForwardAlgorithmEx) X(cudnnFindConvolutionBackwardDataAlgorithmEx)                      \
  X(cudnnFindConvolutionBackwardFilterAlgorithmEx)                                                               \
  X(cudnnConvolutionForward) X(cudnnConvolutionBackwardData) X(cudnnConvolutionBackwardFilter)                   \
  X(cudnnAddTensor)

struct Api {
#define SEG_DECLARE(f) decltype(&::f) f = nullptr;
  SEG_CUDNN_FUNCTIONS(SEG_DECLARE)
#undef SEG_DECLARE
  bool loaded = false;
  std::string path, error;
};

std::vector<std::string> candidates() {
  std::vector<std::string> c;
  if (const char* env = std::getenv("SEG_CUDNN_LIBRARY")) c.emplace_back(env);
#ifdef SEG_CUDNN_LIBRARY_DIR
  c.emplace_back(std::string(SEG_CUDNN_LIBRARY_DIR) + "/libcudnn.so.9");
#endif
  // The nvidia-cudnn-cu13 wheel installs nvidia/cudnn/lib/libcudnn.so.9 into site-packages.
  std::vector<std::string> prefixes;
  for (const char* var : {"VIRTUAL_ENV", "CONDA_PREFIX"})
    if (const char* p = std::getenv(var)) prefixes.emplace_back(p);
  if (const char* home = std::getenv("HOME")) prefixes.push_back(std::string(home) + "/.local");
  prefixes.insert(prefixes.end(), {"/usr/local", "/usr", "/opt/conda"});
  for (const std::string& prefix : prefixes)
    for (const char* sub : {"site-packages", "dist-packages"}) {
      const std::string pattern = prefix + "/lib/python3*/" + sub + "/nvidia/cudnn/lib/libcudnn.so.9";
      glob_t g{};
      if (glob(pattern.c_str(), 0, nullptr, &g) == 0)
        for (size_t i = 0; i < g.gl_pathc; ++i) c.emplace_back(g.gl_pathv[i]);
      globfree(&g);
    }
  c.emplace_back("/usr/lib/python3/dist-packages/nvidia/cudnn/lib/libcudnn.so.9");
  c.emplace_back("libcudnn.so.9");  // LD_LIBRARY_PATH, the loader cache
  return c;
}

const Api& api() {
  static Api a;
  static std::once_flag once;
  std::call_once(once, [] {
    std::string tried;
    for (const std::string& path : candidates()) {
      void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!lib) {
        tried += "\n  " + path + ": " + dlerror();
        continue;
      }
      bool ok = true;
#define SEG_RESOLVE(f)                                              \
  a.f = reinterpret_cast<decltype(&::f)>(dlsym(lib, #f));           \
  if (!a.f) {                                                       \
    ok = false;                                                     \
    tried += "\n  " + path + ": no symbol " #f;                     \
  }
      SEG_CUDNN_FUNCTIONS(SEG_RESOLVE)
#undef SEG_RESOLVE
      if (ok) {
        a.loaded = true;
        a.path = path;
        return;
      }
      dlclose(lib);
    }
    a.error = "libcudnn.so.9 could not be loaded (set SEG_CUDNN_LIBRARY to its path, or pip install "
              "nvidia-cudnn-cu13); tried:" + tried;
  });
  return a;
}

void check(cudnnStatus_t s, const char* what) {
  if (s != CUDNN_STATUS_SUCCESS)
    throw std::runtime_error(std::string("cuDNN: ") + what + " failed: " + api().cudnnGetErrorString(s));
}

const Api& require() {
  const Api& a = api();
  if (!a.loaded) throw EngineUnavailable("engine 'cudnn' is not available: " + a.error);
  return a;
}

cudnnHandle_t handle_for_current_device() {
  static std::mutex mutex;
  static cudnnHandle_t handles[64] = {};
  int device = 0;
  cudaGetDevice(&device);
  std::lock_guard<std::mutex> lock(mutex);
  cudnnHandle_t& h = handles[device & 63];
  if (!h) check(require().cudnnCreate(&h), "cudnnCreate");
  return h;
}

template <class T>
cudnnDataType_t data_type() {
  if constexpr (std::is_same_v<T, float>) return CUDNN_DATA_FLOAT;
  else if constexpr (std::is_same_v<T, seg::f16>) return CUDNN_DATA_HALF;
  else return CUDNN_DATA_BFLOAT16;
}

// Descriptors of one convolution: x/dx (N, C, H, W) and y/dy (N, O, Ho, Wo) as NHWC with pixel
// strides, the filter, the bias (1, O, 1, 1), the convolution.
struct Descriptors {
  const Api& a;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;

  template <class T>
  Descriptors(const ConvShape& s, int64_t ldx, int64_t ldy, T*) : a(require()) {
    const cudnnDataType_t t = data_type<T>();
    auto i = [](int64_t v) { return static_cast<int>(v); };
    check(a.cudnnCreateTensorDescriptor(&x), "create x");
    check(a.cudnnCreateTensorDescriptor(&y), "create y");
    check(a.cudnnCreateTensorDescriptor(&bias), "create bias");
    check(a.cudnnCreateFilterDescriptor(&w), "create w");
    check(a.cudnnCreateConvolutionDescriptor(&conv), "create conv");
    // Dense activations get the NHWC format itself, so cuDNN's NHWC kernels are eligible without
    // relying on it to recognise the layout from strides; views with a pixel stride keep the strides.
    auto activation = [&](cudnnTensorDescriptor_t desc, int64_t c, int64_t h, int64_t wd, int64_t ld,
                          const char* what) {
      if (ld == c)
        check(a.cudnnSetTensor4dDescriptor(desc, CUDNN_TENSOR_NHWC, t, i(s.N), i(c), i(h), i(wd)), what);
      else
        check(a.cudnnSetTensor4dDescriptorEx(desc, t, i(s.N), i(c), i(h), i(wd), i(h * wd * ld), 1, i(wd * ld), i(ld)),
              what);
    };
    activation(x, s.C, s.H, s.W, ldx, "x descriptor");
    activation(y, s.O, s.Ho(), s.Wo(), ldy, "y descriptor");
    check(a.cudnnSetTensor4dDescriptorEx(bias, t, 1, i(s.O), 1, 1, i(s.O), 1, i(s.O), i(s.O)), "bias descriptor");
    check(a.cudnnSetFilter4dDescriptor(w, t, CUDNN_TENSOR_NHWC, i(s.O), i(s.Cg()), i(s.KH), i(s.KW)),
          "filter descriptor");
    check(a.cudnnSetConvolution2dDescriptor(conv, i(s.pad_h), i(s.pad_w), i(s.stride_h), i(s.stride_w), i(s.dil_h),
                                            i(s.dil_w), CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
          "convolution descriptor");
    check(a.cudnnSetConvolutionGroupCount(conv, i(s.groups)), "group count");
    const cudnnMathType_t math = std::is_same_v<T, float> ? (allow_tf32() ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH)
                                                          : CUDNN_TENSOR_OP_MATH;
    check(a.cudnnSetConvolutionMathType(conv, math), "math type");
  }
  ~Descriptors() {
    if (x) a.cudnnDestroyTensorDescriptor(x);
    if (y) a.cudnnDestroyTensorDescriptor(y);
    if (bias) a.cudnnDestroyTensorDescriptor(bias);
    if (w) a.cudnnDestroyFilterDescriptor(w);
    if (conv) a.cudnnDestroyConvolutionDescriptor(conv);
  }
  Descriptors(const Descriptors&) = delete;
  Descriptors& operator=(const Descriptors&) = delete;
};

// ---- Choosing an algorithm ------------------------------------------------------------------------
// cuDNN's legacy API offers several algorithms per direction. Which one runs decides cuDNN's speed
// (the first H200 run, which took the heuristic's first pick, saw cuDNN at 1-19 TFLOP/s on shapes
// where our own kernels reached 30-117) and its error: FFT and Winograd transform the operands, so
// their error is not that of a sum of products.

const char* algo_name(ConvDirection dir, int algo) {
  static const char* const fwd[] = {"IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT",
                                    "FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
  static const char* const data[] = {"ALGO_0", "ALGO_1", "FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
  static const char* const filter[] = {"ALGO_0", "ALGO_1", "FFT", "ALGO_3", "WINOGRAD", "WINOGRAD_NONFUSED",
                                       "FFT_TILING"};
  if (algo < 0) return "?";
  if (dir == ConvDirection::forward) return algo < 8 ? fwd[algo] : "?";
  if (dir == ConvDirection::backward_data) return algo < 6 ? data[algo] : "?";
  return algo < 7 ? filter[algo] : "?";
}

// The algorithms that compute each output as a sum of products (implicit or explicit GEMM, direct):
// not FFT, not Winograd.
bool sums_products(ConvDirection dir, int algo) {
  if (dir == ConvDirection::forward) return algo <= CUDNN_CONVOLUTION_FWD_ALGO_DIRECT;
  if (dir == ConvDirection::backward_data) return algo <= CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
  return algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0 || algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1 ||
         algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3;
}

const char* direction_name(ConvDirection dir) {
  return dir == ConvDirection::forward ? "forward" : dir == ConvDirection::backward_data ? "backward-data"
                                                                                          : "backward-filter";
}

struct Choice {
  int algo = 0;
  size_t memory = 0;  // workspace bytes the algorithm needs
  std::string report;
};

std::atomic<int>& search_state() {
  static std::atomic<int> state{static_cast<int>(CudnnAlgoSearch::measured)};
  return state;
}
thread_local std::string t_last_choice;

// The search may consider algorithms that need up to this much workspace (or args.workspace, if
// larger): what PyTorch's default caching allocator would usually hand cuDNN on a large GPU.
constexpr size_t kSearchWorkspace = size_t{256} << 20;

double mib(size_t bytes) { return static_cast<double>(bytes) / (1 << 20); }

// The first entry of cuDNN's list (ranked by the heuristic, or by measured time) that ran, fits the
// workspace, is deterministic when that is required and, for sums_only, sums products.
template <class Perf>
Choice first_fitting(ConvDirection dir, const Perf* perf, int n, size_t cap, bool sums_only, bool measured) {
  for (int i = 0; i < n; ++i) {
    const int algo = static_cast<int>(perf[i].algo);
    if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > cap) continue;
    if (deterministic() && perf[i].determinism != CUDNN_DETERMINISTIC) continue;
    if (sums_only && !sums_products(dir, algo)) continue;
    char buf[256];
    if (measured)
      std::snprintf(buf, sizeof buf, "cuDNN %s: %s, %.1f MiB workspace, %.3f ms in cuDNN's own search%s",
                    direction_name(dir), algo_name(dir, algo), mib(perf[i].memory), perf[i].time,
                    sums_only ? " (sums of products only)" : "");
    else
      std::snprintf(buf, sizeof buf, "cuDNN %s: %s, %.1f MiB workspace, heuristic rank %d%s%s", direction_name(dir),
                    algo_name(dir, algo), mib(perf[i].memory), i + 1, deterministic() ? ", deterministic" : "",
                    sums_only ? ", sums of products only" : "");
    return {algo, perf[i].memory, buf};
  }
  throw std::runtime_error(std::string("cuDNN: no ") + direction_name(dir) + " algorithm fits " +
                           std::to_string(cap) + " bytes of workspace" + (deterministic() ? " and is deterministic" : "") +
                           (sums_only ? " and sums products" : ""));
}

// Device memory for one call: the caller's workspace when it is large enough, else a stream-ordered
// allocation (cudaMallocAsync; freed with cudaFreeAsync after the call's work on the same stream, so
// it is never reused while cuDNN's kernels may still read it).
class Scratch {
 public:
  Scratch(const TcWorkspace& given, size_t need, Stream stream) : stream_(stream) {
    if (need == 0) return;
    if (given.data && given.bytes >= need) {
      data_ = given.data;
      return;
    }
    const cudaError_t e = cudaMallocAsync(&owned_, need, stream);
    if (e != cudaSuccess) {
      cudaGetLastError();  // clear the sticky error of a failed allocation
      owned_ = nullptr;
      error_ = cudaGetErrorString(e);
      return;
    }
    data_ = owned_;
  }
  ~Scratch() {
    if (owned_) cudaFreeAsync(owned_, stream_);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  void* data() const { return data_; }
  const std::string& error() const { return error_; }

 private:
  Stream stream_;
  void* data_ = nullptr;
  void* owned_ = nullptr;
  std::string error_;
};

// Decided once per (direction, dtype, shape, strides, workspace, search, TF32, determinism, device):
// a measured search runs every algorithm, which is far too slow to repeat per call.
template <class T, class Search>
Choice cached_choice(ConvDirection dir, const ConvShape& s, int64_t ldx, int64_t ldy, size_t cap, Search search) {
  int device = 0;
  cudaGetDevice(&device);
  char key[320];
  std::snprintf(key, sizeof key, "%d %d %zu %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %zu %d %d %d %d",
                static_cast<int>(dir), static_cast<int>(data_type<T>()), sizeof(T), (long long)s.N, (long long)s.C,
                (long long)s.H, (long long)s.W, (long long)s.O, (long long)s.KH, (long long)s.KW, (long long)s.stride_h,
                (long long)s.stride_w, (long long)s.pad_h, (long long)s.pad_w, (long long)s.dil_h, (long long)s.dil_w,
                (long long)s.groups, (long long)ldx, (long long)ldy, cap, search_state().load(), allow_tf32() ? 1 : 0,
                deterministic() ? 1 : 0, device);
  static std::mutex mutex;
  static std::map<std::string, Choice> cache;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
  }
  Choice c = search();  // outside the lock: a measured search takes milliseconds to seconds
  char shape[200];
  std::snprintf(shape, sizeof shape, " for N=%lld H=%lld W=%lld C=%lld O=%lld %lldx%lld s%lld d%lld g%lld",
                (long long)s.N, (long long)s.H, (long long)s.W, (long long)s.C, (long long)s.O, (long long)s.KH,
                (long long)s.KW, (long long)s.stride_h, (long long)s.dil_h, (long long)s.groups);
  engine_log(c.report + shape);  // --verbose
  std::lock_guard<std::mutex> lock(mutex);
  return cache.emplace(key, c).first->second;
}

// Resolve the search mode: a measured search may pick differently from run to run (timings are
// noisy), which --deterministic forbids, so there the heuristic's stable ranking decides.
struct Mode {
  bool measured, sums_only;
};
Mode search_mode() {
  const auto m = static_cast<CudnnAlgoSearch>(search_state().load());
  return {m != CudnnAlgoSearch::heuristic && !deterministic(), m == CudnnAlgoSearch::sums_only};
}

int64_t ld_or(int64_t given, int64_t dense) { return given ? given : dense; }

// One direction's whole call, shared by the three: choose the algorithm (once per shape: cached),
// find its workspace, run it. Perf/Count are the direction's cudnn*AlgoPerf_t and algorithm count;
// heuristic(perf, &n) and measured(perf, &n, workspace, bytes) fill cuDNN's ranking (the
// cudnnGet*_v7 and cudnnFind*Ex calls), run(algo, workspace, bytes) runs the chosen algorithm.
template <class T, class Perf, int Count, class Heuristic, class Measured, class Run>
void choose_and_run(ConvDirection dir, const ConvShape& s, int64_t ldx, int64_t ldy, const ConvTcArgs& args,
                    Stream stream, Heuristic heuristic, Measured measured, Run run) {
  const size_t cap = args.workspace.bytes > kSearchWorkspace ? args.workspace.bytes : kSearchWorkspace;
  const Mode mode = search_mode();
  const Choice c = cached_choice<T>(dir, s, ldx, ldy, cap, [&] {
    Perf perf[Count];
    int n = 0;
    if (!mode.measured) {
      heuristic(perf, &n);
      return first_fitting(dir, perf, n, cap, mode.sums_only, false);
    }
    Scratch ws(args.workspace, cap, stream);
    const size_t usable = ws.data() ? cap : 0;
    measured(perf, &n, ws.data(), usable);
    return first_fitting(dir, perf, n, usable, mode.sums_only, true);
  });
  t_last_choice = c.report;
  Scratch ws(args.workspace, c.memory, stream);
  if (c.memory && !ws.data())
    throw std::runtime_error("cuDNN: no memory for the " + std::to_string(c.memory) + "-byte workspace of " + c.report +
                             ": " + ws.error());
  run(c.algo, ws.data(), c.memory);
}

// The current device's handle, bound to `stream`.
cudnnHandle_t handle_on(Stream stream) {
  cudnnHandle_t h = handle_for_current_device();
  check(require().cudnnSetStream(h, stream), "set stream");
  return h;
}

}  // namespace

void set_cudnn_algo_search(CudnnAlgoSearch search) { search_state().store(static_cast<int>(search)); }
CudnnAlgoSearch cudnn_algo_search() { return static_cast<CudnnAlgoSearch>(search_state().load()); }
std::string cudnn_last_choice(bool clear) {
  std::string r = t_last_choice;
  if (clear) t_last_choice.clear();
  return r;
}

bool cudnn_available(std::string* why_not) {
  const Api& a = api();
  if (!a.loaded && why_not) *why_not = a.error;
  return a.loaded;
}

std::string cudnn_description() {
  const Api& a = api();
  return a.loaded ? a.path + " (version " + std::to_string(a.cudnnGetVersion()) + ")" : "";
}

template <class T>
void conv2d_forward_cudnn(const ConvShape& s, const T* x, const T* w, const T* b, T* y, Stream stream,
                          const ConvTcArgs& args) {
  if (args.act != TcActivation::none) throw std::invalid_argument("conv2d_forward_cudnn: no fused activation");
  const int64_t ldx = ld_or(args.ldx, s.C), ldy = ld_or(args.ldy, s.O);
  Descriptors d(s, ldx, ldy, static_cast<T*>(nullptr));
  cudnnHandle_t h = handle_on(stream);
  const float one = 1.0f, zero = 0.0f;
  choose_and_run<T, cudnnConvolutionFwdAlgoPerf_t, CUDNN_CONVOLUTION_FWD_ALGO_COUNT>(
      ConvDirection::forward, s, ldx, ldy, args, stream,
      [&](auto* perf, int* n) {
        check(d.a.cudnnGetConvolutionForwardAlgorithm_v7(h, d.x, d.w, d.conv, d.y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, n,
                                                         perf),
              "forward algorithm (heuristic)");
      },
      [&](auto* perf, int* n, void* ws, size_t bytes) {
        check(d.a.cudnnFindConvolutionForwardAlgorithmEx(h, d.x, x, d.w, w, d.conv, d.y, y,
                                                         CUDNN_CONVOLUTION_FWD_ALGO_COUNT, n, perf, ws, bytes),
              "forward algorithm (measured)");
      },
      [&](int algo, void* ws, size_t bytes) {
        check(d.a.cudnnConvolutionForward(h, &one, d.x, x, d.w, w, d.conv, static_cast<cudnnConvolutionFwdAlgo_t>(algo),
                                          ws, bytes, &zero, d.y, y),
              "cudnnConvolutionForward");
      });
  if (b) check(d.a.cudnnAddTensor(h, &one, d.bias, b, &one, d.y, y), "cudnnAddTensor (bias)");
}

template <class T>
void conv2d_backward_data_cudnn(const ConvShape& s, const T* w, const T* dy, T* dx, Stream stream,
                                const ConvTcArgs& args) {
  const int64_t ldx = ld_or(args.ldx, s.C), ldy = ld_or(args.ldy, s.O);
  Descriptors d(s, ldx, ldy, static_cast<T*>(nullptr));
  cudnnHandle_t h = handle_on(stream);
  choose_and_run<T, cudnnConvolutionBwdDataAlgoPerf_t, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT>(
      ConvDirection::backward_data, s, ldx, ldy, args, stream,
      [&](auto* perf, int* n) {
        check(d.a.cudnnGetConvolutionBackwardDataAlgorithm_v7(h, d.w, d.y, d.conv, d.x,
                                                              CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, n, perf),
              "backward-data algorithm (heuristic)");
      },
      [&](auto* perf, int* n, void* ws, size_t bytes) {
        check(d.a.cudnnFindConvolutionBackwardDataAlgorithmEx(h, d.w, w, d.y, dy, d.conv, d.x, dx,
                                                              CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, n, perf, ws, bytes),
              "backward-data algorithm (measured)");
      },
      [&](int algo, void* ws, size_t bytes) {
        const float one = 1.0f, zero = 0.0f;
        check(d.a.cudnnConvolutionBackwardData(h, &one, d.w, w, d.y, dy, d.conv,
                                               static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), ws, bytes, &zero, d.x,
                                               dx),
              "cudnnConvolutionBackwardData");
      });
}

template <class T>
void conv2d_backward_weight_cudnn(const ConvShape& s, const T* x, const T* dy, T* dw, T* db, Stream stream,
                                  const ConvTcArgs& args) {
  const int64_t ldx = ld_or(args.ldx, s.C), ldy = ld_or(args.ldy, s.O);
  // The bias gradient is a column sum of dy, computed by our own fixed-order kernel:
  // cudnnConvolutionBackwardBias returned CUDNN_STATUS_NOT_SUPPORTED for bf16 on the H200
  // (cuDNN 9, first GPU run), and a column sum is memory-bound, where a library has no edge.
  if (db) conv2d_backward_weight_tc<T>(s, x, dy, nullptr, db, stream, args);
  if (!dw) return;
  Descriptors d(s, ldx, ldy, static_cast<T*>(nullptr));
  cudnnHandle_t h = handle_on(stream);
  choose_and_run<T, cudnnConvolutionBwdFilterAlgoPerf_t, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT>(
      ConvDirection::backward_weight, s, ldx, ldy, args, stream,
      [&](auto* perf, int* n) {
        check(d.a.cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, d.x, d.y, d.conv, d.w,
                                                                CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, n, perf),
              "backward-filter algorithm (heuristic)");
      },
      [&](auto* perf, int* n, void* ws, size_t bytes) {
        check(d.a.cudnnFindConvolutionBackwardFilterAlgorithmEx(h, d.x, x, d.y, dy, d.conv, d.w, dw,
                                                                CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, n, perf, ws,
                                                                bytes),
              "backward-filter algorithm (measured)");
      },
      [&](int algo, void* ws, size_t bytes) {
        const float one = 1.0f, zero = 0.0f;
        check(d.a.cudnnConvolutionBackwardFilter(h, &one, d.x, x, d.y, dy, d.conv,
                                                 static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), ws, bytes, &zero,
                                                 d.w, dw),
              "cudnnConvolutionBackwardFilter");
      });
}

#else  // simulated build, or nvcc without cudnn.h

void set_cudnn_algo_search(CudnnAlgoSearch) {}
CudnnAlgoSearch cudnn_algo_search() { return CudnnAlgoSearch::measured; }
std::string cudnn_last_choice(bool) { return ""; }


bool cudnn_available(std::string* why_not) {
  if (why_not)
#if defined(SEG_CUDA_SIM)
    *why_not = "this is the simulated GPU build (library engines exist only in the nvcc build)";
#else
    *why_not = "this build was compiled without cuDNN (cudnn.h not found at configure time, or SEG_CUDNN=OFF)";
#endif
  return false;
}
std::string cudnn_description() { return ""; }

namespace {
[[noreturn]] void unavailable() {
  std::string why;
  cudnn_available(&why);
  throw EngineUnavailable("engine 'cudnn' is not available: " + why);
}
}  // namespace

template <class T>
void conv2d_forward_cudnn(const ConvShape&, const T*, const T*, const T*, T*, Stream, const ConvTcArgs&) {
  unavailable();
}
template <class T>
void conv2d_backward_data_cudnn(const ConvShape&, const T*, const T*, T*, Stream, const ConvTcArgs&) {
  unavailable();
}
template <class T>
void conv2d_backward_weight_cudnn(const ConvShape&, const T*, const T*, T*, T*, Stream, const ConvTcArgs&) {
  unavailable();
}

#endif

#define SEG_CUDNN_INSTANTIATE(T)                                                                              \
  template void conv2d_forward_cudnn<T>(const ConvShape&, const T*, const T*, const T*, T*, Stream,           \
                                        const ConvTcArgs&);                                                    \
  template void conv2d_backward_data_cudnn<T>(const ConvShape&, const T*, const T*, T*, Stream, const ConvTcArgs&); \
  template void conv2d_backward_weight_cudnn<T>(const ConvShape&, const T*, const T*, T*, T*, Stream,         \
                                                const ConvTcArgs&);
SEG_CUDNN_INSTANTIATE(float)
SEG_CUDNN_INSTANTIATE(seg::f16)
SEG_CUDNN_INSTANTIATE(seg::bf16)

}  // namespace seg::cuda
