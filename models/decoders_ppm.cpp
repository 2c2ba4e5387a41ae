#include "models/decoders.h"

namespace seg {

namespace {
using Layers = std::vector<std::shared_ptr<UnaryModule>>;
constexpr int64_t kPoolScales[] = {1, 2, 3, 6};
constexpr int64_t kPPMChannels = 512;
}  // namespace

PPMDecoder::PPMDecoder(int64_t fc_dim, int64_t num_class, bool deep_supervision, double bn_momentum)
    : Decoder(deep_supervision ? "ppm_deepsup" : "ppm", fc_dim, num_class, bn_momentum), deep_sup_(deep_supervision) {
  ppm_ = register_module("ppm", std::make_shared<ModuleList<Sequential>>());
  for (int64_t scale : kPoolScales)
    ppm_->append(std::make_shared<Sequential>(Layers{std::make_shared<AdaptiveAvgPool2d>(scale),
                                                     make_.conv(fc_dim, kPPMChannels, 1), make_.bn(kPPMChannels),
                                                     LayerMaker::relu()}));
  if (deep_sup_) cbr_deepsup_ = register_module("cbr_deepsup", make_.conv3x3_bn_relu(fc_dim / 2, fc_dim / 4));
  const int64_t cat_channels = fc_dim + 4 * kPPMChannels;
  conv_last_ = register_module("conv_last", std::make_shared<Sequential>(Layers{
                                                make_.conv(cat_channels, kPPMChannels, 3, 1, 1), make_.bn(kPPMChannels),
                                                LayerMaker::relu(), make_.dropout(0.1),
                                                make_.conv(kPPMChannels, num_class, 1, 1, 0, 1, true)}));
  if (deep_sup_) {
    conv_last_deepsup_ = register_module("conv_last_deepsup", make_.conv(fc_dim / 4, num_class, 1, 1, 0, 1, true));
    dropout_deepsup_ = register_module("dropout_deepsup", make_.dropout(0.1));
  }
}

Tensor PPMDecoder::main_logits(const std::vector<Tensor>& conv_out) {
  const Tensor& conv5 = conv_out.back();  // [N, h, w, F]
  std::vector<Tensor> pyramid{conv5};
  for (size_t i = 0; i < ppm_->size(); ++i)
    pyramid.push_back(ops::resize_bilinear((*ppm_)[i]->forward(conv5), conv5.size(1), conv5.size(2)));
  return conv_last_->forward(ops::concat_channels(pyramid));  // [N, h, w, F + 2048] -> [N, h, w, K]
}

Tensor PPMDecoder::deepsup_logits(const std::vector<Tensor>& conv_out) {
  if (!deep_sup_) return {};
  const Tensor x = dropout_deepsup_->forward(cbr_deepsup_->forward(conv_out[conv_out.size() - 2]));
  return conv_last_deepsup_->forward(x);
}

}  // namespace seg
