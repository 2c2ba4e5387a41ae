// Encoder: the backbone. Upstream `net_encoder(x, return_feature_maps=True)`.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "models/component.h"

namespace seg {

class Encoder : public ModelComponent {
 public:
  // images [N, H, W, 3] -> upstream's `conv_out`: feature maps [N, h_i, w_i, C_i], shallow to deep.
  // Decoders read conv_out.back() (and conv_out[size-2] for deep supervision; all four for UPerNet).
  virtual std::vector<Tensor> forward(const Tensor& images) = 0;

  // C_i of each conv_out entry, and the stride of the last one relative to the input.
  const std::vector<int64_t>& feature_channels() const { return channels_; }
  int64_t output_stride() const { return output_stride_; }

 protected:
  Encoder(std::string arch, double bn_momentum) : ModelComponent(std::move(arch), bn_momentum) {}
  std::vector<int64_t> channels_;
  int64_t output_stride_ = 8;
};

}  // namespace seg
