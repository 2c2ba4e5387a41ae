// Models by their upstream names (models.py ModelBuilder.build_encoder / build_decoder).
//
//   encoders: mobilenetv2dilated, resnet18, resnet18dilated, resnet50, resnet50dilated, resnet101,
//             resnet101dilated, hrnetv2
//   decoders: c1, c1_deepsup, ppm, ppm_deepsup, upernet, upernet_lite
// Names are case-insensitive, as upstream. An unknown name is Error(usage) that lists the known ones
// and suggests the closest.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/decoder.h"
#include "models/encoder.h"
#include "models/segmentation_module.h"

namespace seg {

struct BuildOptions {
  // BatchNorm momentum (MODEL.bn_momentum); unset = upstream's value for the architecture
  // (0.001, 0.1 for hrnetv2).
  std::optional<double> bn_momentum;
  uint64_t seed = 304;       // TRAIN.seed: initial values come from Philox(seed, init)
  bool initialize = true;    // false leaves every parameter zero (when a checkpoint is loaded next)
};

const std::vector<std::string>& encoder_archs();
const std::vector<std::string>& decoder_archs();
double default_bn_momentum(const std::string& encoder_arch);  // 0.1 for hrnetv2, else 0.001
bool has_deep_supervision(const std::string& decoder_arch);   // upstream: the name ends in "deepsup"

// fc_dim is accepted and ignored, as upstream (the encoder fixes its own width).
std::shared_ptr<Encoder> build_encoder(const std::string& arch, int64_t fc_dim = 512, const BuildOptions& opt = {});
std::shared_ptr<Decoder> build_decoder(const std::string& arch, int64_t fc_dim = 512, int64_t num_class = 150,
                                       const BuildOptions& opt = {});

// The MODEL part of the config, plus what training needs to build the module.
struct ModelConfig {
  std::string arch_encoder = "resnet50dilated";
  std::string arch_decoder = "ppm_deepsup";
  int64_t fc_dim = 2048;
  int64_t num_class = 150;
  double deep_sup_scale = 0.4;         // TRAIN.deep_sup_scale (used by *deepsup decoders only)
  std::optional<double> bn_momentum;   // MODEL.bn_momentum (unset: upstream's per-architecture value)
  uint64_t seed = 304;
};
std::shared_ptr<SegmentationModule> build_segmentation_module(const ModelConfig& cfg, bool initialize = true);

}  // namespace seg
