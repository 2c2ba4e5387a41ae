// gemm_tc (gemm_tc.h) for float inputs on TF32 tensor cores (mma.sync m16n8k8, and WMMA m16n16k8 on request), f32 output.
// hot-kernel: gemm_tc_kernel
#include "kernels/cuda/gemm/gemm_tc_impl.h"

namespace seg::cuda {
SEG_GEMM_TC_INSTANTIATE(float, float)
SEG_GEMM_TC_QUERIES(float)
}  // namespace seg::cuda
