#include "core/amp_step.h"

#include "core/autograd.h"
#include "core/profiler.h"

namespace seg {

void scaled_backward(const Tensor& loss, const LossScaler& scaler, int accum_steps) {
  SEG_CHECK(loss.numel() == 1, runtime, "scaled_backward needs a scalar loss, got ", loss.str());
  SEG_CHECK(accum_steps >= 1, usage, "TRAIN.accum_steps must be >= 1, got ", accum_steps);
  loss.backward(Tensor::full(loss.shape(), scaler.scale() / accum_steps, loss.dtype(), loss.device()));
}

StepOutcome unscale_and_step(LossScaler& scaler, const std::vector<SGD*>& optimizers, ReadBack* readback,
                             Communicator* comm) {
  StepOutcome out;
  out.scale_used = scaler.scale();
  const Device device = optimizers.empty() ? Device::cpu() : optimizers.front()->device();
  ReadBack own(readback ? readback->device() : device);
  ReadBack& rb = readback ? *readback : own;
  bool found_inf = false;
  if (scaler.enabled()) {
    Tensor flag = Tensor::zeros({1}, DType::i32, device);
    for (SGD* opt : optimizers) opt->unscale_grads(scaler.inv_scale(), flag);
    // Between GPUs the flag's max travels on the device, queued before the step's one read-back,
    // so knowing that some rank overflowed costs no second host wait.
    const bool reduce_on_device = comm != nullptr && comm->size() > 1 && comm->device() == device && device.is_cuda();
    if (reduce_on_device) {
      prof::Range range("step.found_inf_allreduce");
      comm->allreduce_max(flag.data<int32_t>(), 1);
    }
    const size_t slot = rb.add(flag);
    {
      prof::Range range("step.readback");
      rb.fetch();
    }
    int32_t flag_any = rb.host(slot).data<int32_t>()[0] != 0 ? 1 : 0;
    if (comm != nullptr && comm->size() > 1 && !reduce_on_device) {
      prof::Range range("step.found_inf_allreduce");
      comm->allreduce_max(&flag_any, 1);
    }
    found_inf = flag_any != 0;
  } else if (rb.size() > 0) {
    prof::Range range("step.readback");
    rb.fetch();
  }
  if (!found_inf) {
    prof::Range range("optimizer.step");
    for (SGD* opt : optimizers) opt->step();
  }
  out.stepped = !found_inf;
  out.message = scaler.update(found_inf);
  return out;
}

}  // namespace seg
