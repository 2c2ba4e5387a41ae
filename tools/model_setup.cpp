#include "tools/model_setup.h"

#include <cstdio>

#include "core/fileio.h"
#include "layers/amp_model.h"
#include "models/checkpoint.h"
#include "models/registry.h"
#include "tools/run_setup.h"

namespace seg::cli {

std::shared_ptr<SegmentationModule> load_model_for_inference(const Config& cfg, const CheckpointChoice& choice,
                                                             const std::string& fallback_checkpoint, bool quiet,
                                                             Device device) {
  auto model = build_segmentation_module(model_config(cfg), false);
  CheckpointPaths paths = checkpoint_paths(cfg.DIR, choice.checkpoint.empty() ? fallback_checkpoint : choice.checkpoint);
  if (!choice.encoder.empty()) paths.encoder = choice.encoder;
  if (!choice.decoder.empty()) paths.decoder = choice.decoder;
  for (const std::string* p : {&paths.encoder, &paths.decoder})
    if (!file_exists(*p))
      throw Error(ErrorKind::usage, "checkpoint not found: " + *p)
          .file(*p)
          .hint("train first, or pass --checkpoint NAME (e.g. epoch_20.pth), --encoder FILE and --decoder FILE");
  const SegmentationLoadReport r = load_segmentation_checkpoint(*model, paths, LoadOptions{choice.strict});
  if (!quiet) {
    std::printf("encoder %s: %s\n", paths.encoder.c_str(), r.encoder.summary().c_str());
    std::printf("decoder %s: %s\n", paths.decoder.c_str(), r.decoder.summary().c_str());
  }
  cast_model_for_amp(*model, amp_config(cfg));
  model->to(device);
  model->eval();
  return model;
}

int64_t fc_dim_for(const std::string& encoder_arch) {
  if (encoder_arch.find("mobilenet") != std::string::npos) return 320;
  if (encoder_arch.find("resnet18") != std::string::npos) return 512;
  if (encoder_arch.find("hrnet") != std::string::npos) return 720;
  return 2048;
}

const std::vector<std::pair<std::string, std::string>>& upstream_model_pairs() {
  static const std::vector<std::pair<std::string, std::string>> pairs = {
      {"mobilenetv2dilated", "c1_deepsup"}, {"resnet18dilated", "ppm_deepsup"}, {"resnet50dilated", "ppm_deepsup"},
      {"resnet101dilated", "ppm_deepsup"},  {"resnet50", "upernet"},          {"resnet101", "upernet"},
      {"hrnetv2", "c1"}};
  return pairs;
}

}  // namespace seg::cli
