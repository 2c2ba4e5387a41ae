// SegmentationModule: encoder + decoder + upstream's loss and pixel accuracy (models.py).
//
// Training (upstream `forward(feed_dict)` with segSize None):
//   loss = NLL(log_softmax(main), label) [+ deep_sup_scale * NLL(log_softmax(deepsup), label)]
// with ignore label -1, computed at the decoder's resolution (labels come downsampled by
// DATASET.segm_downsampling_rate); here both terms are the fused ops::softmax_nll_loss (DESIGN 5).
// Pixel accuracy of the main head: acc = sum(valid & argmax == label) / (sum(valid) + 1e-10), valid =
// label >= 0.
// Inference (upstream `forward(feed_dict, segSize=...)`): softmax probabilities of the main head
// after bilinear upsampling to the requested size.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/optim.h"
#include "layers/ops.h"
#include "models/decoder.h"
#include "models/encoder.h"

namespace seg {

struct PixelAccuracy {
  int64_t correct = 0;  // valid pixels whose argmax is the label
  int64_t valid = 0;    // pixels with label >= 0
  double acc = 0;       // correct / (valid + 1e-10), upstream's formula
};
// logits [N, h, w, K] (or log-probabilities: the argmax is the same), labels i32 [N, h, w].
PixelAccuracy pixel_accuracy(const Tensor& logits, const Tensor& labels);

// The accuracy in a main head's loss statistics (layers/ops.h LossStats, read back to the host).
PixelAccuracy pixel_accuracy_of(const ops::LossStats& stats);

struct TrainOutput {
  Tensor loss;          // [] the total loss, differentiable
  Tensor main_loss;     // [] NLL of the main head
  Tensor deepsup_loss;  // [] NLL of the deep-supervision head (undefined without one)
  // The main head's loss and accuracy counts (ops::LossStats block) on the model's device: a
  // training step reads it back with its other results, once (core/readback.h).
  Tensor stats;
  PixelAccuracy acc;    // of the main head: filled at once on the CPU; on a GPU after the read-back
                        // (read_train_stats), so that the forward pass never waits for the device
  Tensor logits;        // [N, h, w, K] main-head logits (for logging / tests)
  Tensor deepsup_logits;
};

// Fills out.acc from a fetched read-back slot holding out.stats, and raises the loss's bad-label
// data error if the stats recorded one.
void read_train_stats(TrainOutput& out, const Tensor& host_stats, int64_t num_classes);

// Upstream's class name of an encoder or decoder arch ("mobilenetv2dilated" -> "MobileNetV2dilated"):
// the top of the NVTX range names.
std::string component_class_name(const std::string& arch);

class SegmentationModule : public Module {
 public:
  // deep_sup_scale is TRAIN.deep_sup_scale; it is used when the decoder has a deep-supervision head
  // (upstream: arch_decoder ends in "deepsup"). Checks that the encoder's features fit the decoder
  // (Error(usage) naming MODEL.fc_dim or the arch otherwise).
  SegmentationModule(std::shared_ptr<Encoder> encoder, std::shared_ptr<Decoder> decoder, double deep_sup_scale = 0.4);

  // images f32 [N, H, W, 3] (normalised), labels i32 [N, h, w] at the decoder's resolution, -1 = ignore.
  TrainOutput forward_train(const Tensor& images, const Tensor& labels);
  // images [N, H, W, 3] -> probabilities [N, seg_h, seg_w, K]; records no autograd graph.
  Tensor infer(const Tensor& images, int64_t seg_h, int64_t seg_w);

  // Upstream `group_weight` for one optimizer per component: "decay" = conv weights (4-D), "no_decay"
  // (weight decay 0) = conv biases and BatchNorm weights and biases.
  static std::vector<ParamGroup> param_groups(const Module& component, double weight_decay);
  std::vector<BatchNorm2d*> batch_norms() const;  // encoder's then decoder's
  std::vector<Dropout2d*> dropouts() const;
  void set_bn_momentum(double momentum);

  const std::shared_ptr<Encoder> encoder;
  const std::shared_ptr<Decoder> decoder;
  const double deep_sup_scale;
};

}  // namespace seg
