// gemm_tc (gemm_tc.h) for seg::f16 inputs: f16 or f32 output; mma.sync and WMMA families.
// hot-kernel: gemm_tc_kernel
#include "kernels/cuda/gemm/gemm_tc_impl.h"

namespace seg::cuda {
SEG_GEMM_TC_INSTANTIATE(seg::f16, seg::f16)
SEG_GEMM_TC_INSTANTIATE(seg::f16, float)
SEG_GEMM_TC_QUERIES(seg::f16)
}  // namespace seg::cuda
