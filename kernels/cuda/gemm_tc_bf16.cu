// gemm_tc (gemm_tc.h) for seg::bf16 inputs: bf16 or f32 output; mma.sync and WMMA families.
// hot-kernel: gemm_tc_kernel
#include "kernels/cuda/gemm/gemm_tc_impl.h"

namespace seg::cuda {
SEG_GEMM_TC_INSTANTIATE(seg::bf16, seg::bf16)
SEG_GEMM_TC_INSTANTIATE(seg::bf16, float)
SEG_GEMM_TC_QUERIES(seg::bf16)
}  // namespace seg::cuda
