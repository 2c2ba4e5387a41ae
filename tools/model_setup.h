// Building a SegmentationModule for inference from a config and a checkpoint (eval, predict).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "models/segmentation_module.h"
#include "tools/config.h"

namespace seg::cli {

struct CheckpointChoice {
  std::string checkpoint;  // --checkpoint NAME (like VAL.checkpoint), or ""
  std::string encoder;     // --encoder FILE (overrides)
  std::string decoder;     // --decoder FILE
  bool strict = true;      // --non-strict = upstream's strict=False
};

// Builds the model of cfg.MODEL, loads DIR/encoder_<ckpt>, DIR/decoder_<ckpt> (ckpt = `fallback`
// config value unless the choice names one), prepares it for the AMP level and puts it in eval mode.
// Prints what was loaded unless quiet.
// The model is built and loaded on the CPU, cast for AMP, then moved to `device`.
std::shared_ptr<SegmentationModule> load_model_for_inference(const Config& cfg, const CheckpointChoice& choice,
                                                             const std::string& fallback_checkpoint, bool quiet = false,
                                                             Device device = Device::cpu());

// The width of an encoder's last feature map (MODEL.fc_dim in upstream's configs): 320 for
// MobileNetV2, 512 for ResNet18, 720 for HRNetV2-W48, 2048 for ResNet50/101.
int64_t fc_dim_for(const std::string& encoder_arch);

// Upstream's seven shipped configs as encoder-decoder pairs, for listings and benchmarks.
const std::vector<std::pair<std::string, std::string>>& upstream_model_pairs();

}  // namespace seg::cli
