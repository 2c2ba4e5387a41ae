#include "models/mobilenet.h"

namespace seg {

InvertedResidual::InvertedResidual(LayerMaker& make, int64_t inp, int64_t oup, int64_t stride, int64_t expand_ratio)
    : use_residual_(stride == 1 && inp == oup) {
  SEG_ASSERT(stride == 1 || stride == 2);
  const int64_t hidden = inp * expand_ratio;  // upstream round(inp * t): t is an integer here
  std::vector<std::shared_ptr<UnaryModule>> layers;
  if (expand_ratio != 1) {  // pointwise expansion
    layers.push_back(make.conv(inp, hidden, 1));
    layers.push_back(make.bn(hidden));
    layers.push_back(LayerMaker::relu6());
  }
  layers.push_back(make.conv(hidden, hidden, 3, stride, 1, hidden));  // depthwise
  layers.push_back(make.bn(hidden));
  layers.push_back(LayerMaker::relu6());
  layers.push_back(make.conv(hidden, oup, 1));  // pointwise linear (no activation)
  layers.push_back(make.bn(oup));
  conv_ = register_module("conv", std::make_shared<Sequential>(layers));
}

Tensor InvertedResidual::forward(const Tensor& x) {
  const Tensor y = conv_->forward(x);
  return use_residual_ ? ops::add(x, y) : y;
}

MobileNetV2DilatedEncoder::MobileNetV2DilatedEncoder(double bn_momentum) : Encoder("mobilenetv2dilated", bn_momentum) {
  auto features = register_module("features", std::make_shared<Sequential>());
  blocks_.push_back(std::make_shared<Sequential>(
      std::vector<std::shared_ptr<UnaryModule>>{make_.conv(3, 32, 3, 2, 1), make_.bn(32), LayerMaker::relu6()}));
  struct Setting {
    int64_t t, c, n, s;
  };
  const Setting settings[] = {{1, 16, 1, 1}, {6, 24, 2, 2}, {6, 32, 3, 2}, {6, 64, 4, 2},
                              {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  int64_t in = 32;
  // Block index at which each dilation starts (upstream down_idx [2, 4, 7, 14]: 7..13 get dilate 2,
  // 14.. dilate 4). The convs made by a block are dilated right after it is built.
  for (const Setting& st : settings)
    for (int64_t i = 0; i < st.n; ++i) {
      const size_t first_conv = make_.num_convs();
      blocks_.push_back(std::make_shared<InvertedResidual>(make_, in, st.c, i == 0 ? st.s : 1, st.t));
      const size_t index = blocks_.size() - 1;
      if (index >= 7 && index < 14) make_.nostride_dilate(first_conv, 2);
      if (index >= 14) make_.nostride_dilate(first_conv, 4);
      in = st.c;
    }
  for (auto& b : blocks_) features->append(b);
  channels_ = {24, 32, 64, 160, 320};
  output_stride_ = 8;
}

std::vector<Tensor> MobileNetV2DilatedEncoder::forward(const Tensor& images) {
  static constexpr size_t kTaps[] = {2, 4, 7, 14};  // upstream down_idx
  std::vector<Tensor> conv_out;
  Tensor x = images;
  for (size_t i = 0; i < blocks_.size(); ++i) {
    x = blocks_[i]->forward(x);
    for (size_t tap : kTaps)
      if (i == tap) conv_out.push_back(x);
  }
  conv_out.push_back(x);
  return conv_out;
}

}  // namespace seg
