#include "models/hrnet.h"

#include "models/residual_blocks.h"

namespace seg {

namespace {
using Layers = std::vector<std::shared_ptr<UnaryModule>>;
constexpr int64_t kBlocksPerBranch = 4;
}  // namespace

HighResolutionModule::HighResolutionModule(LayerMaker& make, const std::vector<int64_t>& channels) {
  const size_t nb = channels.size();
  branches_ = register_module("branches", std::make_shared<ModuleList<Sequential>>());
  for (size_t b = 0; b < nb; ++b) {
    int64_t inplanes = channels[b];
    branches_->append(make_residual_layer<BasicBlock>(make, inplanes, channels[b], kBlocksPerBranch));
  }
  fuse_layers_ = register_module("fuse_layers", std::make_shared<ModuleList<ModuleList<Sequential>>>());
  for (size_t i = 0; i < nb; ++i) {
    auto row = std::make_shared<ModuleList<Sequential>>();
    for (size_t j = 0; j < nb; ++j) {
      if (j > i) {  // lower resolution: 1x1 conv + BN (upsampled in forward)
        row->append(std::make_shared<Sequential>(Layers{make.conv(channels[j], channels[i], 1), make.bn(channels[i])}));
      } else if (j == i) {
        row->append(nullptr);
      } else {  // higher resolution: i-j stride-2 3x3 convs; the last one changes the width, no ReLU
        auto steps = std::make_shared<Sequential>();
        for (size_t k = 0; k < i - j; ++k) {
          const bool last = k == i - j - 1;
          const int64_t out = last ? channels[i] : channels[j];
          Layers step{make.conv(channels[j], out, 3, 2, 1), make.bn(out)};
          if (!last) step.push_back(LayerMaker::relu());
          steps->append(std::make_shared<Sequential>(step));
        }
        row->append(steps);
      }
    }
    fuse_layers_->append(row);
  }
}

std::vector<Tensor> HighResolutionModule::forward(const std::vector<Tensor>& x_in) {
  const size_t nb = branches_->size();
  SEG_ASSERT(x_in.size() == nb);
  std::vector<Tensor> x(nb);
  for (size_t b = 0; b < nb; ++b) x[b] = (*branches_)[b]->forward(x_in[b]);
  std::vector<Tensor> out;
  for (size_t i = 0; i < nb; ++i) {
    const auto& row = *(*fuse_layers_)[i];
    Tensor y = i == 0 ? x[0] : row[0]->forward(x[0]);
    for (size_t j = 1; j < nb; ++j) {
      if (j == i) {
        y = ops::add(y, x[j]);
      } else if (j > i) {
        y = ops::add(y, ops::resize_bilinear(row[j]->forward(x[j]), x[i].size(1), x[i].size(2)));
      } else {
        y = ops::add(y, row[j]->forward(x[j]));
      }
    }
    out.push_back(ops::relu(y));
  }
  return out;
}

HRNetV2Encoder::HRNetV2Encoder(double bn_momentum) : Encoder("hrnetv2", bn_momentum) {
  conv1_ = register_module("conv1", make_.conv(3, 64, 3, 2, 1));
  bn1_ = register_module("bn1", make_.bn(64));
  conv2_ = register_module("conv2", make_.conv(64, 64, 3, 2, 1));
  bn2_ = register_module("bn2", make_.bn(64));
  int64_t inplanes = 64;
  layer1_ = register_module("layer1", make_residual_layer<Bottleneck>(make_, inplanes, 64, 4));

  const std::vector<int64_t> c2{48, 96}, c3{48, 96, 192}, c4{48, 96, 192, 384};
  transition1_ = register_module("transition1", make_transition({256}, c2));
  stage2_ = register_module("stage2", make_stage(1, c2));
  transition2_ = register_module("transition2", make_transition(c2, c3));
  stage3_ = register_module("stage3", make_stage(4, c3));
  transition3_ = register_module("transition3", make_transition(c3, c4));
  stage4_ = register_module("stage4", make_stage(3, c4));
  channels_ = {48 + 96 + 192 + 384};
  output_stride_ = 4;
}

std::shared_ptr<HRNetV2Encoder::Transition> HRNetV2Encoder::make_transition(const std::vector<int64_t>& pre,
                                                                            const std::vector<int64_t>& cur) {
  auto t = std::make_shared<Transition>();
  for (size_t i = 0; i < cur.size(); ++i) {
    if (i < pre.size()) {
      if (cur[i] == pre[i])
        t->append(nullptr);
      else
        t->append(std::make_shared<Sequential>(Layers{make_.conv(pre[i], cur[i], 3, 1, 1), make_.bn(cur[i]), LayerMaker::relu()}));
    } else {  // a new, lower-resolution branch, from the last existing one
      auto steps = std::make_shared<Sequential>();
      for (size_t j = 0; j < i + 1 - pre.size(); ++j) {
        const int64_t in = pre.back();
        const int64_t out = j == i - pre.size() ? cur[i] : in;
        steps->append(std::make_shared<Sequential>(Layers{make_.conv(in, out, 3, 2, 1), make_.bn(out), LayerMaker::relu()}));
      }
      t->append(steps);
    }
  }
  return t;
}

std::shared_ptr<HRNetV2Encoder::Stage> HRNetV2Encoder::make_stage(int64_t num_modules, const std::vector<int64_t>& channels) {
  auto s = std::make_shared<Stage>();
  for (int64_t m = 0; m < num_modules; ++m) s->append(std::make_shared<HighResolutionModule>(make_, channels));
  return s;
}

std::vector<Tensor> HRNetV2Encoder::apply_transition(const Transition& t, const std::vector<Tensor>& y) {
  std::vector<Tensor> x;
  for (size_t i = 0; i < t.size(); ++i) {
    if (!t[i])
      x.push_back(y[i]);
    else
      x.push_back(t[i]->forward(i < y.size() ? y[i] : y.back()));
  }
  return x;
}

std::vector<Tensor> HRNetV2Encoder::run_stage(const Stage& s, std::vector<Tensor> x) {
  for (size_t m = 0; m < s.size(); ++m) x = s[m]->forward(x);
  return x;
}

std::vector<Tensor> HRNetV2Encoder::forward(const Tensor& images) {
  Tensor x = bn1_->forward_act(conv1_->forward(images), BnActivation::relu);
  x = bn2_->forward_act(conv2_->forward(x), BnActivation::relu);
  x = layer1_->forward(x);
  std::vector<Tensor> y = run_stage(*stage2_, apply_transition(*transition1_, {x}));
  y = run_stage(*stage3_, apply_transition(*transition2_, y));
  y = run_stage(*stage4_, apply_transition(*transition3_, y));
  const int64_t h = y[0].size(1), w = y[0].size(2);
  std::vector<Tensor> parts{y[0]};
  for (size_t b = 1; b < y.size(); ++b) parts.push_back(ops::resize_bilinear(y[b], h, w));
  return {ops::concat_channels(parts)};
}

}  // namespace seg
