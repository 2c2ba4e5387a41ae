#include "core/cuda_copy.h"

#include "core/tensor.h"

#ifdef SEG_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace seg {

void cuda_copy(const Tensor& dst, const Tensor& src) {
#ifdef SEG_WITH_CUDA
  if (dst.numel() == 0) return;
  if (src.dtype() != dst.dtype() || !src.is_contiguous() || !dst.is_contiguous()) {
    // Stage through the CPU: correct for every layout and dtype; the CUDA kernels issue replaces it.
    Tensor host_src = src.device().is_cpu() ? src : Tensor::empty(src.shape(), src.dtype(), Device::cpu());
    if (!src.device().is_cpu()) cuda_copy(host_src, src.contiguous());
    Tensor host_dst = Tensor::empty(dst.shape(), dst.dtype(), Device::cpu());
    host_dst.copy_(host_src);
    if (dst.is_contiguous()) {
      cuda_copy(dst, host_dst);
      return;
    }
    throw Error(ErrorKind::device, str("copy into a non-contiguous CUDA tensor ", dst.str(), " is not implemented yet"))
        .op("copy");
  }
  cudaMemcpyKind kind = src.device().is_cpu() ? cudaMemcpyHostToDevice
                        : dst.device().is_cpu() ? cudaMemcpyDeviceToHost
                                                : cudaMemcpyDeviceToDevice;
  const cudaError_t err = cudaMemcpy(dst.data_ptr(), src.data_ptr(), dst.nbytes(), kind);
  if (err != cudaSuccess)
    throw Error(ErrorKind::device, str("cudaMemcpy failed: ", cudaGetErrorString(err))).op("copy");
#else
  throw Error(ErrorKind::device, str("copy between ", src.str(), " and ", dst.str(),
                                     ": this segtrain was built without CUDA"))
      .op("copy")
      .hint("use --device cpu, or rebuild with -DSEG_CUDA=ON on a machine with the CUDA toolkit");
#endif
}

}  // namespace seg
