// Upstream's hrnetv2 encoder (hrnet.py `HRNetV2`, width 48), BN momentum 0.1 by default.
//
//   stem:    conv1 3x3 s2 (3->64), bn1, relu, conv2 3x3 s2 (64->64), bn2, relu           -> /4
//   layer1:  4 Bottlenecks (planes 64) -> 256 channels
//   stage2:  1 module,  branches 48, 96            (transition1 from [256])
//   stage3:  4 modules, branches 48, 96, 192       (transition2)
//   stage4:  3 modules, branches 48, 96, 192, 384  (transition3)
// Branch b runs at stride 4 * 2^b; each branch is 4 BasicBlocks. A transition keeps a branch (null
// entry, upstream `None`) when its width is unchanged, re-widths it with a 3x3 conv + BN + ReLU
// otherwise, and makes each new branch from the previous stage's LAST branch with stride-2 3x3
// conv + BN + ReLU steps. After its branches, a HighResolutionModule fuses: output i is
// relu(sum_j f_ij(x_j)) where f_ii is the identity, f_ij for j > i is 1x1 conv + BN then bilinear
// upsampling to branch i's size, and f_ij for j < i is i-j stride-2 3x3 conv + BN steps (ReLU after
// every step but the last).
// Output: conv_out = [concat(x0, up(x1), up(x2), up(x3))], 48+96+192+384 = 720 channels at /4 (one
// entry only; upstream ignores return_feature_maps here).
#pragma once

#include <memory>
#include <vector>

#include "layers/modules.h"
#include "models/encoder.h"

namespace seg {

class HighResolutionModule : public Module {
 public:
  // channels: the width of each branch (input and output); 4 BasicBlocks per branch.
  HighResolutionModule(LayerMaker& make, const std::vector<int64_t>& channels);
  std::vector<Tensor> forward(const std::vector<Tensor>& x);

 private:
  std::shared_ptr<ModuleList<Sequential>> branches_;
  std::shared_ptr<ModuleList<ModuleList<Sequential>>> fuse_layers_;
};

class HRNetV2Encoder : public Encoder {
 public:
  explicit HRNetV2Encoder(double bn_momentum);
  std::vector<Tensor> forward(const Tensor& images) override;

 private:
  using Transition = ModuleList<Sequential>;
  using Stage = ModuleList<HighResolutionModule>;
  std::shared_ptr<Transition> make_transition(const std::vector<int64_t>& pre, const std::vector<int64_t>& cur);
  std::shared_ptr<Stage> make_stage(int64_t num_modules, const std::vector<int64_t>& channels);
  // The inputs of the next stage: branch i through transition[i] (or unchanged when null); a new
  // branch is made from the previous stage's last output.
  static std::vector<Tensor> apply_transition(const Transition& t, const std::vector<Tensor>& y);
  static std::vector<Tensor> run_stage(const Stage& s, std::vector<Tensor> x);

  std::shared_ptr<Conv2d> conv1_, conv2_;
  std::shared_ptr<BatchNorm2d> bn1_, bn2_;
  std::shared_ptr<Sequential> layer1_;
  std::shared_ptr<Transition> transition1_, transition2_, transition3_;
  std::shared_ptr<Stage> stage2_, stage3_, stage4_;
};

}  // namespace seg
