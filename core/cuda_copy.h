// Copies where at least one side is on a CUDA device (host<->device, device<->device).
// Built with CUDA: cudaMemcpy for matching dtypes and contiguous layouts; other cases are reported
// as not implemented until the CUDA backend grows the kernels. Built without CUDA: a device error.
#pragma once

namespace seg {
class Tensor;
void cuda_copy(const Tensor& dst, const Tensor& src);
}  // namespace seg
