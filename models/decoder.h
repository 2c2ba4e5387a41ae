// Decoder: the segmentation head. Upstream `net_decoder(conv_out, segSize)`.
//
// DESIGN decision 5: in training our decoders return LOGITS where upstream returns log_softmax of
// them; the loss is the fused ops::softmax_nll_loss, which is upstream's NLL(log_softmax(x)).
// Inference is upstream's use_softmax=True path: bilinear upsampling (align_corners=False) of the
// main head to the requested size, then softmax over classes. The deep-supervision head is
// skipped there, as upstream does.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "models/component.h"

namespace seg {

struct DecoderOutput {
  Tensor logits;          // [N, h, w, num_class] at the decoder's resolution (encoder stride; /4 for UPerNet)
  Tensor deepsup_logits;  // same shape from conv_out[size-2]; undefined for decoders without deep supervision
};

class Decoder : public ModelComponent {
 public:
  int64_t fc_dim() const { return fc_dim_; }
  int64_t num_class() const { return num_class_; }
  virtual bool has_deep_supervision() const { return false; }

  // Throws Error(usage) unless an encoder producing feature maps with these channels fits this
  // decoder (the last must have fc_dim channels, deep supervision reads fc_dim/2 from the one before,
  // UPerNet needs ResNet-50/101's 256, 512, 1024, 2048).
  virtual void check_features(const std::vector<int64_t>& channels, const std::string& encoder_arch) const;

  // Training forward: logits of the main head (and of the deep-supervision head where there is one).
  DecoderOutput forward(const std::vector<Tensor>& conv_out);
  // Inference: softmax(upsample(main logits, seg_h x seg_w)) -> [N, seg_h, seg_w, num_class].
  Tensor infer(const std::vector<Tensor>& conv_out, int64_t seg_h, int64_t seg_w);

 protected:
  Decoder(std::string arch, int64_t fc_dim, int64_t num_class, double bn_momentum)
      : ModelComponent(std::move(arch), bn_momentum), fc_dim_(fc_dim), num_class_(num_class) {}
  virtual Tensor main_logits(const std::vector<Tensor>& conv_out) = 0;
  virtual Tensor deepsup_logits(const std::vector<Tensor>& conv_out) { return {}; }

  int64_t fc_dim_, num_class_;
};

}  // namespace seg
