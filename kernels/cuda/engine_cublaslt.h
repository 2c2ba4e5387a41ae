// GEMMs through cuBLASLt: the `cublaslt` engine (engine.h), the baseline of the kernel lab and the
// oracle of the GPU tests of gemm_tc. Same arguments and meaning as gemm_tc (gemm_tc.h) except the
// options; ReLU6 is not among cuBLASLt's epilogues (std::invalid_argument). f32 inputs use TF32
// (CUBLAS_COMPUTE_32F_FAST_TF32) while seg::cuda::allow_tf32(), else strict f32.
// Row-major to cuBLASLt's column-major: C^T = op(B)^T op(A)^T, so the call passes B as its "A".
// The workspace (32 MiB is what cuBLAS itself reserves) widens the algorithms it may choose.
// cuBLASLt reduces split-K partials in a fixed order (its in-place scheme sequences them with
// counters), so results are reproducible on one GPU.
// Present only in the nvcc build with CUDA::cublasLt (SEG_WITH_CUBLASLT); elsewhere every call
// throws EngineUnavailable naming the engine.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/cuda/gemm_tc.h"
#include "kernels/cuda/stream.h"

namespace seg::cuda {

bool cublaslt_available(std::string* why_not = nullptr);

template <class T, class TOut>
void gemm_cublaslt(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B,
                   int64_t ldb, TOut* C, int64_t ldc, const TOut* bias, const TcEpilogue& epilogue,
                   TcWorkspace workspace, Stream stream);

}  // namespace seg::cuda
