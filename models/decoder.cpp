#include "models/decoder.h"

#include "layers/ops.h"

namespace seg {

void Decoder::check_features(const std::vector<int64_t>& channels, const std::string& encoder_arch) const {
  const size_t need = has_deep_supervision() ? 2 : 1;
  if (channels.size() < need)
    throw Error(ErrorKind::usage, str("decoder ", arch_, " needs ", need, " feature maps, encoder ", encoder_arch,
                                      " produces ", channels.size()))
        .key("MODEL.arch_decoder")
        .hint("hrnetv2 works with c1 (upstream's pairing); deep supervision needs a ResNet or MobileNet encoder");
  if (channels.back() != fc_dim_)
    throw Error(ErrorKind::usage, str("MODEL.fc_dim is ", fc_dim_, " but encoder ", encoder_arch, " outputs ",
                                      channels.back(), " channels"))
        .key("MODEL.fc_dim")
        .hint(str("set MODEL.fc_dim ", channels.back()));
  if (has_deep_supervision() && channels[channels.size() - 2] != fc_dim_ / 2)
    throw Error(ErrorKind::usage, str("deep supervision of ", arch_, " reads fc_dim/2 = ", fc_dim_ / 2,
                                      " channels, encoder ", encoder_arch, " gives ", channels[channels.size() - 2]))
        .key("MODEL.arch_decoder");
}

DecoderOutput Decoder::forward(const std::vector<Tensor>& conv_out) {
  SEG_CHECK(!conv_out.empty(), runtime, "decoder ", arch_, ": no feature maps");
  DecoderOutput out;
  out.logits = main_logits(conv_out);
  out.deepsup_logits = deepsup_logits(conv_out);
  return out;
}

Tensor Decoder::infer(const std::vector<Tensor>& conv_out, int64_t seg_h, int64_t seg_w) {
  SEG_CHECK(!conv_out.empty(), runtime, "decoder ", arch_, ": no feature maps");
  return ops::softmax(ops::resize_bilinear(main_logits(conv_out), seg_h, seg_w));
}

}  // namespace seg
