// The cuBLASLt engine (engine_cublaslt.h). Host code only.
#include "kernels/cuda/engine_cublaslt.h"

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>
#include <type_traits>

#include "kernels/cuda/engine.h"

#if defined(SEG_WITH_CUBLASLT) && !defined(SEG_CUDA_SIM)
#include <cublasLt.h>

#include <mutex>
#endif

namespace seg::cuda {

#if defined(SEG_WITH_CUBLASLT) && !defined(SEG_CUDA_SIM)

namespace {

void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string("cuBLASLt: ") + what + " failed: " + cublasLtGetStatusString(s));
}

cublasLtHandle_t handle_for_current_device() {
  static std::mutex mutex;
  static cublasLtHandle_t handles[64] = {};
  int device = 0;
  cudaGetDevice(&device);
  std::lock_guard<std::mutex> lock(mutex);
  cublasLtHandle_t& h = handles[device & 63];
  if (!h) check(cublasLtCreate(&h), "cublasLtCreate");
  return h;
}

template <class T>
cudaDataType_t data_type() {
  if constexpr (std::is_same_v<T, float>) return CUDA_R_32F;
  else if constexpr (std::is_same_v<T, seg::f16>) return CUDA_R_16F;
  else return CUDA_R_16BF;
}

// RAII holders so an exception in the middle leaks nothing.
struct Desc {
  cublasLtMatmulDesc_t d = nullptr;
  ~Desc() { if (d) cublasLtMatmulDescDestroy(d); }
};
struct Layout {
  cublasLtMatrixLayout_t l = nullptr;
  ~Layout() { if (l) cublasLtMatrixLayoutDestroy(l); }
};
struct Pref {
  cublasLtMatmulPreference_t p = nullptr;
  ~Pref() { if (p) cublasLtMatmulPreferenceDestroy(p); }
};

}  // namespace

bool cublaslt_available(std::string* why_not) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    if (why_not) *why_not = "no CUDA device";
    return false;
  }
  return true;
}

template <class T, class TOut>
void gemm_cublaslt(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B,
                   int64_t ldb, TOut* C, int64_t ldc, const TOut* bias, const TcEpilogue& e, TcWorkspace ws,
                   Stream stream) {
  if (e.act == TcActivation::relu6) throw std::invalid_argument("gemm_cublaslt: cuBLASLt has no ReLU6 epilogue");
  if (M == 0 || N == 0) return;
  const cublasComputeType_t compute =
      std::is_same_v<T, float> && allow_tf32() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  Desc desc;
  check(cublasLtMatmulDescCreate(&desc.d, compute, CUDA_R_32F), "cublasLtMatmulDescCreate");
  // cuBLASLt's A is our B: transposed iff trans_b (see the header).
  const cublasOperation_t op_a = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, op_b = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  check(cublasLtMatmulDescSetAttribute(desc.d, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof op_a), "set TRANSA");
  check(cublasLtMatmulDescSetAttribute(desc.d, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof op_b), "set TRANSB");
  cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_DEFAULT;
  if (bias) epi = e.act == TcActivation::relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
  else if (e.act == TcActivation::relu) epi = CUBLASLT_EPILOGUE_RELU;
  check(cublasLtMatmulDescSetAttribute(desc.d, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi), "set EPILOGUE");
  if (bias) {
    const void* bp = bias;
    const cudaDataType_t bt = data_type<TOut>();
    check(cublasLtMatmulDescSetAttribute(desc.d, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bp, sizeof bp), "set BIAS");
    check(cublasLtMatmulDescSetAttribute(desc.d, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt), "set BIAS type");
  }
  // Column-major views of the row-major buffers: B (cuBLASLt's A) is N x K (ldb) or K x N, A is K x M or M x K.
  Layout la, lb, lc;
  const cudaDataType_t in = data_type<T>(), out = data_type<TOut>();
  check(cublasLtMatrixLayoutCreate(&la.l, in, trans_b ? K : N, trans_b ? N : K, ldb), "layout A");
  check(cublasLtMatrixLayoutCreate(&lb.l, in, trans_a ? M : K, trans_a ? K : M, lda), "layout B");
  check(cublasLtMatrixLayoutCreate(&lc.l, out, N, M, ldc), "layout C");
  Pref pref;
  check(cublasLtMatmulPreferenceCreate(&pref.p), "preference");
  const size_t ws_bytes = ws.data ? ws.bytes : 0;
  check(cublasLtMatmulPreferenceSetAttribute(pref.p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes,
                                             sizeof ws_bytes),
        "set workspace");
  cublasLtHandle_t h = handle_for_current_device();
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  check(cublasLtMatmulAlgoGetHeuristic(h, desc.d, la.l, lb.l, lc.l, lc.l, pref.p, 1, &result, &found), "heuristic");
  if (found == 0) throw std::runtime_error("cuBLASLt: no algorithm for this GEMM");
  check(cublasLtMatmul(h, desc.d, &e.alpha, B, la.l, A, lb.l, &e.beta, C, lc.l, C, lc.l, &result.algo, ws.data,
                       ws_bytes, stream),
        "cublasLtMatmul");
}

#else  // simulated build, or nvcc without cuBLASLt

bool cublaslt_available(std::string* why_not) {
  if (why_not)
#if defined(SEG_CUDA_SIM)
    *why_not = "this is the simulated GPU build (library engines exist only in the nvcc build)";
#else
    *why_not = "this build was compiled without cuBLASLt (CUDA::cublasLt not found)";
#endif
  return false;
}

template <class T, class TOut>
void gemm_cublaslt(bool, bool, int64_t, int64_t, int64_t, const T*, int64_t, const T*, int64_t, TOut*, int64_t,
                   const TOut*, const TcEpilogue&, TcWorkspace, Stream) {
  std::string why;
  cublaslt_available(&why);
  throw EngineUnavailable("engine 'cublaslt' is not available: " + why);
}

#endif

template void gemm_cublaslt<seg::f16, seg::f16>(bool, bool, int64_t, int64_t, int64_t, const seg::f16*, int64_t,
                                                const seg::f16*, int64_t, seg::f16*, int64_t, const seg::f16*,
                                                const TcEpilogue&, TcWorkspace, Stream);
template void gemm_cublaslt<seg::f16, float>(bool, bool, int64_t, int64_t, int64_t, const seg::f16*, int64_t,
                                             const seg::f16*, int64_t, float*, int64_t, const float*,
                                             const TcEpilogue&, TcWorkspace, Stream);
template void gemm_cublaslt<seg::bf16, seg::bf16>(bool, bool, int64_t, int64_t, int64_t, const seg::bf16*, int64_t,
                                                  const seg::bf16*, int64_t, seg::bf16*, int64_t, const seg::bf16*,
                                                  const TcEpilogue&, TcWorkspace, Stream);
template void gemm_cublaslt<seg::bf16, float>(bool, bool, int64_t, int64_t, int64_t, const seg::bf16*, int64_t,
                                              const seg::bf16*, int64_t, float*, int64_t, const float*,
                                              const TcEpilogue&, TcWorkspace, Stream);
template void gemm_cublaslt<float, float>(bool, bool, int64_t, int64_t, int64_t, const float*, int64_t, const float*,
                                          int64_t, float*, int64_t, const float*, const TcEpilogue&, TcWorkspace,
                                          Stream);

}  // namespace seg::cuda
