#include "core/dispatch.h"

#include "core/stream.h"
#include "kernels/cuda/launch_error.h"

namespace seg::detail {

CudaDevice cuda_device_tag(Device device) {
  set_current_cuda_device(device.index);
  return CudaDevice{device.index, current_stream(device)};
}

void rethrow_kernel_failure(const char* op, Device device) {
  try {
    throw;
  } catch (const cuda::LaunchError& e) {
    throw Error(ErrorKind::device, str("op '", op, "' on ", device.str(), ": a CUDA kernel launch failed: ", e.what()))
        .op(op)
        .with("device", device.str())
        .hint("the message names the kernel and its launch site; 'no kernel image' means the build lacks this "
              "GPU's architecture (-DSEG_CUDA_ARCHITECTURES)");
  } catch (const std::exception& e) {
    throw Error(ErrorKind::device, str("op '", op, "' on ", device.str(), ": ", e.what())).op(op).with("device", device.str());
  }
}

}  // namespace seg::detail
