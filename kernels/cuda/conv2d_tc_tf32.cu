// Implicit-GEMM convolutions (conv2d_tc.h) for float on TF32 tensor cores (mma.sync m16n8k8, and WMMA m16n16k8 on request): forward, backward data, backward weight.
// hot-kernel: gemm_tc_kernel
#include "kernels/cuda/gemm/conv2d_tc_impl.h"

namespace seg::cuda {
SEG_CONV2D_TC_INSTANTIATE(float)
}  // namespace seg::cuda
