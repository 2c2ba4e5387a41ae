// The upstream decoders (models.py): c1, c1_deepsup, ppm, ppm_deepsup, upernet, upernet_lite.
// Shapes for fc_dim F, num_class K; inputs are the encoder's conv_out (see models/encoder.h).
#pragma once

#include <memory>
#include <vector>

#include "layers/modules.h"
#include "models/decoder.h"

namespace seg {

// c1 / c1_deepsup:
//   cbr = conv3x3_bn_relu(F -> F/4); conv_last = 1x1 conv (F/4 -> K, bias)           on conv_out[-1]
//   deep sup: cbr_deepsup = conv3x3_bn_relu(F/2 -> F/4); conv_last_deepsup = 1x1 (F/4 -> K, bias)
//             on conv_out[-2]
class C1Decoder : public Decoder {
 public:
  C1Decoder(int64_t fc_dim, int64_t num_class, bool deep_supervision, double bn_momentum);
  bool has_deep_supervision() const override { return deep_sup_; }

 protected:
  Tensor main_logits(const std::vector<Tensor>& conv_out) override;
  Tensor deepsup_logits(const std::vector<Tensor>& conv_out) override;

 private:
  bool deep_sup_;
  std::shared_ptr<Sequential> cbr_, cbr_deepsup_;
  std::shared_ptr<Conv2d> conv_last_, conv_last_deepsup_;
};

// ppm / ppm_deepsup (PSPNet's pyramid pooling), pool scales 1, 2, 3, 6:
//   ppm.i = Sequential(AdaptiveAvgPool2d(s), 1x1 conv F -> 512 no bias, BN, ReLU), each upsampled
//   back to conv5's size; conv_last = Sequential(0: 3x3 conv (F + 4*512) -> 512 no bias, 1: BN,
//   2: ReLU, 3: Dropout2d(0.1), 4: 1x1 conv 512 -> K with bias) on concat(conv5, 4 pooled maps).
//   deep sup: cbr_deepsup = conv3x3_bn_relu(F/2 -> F/4) -> dropout_deepsup Dropout2d(0.1) ->
//   conv_last_deepsup 1x1 (F/4 -> K, bias).
class PPMDecoder : public Decoder {
 public:
  PPMDecoder(int64_t fc_dim, int64_t num_class, bool deep_supervision, double bn_momentum);
  bool has_deep_supervision() const override { return deep_sup_; }

 protected:
  Tensor main_logits(const std::vector<Tensor>& conv_out) override;
  Tensor deepsup_logits(const std::vector<Tensor>& conv_out) override;

 private:
  bool deep_sup_;
  std::shared_ptr<ModuleList<Sequential>> ppm_;
  std::shared_ptr<Sequential> cbr_deepsup_, conv_last_;
  std::shared_ptr<Conv2d> conv_last_deepsup_;
  std::shared_ptr<Dropout2d> dropout_deepsup_;
};

// upernet (fpn_dim 512) / upernet_lite (fpn_dim 256), D = fpn_dim:
//   PPM head on conv5, pooling FIRST then upsampling then the conv (unlike PPM above):
//     ppm_pooling.i = AdaptiveAvgPool2d(s); ppm_conv.i = Sequential(1x1 F -> 512 no bias, BN, ReLU);
//     ppm_last_conv = conv3x3_bn_relu(F + 4*512 -> D)                          -> f (P5)
//   FPN top-down for i = 2, 1, 0 over conv_out[i] with C_i = 256, 512, 1024 (fixed, so ResNet-50/101
//   only): f = fpn_in.i(conv_out[i]) + upsample(f); P_i = fpn_out.i(f), with
//     fpn_in.i = Sequential(1x1 C_i -> D no bias, BN, ReLU), fpn_out.i = Sequential(conv3x3_bn_relu(D -> D))
//   Fusion: upsample P3..P5 to P2's size (stride 4), concat 4*D ->
//     conv_last = Sequential(0: conv3x3_bn_relu(4D -> D), 1: 1x1 conv D -> K with bias).
class UPerNetDecoder : public Decoder {
 public:
  UPerNetDecoder(int64_t fc_dim, int64_t num_class, int64_t fpn_dim, double bn_momentum);
  void check_features(const std::vector<int64_t>& channels, const std::string& encoder_arch) const override;

 protected:
  Tensor main_logits(const std::vector<Tensor>& conv_out) override;

 private:
  std::shared_ptr<ModuleList<AdaptiveAvgPool2d>> ppm_pooling_;
  std::shared_ptr<ModuleList<Sequential>> ppm_conv_, fpn_in_, fpn_out_;
  std::shared_ptr<Sequential> ppm_last_conv_, conv_last_;
};

}  // namespace seg
