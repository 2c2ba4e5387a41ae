// Implicit-GEMM convolutions (conv2d_tc.h) for seg::f16 (mma.sync m16n8k16): forward, backward data, backward weight.
// hot-kernel: gemm_tc_kernel
#include "kernels/cuda/gemm/conv2d_tc_impl.h"

namespace seg::cuda {
SEG_CONV2D_TC_INSTANTIATE(seg::f16)
}  // namespace seg::cuda
