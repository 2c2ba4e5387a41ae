#include "models/layer_maker.h"

namespace seg {

std::shared_ptr<Conv2d> LayerMaker::conv(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t padding,
                                         int64_t groups, bool bias) {
  auto c = std::make_shared<Conv2d>(in, out, kernel, stride, padding, 1, groups, bias);
  convs_.push_back(c);
  return c;
}

std::shared_ptr<BatchNorm2d> LayerMaker::bn(int64_t channels) {
  auto b = std::make_shared<BatchNorm2d>(channels, bn_momentum_);
  bns_.push_back(b);
  return b;
}

std::shared_ptr<Dropout2d> LayerMaker::dropout(double p) {
  auto d = std::make_shared<Dropout2d>(p);
  dropouts_.push_back(d);
  return d;
}

std::shared_ptr<Sequential> LayerMaker::conv3x3_bn_relu(int64_t in, int64_t out) {
  return std::make_shared<Sequential>(std::vector<std::shared_ptr<UnaryModule>>{conv(in, out, 3, 1, 1), bn(out), relu()});
}

void LayerMaker::nostride_dilate(size_t first, int64_t dilate) {
  for (size_t i = first; i < convs_.size(); ++i) {
    ops::Conv2dOptions& o = convs_[i]->options;
    const bool is3x3 = convs_[i]->weight.size(1) == 3 && convs_[i]->weight.size(2) == 3;
    if (o.stride_h == 2 && o.stride_w == 2) {
      o.stride_h = o.stride_w = 1;
      if (is3x3) o.dil_h = o.dil_w = o.pad_h = o.pad_w = dilate / 2;
    } else if (is3x3) {
      o.dil_h = o.dil_w = o.pad_h = o.pad_w = dilate;
    }
  }
}

void LayerMaker::set_bn_momentum(double m) {
  bn_momentum_ = m;
  for (auto& b : bns_) b->momentum = m;
}

}  // namespace seg
