// Initial values of the models, drawn from Philox (RngPurpose::init), so a seed gives the same model
// on every machine, thread count and build.
//
// Each tensor draws from its own Philox stream, chosen by hashing "<component>.<tensor name>"
// (FNV-1a, 64 bit), so adding a layer never shifts the values of the others and construction order
// does not matter.
//
// Which tensor is what is read off the names and shapes: a 4-D parameter is a conv weight
// [O, KH, KW, I/groups]; a module with a running_mean buffer is a BatchNorm; the other 1-D parameter
// named "bias" belongs to the conv beside it.
#pragma once

#include <cstdint>
#include <string>

#include "layers/module.h"

namespace seg::model_init {

// Upstream decoders (models.py ModelBuilder.weights_init): conv weights Kaiming-normal, fan_in mode,
// gain sqrt(2) (std = sqrt(2 / (KH*KW*I/groups))); conv biases keep PyTorch's default
// U(-1/sqrt(fan_in), 1/sqrt(fan_in)); BatchNorm weight 1, bias 1e-4.
void upstream_decoder(Module& m, uint64_t seed, const std::string& component = "decoder");

// Encoders trained from scratch (no ImageNet weights can be downloaded here): He-normal in fan_out
// mode, std = sqrt(2 / (KH*KW*O)), the initialisation upstream's own ResNet and MobileNetV2
// classes give a network that is not pretrained (resnet.py and mobilenet.py `n = k*k*out_channels`);
// conv biases 0; BatchNorm weight 1, bias 0. HRNet uses the same rule (upstream leaves it at
// PyTorch's default there; see docs/models.md). Running statistics stay 0 / 1.
void he_encoder(Module& m, uint64_t seed, const std::string& component = "encoder");

uint64_t fnv1a64(const std::string& s);

}  // namespace seg::model_init
