#include "models/decoders.h"

namespace seg {

namespace {
using Layers = std::vector<std::shared_ptr<UnaryModule>>;
constexpr int64_t kPoolScales[] = {1, 2, 3, 6};
constexpr int64_t kPPMChannels = 512;
constexpr int64_t kFpnInplanes[] = {256, 512, 1024, 2048};  // upstream's fixed fpn_inplanes
}  // namespace

UPerNetDecoder::UPerNetDecoder(int64_t fc_dim, int64_t num_class, int64_t fpn_dim, double bn_momentum)
    : Decoder(fpn_dim == 512 ? "upernet" : "upernet_lite", fc_dim, num_class, bn_momentum) {
  ppm_pooling_ = register_module("ppm_pooling", std::make_shared<ModuleList<AdaptiveAvgPool2d>>());
  ppm_conv_ = register_module("ppm_conv", std::make_shared<ModuleList<Sequential>>());
  for (int64_t scale : kPoolScales) {
    ppm_pooling_->append(std::make_shared<AdaptiveAvgPool2d>(scale));
    ppm_conv_->append(std::make_shared<Sequential>(
        Layers{make_.conv(fc_dim, kPPMChannels, 1), make_.bn(kPPMChannels), LayerMaker::relu()}));
  }
  ppm_last_conv_ = register_module("ppm_last_conv", make_.conv3x3_bn_relu(fc_dim + 4 * kPPMChannels, fpn_dim));
  fpn_in_ = register_module("fpn_in", std::make_shared<ModuleList<Sequential>>());
  for (int i = 0; i < 3; ++i)
    fpn_in_->append(std::make_shared<Sequential>(
        Layers{make_.conv(kFpnInplanes[i], fpn_dim, 1), make_.bn(fpn_dim), LayerMaker::relu()}));
  fpn_out_ = register_module("fpn_out", std::make_shared<ModuleList<Sequential>>());
  for (int i = 0; i < 3; ++i) fpn_out_->append(std::make_shared<Sequential>(Layers{make_.conv3x3_bn_relu(fpn_dim, fpn_dim)}));
  conv_last_ = register_module("conv_last", std::make_shared<Sequential>(Layers{
                                                make_.conv3x3_bn_relu(4 * fpn_dim, fpn_dim),
                                                make_.conv(fpn_dim, num_class, 1, 1, 0, 1, true)}));
}

void UPerNetDecoder::check_features(const std::vector<int64_t>& channels, const std::string& encoder_arch) const {
  const std::vector<int64_t> need(std::begin(kFpnInplanes), std::end(kFpnInplanes));
  if (channels != need)
    throw Error(ErrorKind::usage, str(arch_, " needs four feature maps with 256, 512, 1024, 2048 channels (upstream's "
                                      "fixed fpn_inplanes); encoder ", encoder_arch, " does not provide them"))
        .key("MODEL.arch_encoder")
        .hint("use resnet50 or resnet101 with upernet");
  Decoder::check_features(channels, encoder_arch);
}

Tensor UPerNetDecoder::main_logits(const std::vector<Tensor>& conv_out) {
  SEG_CHECK(conv_out.size() == 4, usage, arch_, " needs 4 feature maps, got ", conv_out.size());
  const Tensor& conv5 = conv_out.back();
  const int64_t h5 = conv5.size(1), w5 = conv5.size(2);
  std::vector<Tensor> pyramid{conv5};
  for (size_t i = 0; i < ppm_conv_->size(); ++i)
    pyramid.push_back((*ppm_conv_)[i]->forward(ops::resize_bilinear((*ppm_pooling_)[i]->forward(conv5), h5, w5)));
  Tensor f = ppm_last_conv_->forward(ops::concat_channels(pyramid));  // P5: [N, h5, w5, D]

  std::vector<Tensor> features(4);  // P2..P5
  features[3] = f;
  for (int i = 2; i >= 0; --i) {
    const Tensor lateral = (*fpn_in_)[i]->forward(conv_out[i]);
    f = ops::add(lateral, ops::resize_bilinear(f, lateral.size(1), lateral.size(2)));
    features[i] = (*fpn_out_)[i]->forward(f);
  }
  const int64_t h2 = features[0].size(1), w2 = features[0].size(2);
  std::vector<Tensor> fusion{features[0]};
  for (int i = 1; i < 4; ++i) fusion.push_back(ops::resize_bilinear(features[i], h2, w2));
  return conv_last_->forward(ops::concat_channels(fusion));  // [N, h2, w2, K] at stride 4
}

}  // namespace seg
