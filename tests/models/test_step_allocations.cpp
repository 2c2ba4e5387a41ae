// DESIGN decision 6: once every size bucket has been seen, a training step makes no new system
// allocations. The first step also allocates the optimizer's momentum buffers, so steps 3+ are
// the steady state.
#include <doctest/doctest.h>

#include "core/allocator.h"
#include "core/amp_step.h"
#include "core/rng.h"
#include "layers/amp_model.h"
#include "layers/autocast.h"
#include "models/registry.h"
#include "models/segmentation_module.h"

using namespace seg;

TEST_CASE("a warmed-up training step makes no new system allocations (O0 and O2)") {
  for (const char* level : {"O0", "O2"}) {
    CAPTURE(level);
    const AmpConfig amp = make_amp_config(level);
    ModelConfig mc;
    mc.arch_encoder = "mobilenetv2dilated";
    mc.arch_decoder = "c1_deepsup";
    mc.fc_dim = 320;
    mc.num_class = 5;
    auto model = build_segmentation_module(mc);
    cast_model_for_amp(*model, amp);
    SGD enc(SegmentationModule::param_groups(*model->encoder, 1e-4), 0.01, 0.9, amp.master_weights());
    SGD dec(SegmentationModule::param_groups(*model->decoder, 1e-4), 0.01, 0.9, amp.master_weights());
    LossScaler scaler(amp.scaler);
    PhiloxStream rng(1, RngPurpose::test);
    Tensor images = Tensor::empty({2, 48, 48, 3}, DType::f32, Device::cpu());
    for (int64_t i = 0; i < images.numel(); ++i) images.data<float>()[i] = rng.normal();
    images = images.to(amp_input_dtype(amp));
    Tensor labels = Tensor::empty({2, 6, 6}, DType::i32, Device::cpu());
    for (int64_t i = 0; i < labels.numel(); ++i) labels.data<int32_t>()[i] = static_cast<int32_t>(rng.below(5));
    Allocator& alloc = allocator_for(Device::cpu());
    uint64_t before = 0;
    for (int step = 0; step < 5; ++step) {
      if (step == 2) before = alloc.stats().system_allocs;
      enc.zero_grad();
      dec.zero_grad();
      TrainOutput out;
      {
        Autocast ac(amp);
        out = model->forward_train(images, labels);
      }
      scaled_backward(out.loss, scaler);
      unscale_and_step(scaler, {&enc, &dec});
    }
    CHECK(alloc.stats().system_allocs == before);
  }
}
