#include "core/cuda_copy.h"

#include "core/stream.h"
#include "core/tensor.h"

#ifdef SEG_WITH_CUDA
#include <cuda_runtime.h>

#include "core/allocator.h"
#include "core/dispatch.h"
#include "kernels/cpu/copy.h"
#include "kernels/cuda/copy.h"
#endif

namespace seg {

#ifdef SEG_WITH_CUDA

namespace {

bool plain(const Tensor& dst, const Tensor& src) {
  return dst.dtype() == src.dtype() && dst.is_contiguous() && src.is_contiguous();
}

CopyLayout make_layout(const Tensor& dst, const Tensor& src) {
  SEG_CHECK(dst.dim() <= kMaxCopyDims, runtime, "copy: ", dst.dim(), " dimensions, at most ", kMaxCopyDims);
  CopyLayout L;
  L.ndim = dst.dim();
  for (int d = 0; d < L.ndim; ++d) {
    L.shape[d] = dst.size(d);
    L.src_stride[d] = src.stride(d);
    L.dst_stride[d] = dst.stride(d);
  }
  return L;
}

#define SEG_CUDA_COPY_DTYPES (DType::f32, DType::f16, DType::bf16, DType::i32, DType::i64, DType::u8)

// The strided / converting copy kernel (kernels/cuda/copy.h) between two tensors of one device.
void copy_kernel(const Tensor& dst, const Tensor& src) {
  const CopyLayout layout = make_layout(dst, src);
  SEG_DISPATCH_DEVICE("copy", src, (), SEG_CUDA_COPY_DTYPES, [&](auto sdev, auto s_tag) {
    using S = SEG_TYPE(s_tag);
    SEG_DISPATCH_DEVICE("copy", dst, (), SEG_CUDA_COPY_DTYPES, [&](auto, auto d_tag) {
      using D = SEG_TYPE(d_tag);
      cuda::copy_strided<S, D>(static_cast<const S*>(src.data_ptr()), static_cast<D*>(dst.data_ptr()), layout,
                               sdev.stream);
    });
  });
}

void memcpy_async(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cuda::Stream stream, const char* what) {
  check_cuda(cudaMemcpyAsync(dst, src, bytes, kind, stream), what);
}

void device_to_device(const Tensor& dst, const Tensor& src);

// Host to device. A pinned source is read by DMA after the call returns, so its block is recorded on
// the stream (not reused before the copy is done); pageable memory is staged by the driver before
// cudaMemcpyAsync returns.
void host_to_device(const Tensor& dst, const Tensor& src) {
  const cuda::Stream stream = current_stream(dst.device());
  if (plain(dst, src)) {
    memcpy_async(dst.data_ptr(), src.data_ptr(), dst.nbytes(), cudaMemcpyHostToDevice, stream, "copying host to device");
    if (src.impl()->storage->allocator() == &cuda_pinned_allocator()) src.impl()->storage->record_stream(stream);
    return;
  }
  if (dst.is_contiguous()) {  // convert / gather on the host, then one plain copy
    Tensor staged = Tensor::empty(dst.shape(), dst.dtype(), Device::cpu());
    staged.copy_(src);
    host_to_device(dst, staged);
    return;
  }
  // A strided destination (a channel slice): a plain copy into contiguous device memory, then the
  // copy kernel scatters it.
  Tensor staged = Tensor::empty(dst.shape(), dst.dtype(), dst.device());
  host_to_device(staged, src);
  device_to_device(dst, staged);
}

// Device to host: the one synchronising copy, counted (device_to_host_copies()).
void device_to_host(const Tensor& dst, const Tensor& src) {
  if (plain(dst, src)) {
    const cuda::Stream stream = current_stream(src.device());
    memcpy_async(dst.data_ptr(), src.data_ptr(), dst.nbytes(), cudaMemcpyDeviceToHost, stream, "copying device to host");
    check_cuda(cudaStreamSynchronize(stream), "waiting for a device-to-host copy from " + src.device().str());
    count_device_to_host_copy();
    return;
  }
  if (src.is_contiguous()) {  // one plain copy, then convert / scatter on the host
    Tensor staged = Tensor::empty(src.shape(), src.dtype(), Device::cpu());
    device_to_host(staged, src);
    Tensor(dst).copy_(staged);
    return;
  }
  // A strided source: gathered by the copy kernel on the device first.
  Tensor gathered = Tensor::empty(src.shape(), src.dtype(), src.device());
  device_to_device(gathered, src);
  device_to_host(dst, gathered);
}

void device_to_device(const Tensor& dst, const Tensor& src) {
  if (dst.numel() == 0) return;
  if (dst.device() != src.device()) {
    // Between two GPUs: peer copy of a plain block (the destination device's stream waits for the
    // source's work first by synchronising it; the multi-GPU issue replaces this with events).
    if (!plain(dst, src)) {
      Tensor same = src.contiguous();
      Tensor moved = Tensor::empty(same.shape(), same.dtype(), dst.device());
      device_to_device(moved, same);
      Tensor(dst).copy_(moved);
      return;
    }
    synchronize(src.device());
#ifdef SEG_SIMULATED_GPU
    // The simulator (one device until Simulator II) has no peer copies: through the host.
    Tensor staged = Tensor::empty(src.shape(), src.dtype(), Device::cpu());
    device_to_host(staged, src);
    host_to_device(dst, staged);
    return;
#endif
    check_cuda(cudaMemcpyPeerAsync(dst.data_ptr(), dst.device().index, src.data_ptr(), src.device().index, dst.nbytes(),
                                   current_stream(dst.device())),
               "copying " + src.device().str() + " to " + dst.device().str());
    return;
  }
  if (plain(dst, src)) {
    memcpy_async(dst.data_ptr(), src.data_ptr(), dst.nbytes(), cudaMemcpyDeviceToDevice, current_stream(dst.device()),
                 "copying on the device");
    return;
  }
  if (dst.dtype() == DType::f64 || src.dtype() == DType::f64) {
    // f64 has no CUDA kernels (DESIGN 4); device f64 tensors exist only as copies for references,
    // so their conversions go through the host.
    Tensor staged = Tensor::empty(src.shape(), src.dtype(), Device::cpu());
    device_to_host(staged, src);
    host_to_device(dst, staged);
    return;
  }
  copy_kernel(dst, src);
}

}  // namespace

void cuda_fill(const Tensor& dst, double value) {
  if (dst.numel() == 0) return;
  if (dst.dtype() == DType::f64) {  // no f64 kernels: fill on the host, one plain copy
    Tensor staged = Tensor::full(dst.shape(), value, DType::f64, Device::cpu());
    cuda_copy(dst, staged);
    return;
  }
  const CopyLayout layout = make_layout(dst, dst);
  SEG_DISPATCH_DEVICE("fill", dst, (), SEG_CUDA_COPY_DTYPES, [&](auto dev, auto tag) {
    using D = SEG_TYPE(tag);
    cuda::fill_strided<D>(static_cast<D*>(dst.data_ptr()), layout, cpu::convert_value<D>(value), dev.stream);
  });
}

void cuda_copy(const Tensor& dst, const Tensor& src) {
  if (dst.numel() == 0) return;
  if (src.device().is_cpu()) host_to_device(dst, src);
  else if (dst.device().is_cpu()) device_to_host(dst, src);
  else device_to_device(dst, src);
}

#else  // no CUDA

void cuda_fill(const Tensor& dst, double) {
  throw Error(ErrorKind::device, str("fill of ", dst.str(), ": this segtrain was built without CUDA")).op("fill");
}

void cuda_copy(const Tensor& dst, const Tensor& src) {
  throw Error(ErrorKind::device, str("copy between ", src.str(), " and ", dst.str(),
                                     ": this segtrain was built without CUDA"))
      .op("copy")
      .hint("use --device cpu, or rebuild with -DSEG_CUDA=ON on a machine with the CUDA toolkit");
}

#endif

}  // namespace seg
