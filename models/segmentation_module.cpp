#include "models/segmentation_module.h"

#include <algorithm>

#include "core/autograd.h"
#include "core/profiler.h"
#include "layers/ops.h"

namespace seg {

PixelAccuracy pixel_accuracy(const Tensor& logits, const Tensor& labels) {
  SEG_CHECK(logits.dim() == 4 && labels.dim() == 3 && logits.size(0) == labels.size(0) &&
                logits.size(1) == labels.size(1) && logits.size(2) == labels.size(2),
            runtime, "pixel_accuracy: logits ", logits.str(), " and labels ", labels.str(), " do not match");
  const Tensor pred = ops::argmax_channels(logits).to(Device::cpu()).contiguous();
  const Tensor lab = labels.to(Device::cpu()).contiguous();
  const int32_t* p = pred.data<int32_t>();
  const int32_t* l = lab.data<int32_t>();
  PixelAccuracy a;
  for (int64_t i = 0; i < lab.numel(); ++i) {
    if (l[i] < 0) continue;
    ++a.valid;
    a.correct += p[i] == l[i];
  }
  a.acc = static_cast<double>(a.correct) / (static_cast<double>(a.valid) + 1e-10);
  return a;
}

PixelAccuracy pixel_accuracy_of(const ops::LossStats& stats) {
  PixelAccuracy a;
  a.correct = stats.correct;
  a.valid = stats.labelled;
  a.acc = static_cast<double>(a.correct) / (static_cast<double>(a.valid) + 1e-10);
  return a;
}

void read_train_stats(TrainOutput& out, const Tensor& host_stats, int64_t num_classes) {
  const ops::LossStats s = ops::decode_loss_stats(host_stats);
  ops::check_loss_stats(s, num_classes);
  out.acc = pixel_accuracy_of(s);
}

SegmentationModule::SegmentationModule(std::shared_ptr<Encoder> enc, std::shared_ptr<Decoder> dec, double scale)
    : encoder(std::move(enc)), decoder(std::move(dec)), deep_sup_scale(scale) {
  SEG_CHECK(encoder && decoder, runtime, "SegmentationModule needs an encoder and a decoder");
  decoder->check_features(encoder->feature_channels(), encoder->arch());
  register_module("encoder", encoder);
  register_module("decoder", decoder);
  // Parameters carry their state_dict names: messages and NVTX ranges use them.
  for (const NamedTensor& p : named_parameters())
    if (p.tensor->name().empty()) p.tensor->set_name(p.name);
}

std::string component_class_name(const std::string& arch) {
  // Upstream's class names (mit_semseg/models), so a timeline reads like the PyTorch model.
  static const std::pair<const char*, const char*> names[] = {
      {"mobilenetv2dilated", "MobileNetV2dilated"}, {"resnet18dilated", "ResnetDilated"},
      {"resnet50dilated", "ResnetDilated"},         {"resnet101dilated", "ResnetDilated"},
      {"resnet18", "Resnet"},                       {"resnet50", "Resnet"},
      {"resnet101", "Resnet"},                      {"hrnetv2", "HRNetV2"},
      {"c1_deepsup", "C1DeepSup"},                  {"c1", "C1"},
      {"ppm_deepsup", "PPMDeepsup"},                {"ppm", "PPM"},
      {"upernet", "UPerNet"},                       {"upernet_lite", "UPerNet"}};
  for (const auto& [a, n] : names)
    if (arch == a) return n;
  return arch;
}

TrainOutput SegmentationModule::forward_train(const Tensor& images, const Tensor& labels) {
  SEG_CHECK(images.dim() == 4 && images.size(3) == 3, runtime, "images must be [N, H, W, 3], got ", images.str());
  SEG_CHECK(labels.dim() == 3 && labels.dtype() == DType::i32, runtime, "labels must be i32 [N, h, w], got ", labels.str());
  std::vector<Tensor> features;
  {
    prof::ModuleScope scope(component_class_name(encoder->arch()));
    features = encoder->forward(images);
  }
  DecoderOutput d;
  {
    prof::ModuleScope scope(component_class_name(decoder->arch()));
    d = decoder->forward(features);
  }
  const Tensor& logits = d.logits;
  SEG_CHECK(labels.size(0) == logits.size(0) && labels.size(1) == logits.size(1) && labels.size(2) == logits.size(2),
            runtime, "labels ", labels.str(), " do not match the decoder output ", logits.str(), " (images ",
            images.str(), ", output stride ", images.size(1) / std::max<int64_t>(1, logits.size(1)),
            "): check DATASET.segm_downsampling_rate and DATASET.padding_constant");
  TrainOutput out;
  prof::Range loss_range("loss");
  out.logits = logits;
  out.deepsup_logits = d.deepsup_logits;
  out.main_loss = ops::softmax_nll_loss(logits, labels, &out.stats);
  out.loss = out.main_loss;
  if (d.deepsup_logits.defined()) {
    out.deepsup_loss = ops::softmax_nll_loss(d.deepsup_logits, labels);
    out.loss = ops::add(out.main_loss, ops::scale(out.deepsup_loss, deep_sup_scale));
  }
  ops::pixel_accuracy_counts(logits, labels, out.stats);
  if (out.stats.device().is_cpu()) out.acc = pixel_accuracy_of(ops::decode_loss_stats(out.stats));
  return out;
}

Tensor SegmentationModule::infer(const Tensor& images, int64_t seg_h, int64_t seg_w) {
  SEG_CHECK(images.dim() == 4 && images.size(3) == 3, runtime, "images must be [N, H, W, 3], got ", images.str());
  SEG_CHECK(seg_h >= 1 && seg_w >= 1, runtime, "inference size ", seg_h, "x", seg_w, " must be positive");
  NoGradGuard no_grad;
  std::vector<Tensor> features;
  {
    prof::ModuleScope scope(component_class_name(encoder->arch()));
    features = encoder->forward(images);
  }
  prof::ModuleScope scope(component_class_name(decoder->arch()));
  return decoder->infer(features, seg_h, seg_w);
}

std::vector<ParamGroup> SegmentationModule::param_groups(const Module& component, double weight_decay) {
  ParamGroup decay{"decay", {}, weight_decay}, no_decay{"no_decay", {}, 0.0};
  for (const auto& p : component.named_parameters()) (p.tensor->dim() == 4 ? decay : no_decay).params.push_back(*p.tensor);
  return {decay, no_decay};
}

std::vector<BatchNorm2d*> SegmentationModule::batch_norms() const {
  std::vector<BatchNorm2d*> out = encoder->batch_norms();
  for (BatchNorm2d* b : decoder->batch_norms()) out.push_back(b);
  return out;
}

std::vector<Dropout2d*> SegmentationModule::dropouts() const {
  std::vector<Dropout2d*> out = encoder->dropouts();
  for (Dropout2d* d : decoder->dropouts()) out.push_back(d);
  return out;
}

void SegmentationModule::set_bn_momentum(double momentum) {
  encoder->set_bn_momentum(momentum);
  decoder->set_bn_momentum(momentum);
}

}  // namespace seg
