// Copies where at least one side is on a CUDA device (host<->device, device<->device), on the
// device's current stream (core/stream.h): cudaMemcpyAsync for matching dtypes and contiguous
// layouts; a conversion or gather with a host side happens on the host around one plain copy; a
// strided or converting copy on the device runs the CUDA copy kernel (kernels/cuda/copy.h).
// Device-to-host copies synchronise the stream and are counted (device_to_host_copies()).
// Built without CUDA: a device error.
#pragma once

namespace seg {
class Tensor;
void cuda_copy(const Tensor& dst, const Tensor& src);
// dst (a CUDA tensor, any layout) = value, by the fill kernel on the device's stream.
void cuda_fill(const Tensor& dst, double value);
}  // namespace seg
