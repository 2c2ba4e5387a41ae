// The cuDNN engine (engine_cudnn.h): cuDNN's legacy convolution API through function pointers
// resolved with dlopen/dlsym, so the build needs only cudnn.h. Host code only.
#include "kernels/cuda/engine_cudnn.h"

#include <stdexcept>
#include <string>
#include <type_traits>

#include "kernels/cuda/engine.h"

#if defined(SEG_WITH_CUDNN) && !defined(SEG_CUDA_SIM)
#include <cuda_runtime.h>
#include <cudnn.h>
#include <dlfcn.h>
#include <glob.h>

#include <cstdlib>
#include <mutex>
#include <vector>
#endif

namespace seg::cuda {

#if defined(SEG_WITH_CUDNN) && !defined(SEG_CUDA_SIM)

namespace {

#define SEG_CUDNN_FUNCTIONS(X)                                                                                   \
  X(cudnnGetVersion) X(cudnnGetErrorString) X(cudnnCreate) X(cudnnSetStream) X(cudnnCreateTensorDescriptor)     \
  X(cudnnDestroyTensorDescriptor) X(cudnnSetTensor4dDescriptorEx) X(cudnnCreateFilterDescriptor)                \
  X(cudnnDestroyFilterDescriptor) X(cudnnSetFilter4dDescriptor) X(cudnnCreateConvolutionDescriptor)             \
  X(cudnnDestroyConvolutionDescriptor) X(cudnnSetConvolution2dDescriptor) X(cudnnSetConvolutionGroupCount)      \
  X(cudnnSetConvolutionMathType) X(cudnnGetConvolutionForwardAlgorithm_v7)                                       \
  X(cudnnGetConvolutionBackwardDataAlgorithm_v7) X(cudnnGetConvolutionBackwardFilterAlgorithm_v7)               \
  X(cudnnConvolutionForward) X(cudnnConvolutionBackwardData) X(cudnnConvolutionBackwardFilter)                   \
  X(cudnnConvolutionBackwardBias) X(cudnnAddTensor)

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
    check(a.cudnnSetTensor4dDescriptorEx(x, t, i(s.N), i(s.C), i(s.H), i(s.W), i(s.H * s.W * ldx), 1, i(s.W * ldx),
                                         i(ldx)),
          "x descriptor");
    check(a.cudnnSetTensor4dDescriptorEx(y, t, i(s.N), i(s.O), i(s.Ho()), i(s.Wo()), i(s.Ho() * s.Wo() * ldy), 1,
                                         i(s.Wo() * ldy), i(ldy)),
          "y descriptor");
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

// The first (fastest-ranked) algorithm that succeeded, fits the workspace and, when required, is
// deterministic.
template <class Perf>
auto pick(const Perf* perf, int n, size_t ws_bytes, const char* what) {
  for (int i = 0; i < n; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= ws_bytes &&
        (!deterministic() || perf[i].determinism == CUDNN_DETERMINISTIC))
      return perf[i].algo;
  throw std::runtime_error(std::string("cuDNN: no ") + what + " algorithm fits " + std::to_string(ws_bytes) +
                           " bytes of workspace" + (deterministic() ? " and is deterministic" : ""));
}

int64_t ld_or(int64_t given, int64_t dense) { return given ? given : dense; }

}  // namespace

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
  Descriptors d(s, ld_or(args.ldx, s.C), ld_or(args.ldy, s.O), static_cast<T*>(nullptr));
  cudnnHandle_t h = handle_for_current_device();
  check(d.a.cudnnSetStream(h, stream), "set stream");
  cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int n = 0;
  check(d.a.cudnnGetConvolutionForwardAlgorithm_v7(h, d.x, d.w, d.conv, d.y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, perf),
        "forward algorithm");
  const size_t ws = args.workspace.data ? args.workspace.bytes : 0;
  const auto algo = pick(perf, n, ws, "forward");
  const float one = 1.0f, zero = 0.0f;
  check(d.a.cudnnConvolutionForward(h, &one, d.x, x, d.w, w, d.conv, algo, args.workspace.data, ws, &zero, d.y, y),
        "cudnnConvolutionForward");
  if (b) check(d.a.cudnnAddTensor(h, &one, d.bias, b, &one, d.y, y), "cudnnAddTensor (bias)");
}

template <class T>
void conv2d_backward_data_cudnn(const ConvShape& s, const T* w, const T* dy, T* dx, Stream stream,
                                const ConvTcArgs& args) {
  Descriptors d(s, ld_or(args.ldx, s.C), ld_or(args.ldy, s.O), static_cast<T*>(nullptr));
  cudnnHandle_t h = handle_for_current_device();
  check(d.a.cudnnSetStream(h, stream), "set stream");
  cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
  int n = 0;
  check(d.a.cudnnGetConvolutionBackwardDataAlgorithm_v7(h, d.w, d.y, d.conv, d.x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
                                                        &n, perf),
        "backward-data algorithm");
  const size_t ws = args.workspace.data ? args.workspace.bytes : 0;
  const auto algo = pick(perf, n, ws, "backward-data");
  const float one = 1.0f, zero = 0.0f;
  check(d.a.cudnnConvolutionBackwardData(h, &one, d.w, w, d.y, dy, d.conv, algo, args.workspace.data, ws, &zero, d.x,
                                         dx),
        "cudnnConvolutionBackwardData");
}

template <class T>
void conv2d_backward_weight_cudnn(const ConvShape& s, const T* x, const T* dy, T* dw, T* db, Stream stream,
                                  const ConvTcArgs& args) {
  Descriptors d(s, ld_or(args.ldx, s.C), ld_or(args.ldy, s.O), static_cast<T*>(nullptr));
  cudnnHandle_t h = handle_for_current_device();
  check(d.a.cudnnSetStream(h, stream), "set stream");
  const float one = 1.0f, zero = 0.0f;
  if (dw) {
    cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    int n = 0;
    check(d.a.cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, d.x, d.y, d.conv, d.w,
                                                            CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n, perf),
          "backward-filter algorithm");
    const size_t ws = args.workspace.data ? args.workspace.bytes : 0;
    const auto algo = pick(perf, n, ws, "backward-filter");
    check(d.a.cudnnConvolutionBackwardFilter(h, &one, d.x, x, d.y, dy, d.conv, algo, args.workspace.data, ws, &zero,
                                             d.w, dw),
          "cudnnConvolutionBackwardFilter");
  }
  if (db) check(d.a.cudnnConvolutionBackwardBias(h, &one, d.y, dy, &zero, d.bias, db), "cudnnConvolutionBackwardBias");
}

#else  // simulated build, or nvcc without cudnn.h

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
