#include "models/decoders.h"

namespace seg {

C1Decoder::C1Decoder(int64_t fc_dim, int64_t num_class, bool deep_supervision, double bn_momentum)
    : Decoder(deep_supervision ? "c1_deepsup" : "c1", fc_dim, num_class, bn_momentum), deep_sup_(deep_supervision) {
  // Registration order is upstream's (so files list tensors in state_dict order).
  cbr_ = register_module("cbr", make_.conv3x3_bn_relu(fc_dim, fc_dim / 4));
  if (deep_sup_) cbr_deepsup_ = register_module("cbr_deepsup", make_.conv3x3_bn_relu(fc_dim / 2, fc_dim / 4));
  conv_last_ = register_module("conv_last", make_.conv(fc_dim / 4, num_class, 1, 1, 0, 1, true));
  if (deep_sup_) conv_last_deepsup_ = register_module("conv_last_deepsup", make_.conv(fc_dim / 4, num_class, 1, 1, 0, 1, true));
}

Tensor C1Decoder::main_logits(const std::vector<Tensor>& conv_out) {
  return conv_last_->forward(cbr_->forward(conv_out.back()));
}

Tensor C1Decoder::deepsup_logits(const std::vector<Tensor>& conv_out) {
  if (!deep_sup_) return {};
  return conv_last_deepsup_->forward(cbr_deepsup_->forward(conv_out[conv_out.size() - 2]));
}

}  // namespace seg
