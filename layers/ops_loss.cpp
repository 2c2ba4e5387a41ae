// softmax_nll_loss: the segmentation loss (upstream: NLLLoss(ignore_index=-1) on log_softmax), and
// the pixel-accuracy counts of the same logits. Computed in at least f32 whatever the logits' dtype
// (DESIGN decision 7: loss in fp32).
//
// Both write their counts into one LossStats block on the logits' device (the layout of
// seg::cuda::NllDeviceResult): the loss sum and mean, the valid-pixel count, the first bad label,
// the correct and labelled counts. On the CPU the block is filled at once and a bad label throws
// at once; on a GPU nothing is read back here: the caller reads the block with the step's other
// results (core/readback.h), once per step, and check_loss_stats() raises the same data error then.
#include <cstring>

#include "core/autograd.h"
#include "core/dispatch.h"
#include "kernels/cpu/softmax.h"
#include "kernels/cpu/softmax_nll.h"
#include "kernels/cuda/softmax_nll.h"  // NllDeviceResult: the stats layout, on every device
#include "layers/autocast.h"
#include "layers/ops.h"

namespace seg::ops {

namespace {
constexpr int64_t kStatsBytes = sizeof(cuda::NllDeviceResult);

Error bad_label_error(int64_t pixel, int32_t label, int64_t C) {
  return Error(ErrorKind::data, str("label ", label, " at pixel ", pixel, " is outside [-1, ", C - 1, "] for ", C,
                                    " classes"))
      .op("softmax_nll_loss")
      .hint("check DATASET.num_class against the label files (0 = unlabeled, 1..num_class)");
}

cuda::NllDeviceResult* host_stats(const Tensor& stats) { return reinterpret_cast<cuda::NllDeviceResult*>(stats.data<uint8_t>()); }

[[maybe_unused]] Tensor workspace(const Tensor& like, size_t bytes) { return like.new_empty({static_cast<int64_t>(bytes)}, DType::u8); }
}  // namespace

Tensor new_loss_stats(const Tensor& like) {
  Tensor s = like.new_zeros({kStatsBytes}, DType::u8);
  return s;
}

LossStats decode_loss_stats(const Tensor& stats) {
  SEG_CHECK(stats.device().is_cpu() && stats.dtype() == DType::u8 && stats.numel() == kStatsBytes, runtime,
            "decode_loss_stats: expected the u8[", kStatsBytes, "] block on the CPU, got ", stats.str());
  cuda::NllDeviceResult r;
  std::memcpy(&r, stats.contiguous().data_ptr(), sizeof r);
  LossStats s;
  s.loss_sum = r.loss_sum;
  s.loss = r.loss;
  s.valid = r.valid;
  s.bad_pixel = r.bad_pixel;
  s.bad_label = r.bad_label;
  s.correct = r.correct;
  s.labelled = r.labelled;
  return s;
}

void check_loss_stats(const LossStats& s, int64_t num_classes) {
  if (s.bad_pixel >= 0) throw bad_label_error(s.bad_pixel, s.bad_label, num_classes);
}

Tensor softmax_nll_loss(const Tensor& logits_arg, const Tensor& labels_in, Tensor* stats_out) {
  const char* op = "softmax_nll_loss";
  const Tensor logits_in = autocast(OpClass::loss, logits_arg);
  check_same_device(op, {&logits_in, &labels_in});
  SEG_CHECK(logits_in.dim() >= 2, runtime, op, ": logits must be [..., C], got ", logits_in.str());
  const int64_t C = logits_in.size(-1);
  const int64_t P = logits_in.numel() / C;
  SEG_CHECK(labels_in.numel() == P, runtime, op, ": ", P, " pixels of logits ", logits_in.str(), " but labels ",
            labels_in.str());
  check_dtype(labels_in, DType::i32, op, "labels");
  // Halves are computed in f32; f32 and f64 in their own precision.
  const DType compute = logits_in.dtype() == DType::f64 ? DType::f64 : DType::f32;
  SEG_PROFILE(op, "forward", {{"x", prof_tensor(logits_in)}});
  const Tensor logits = logits_in.to(compute).contiguous();
  const Tensor labels = labels_in.contiguous();
  Tensor lse = logits.new_empty(Shape{P});  // log-sum-exp per pixel, for backward
  Tensor out = logits.new_empty(Shape{});
  Tensor stats = stats_out && stats_out->defined() ? *stats_out : new_loss_stats(logits);
  check_same_device(op, {&logits, &stats});
  int64_t valid = 0;  // host-known on the CPU only; the GPU backward reads it from `stats`
  SEG_DISPATCH_DEVICE(op, logits, (DType::f32, DType::f64), (DType::f32), [&](auto dev, auto tag) {
    using T = SEG_TYPE(tag);
    SEG_CUDA_ONLY(if constexpr (on_cuda(dev)) {
      SEG_CUDA_KERNEL(dev, softmax_nll_forward<T>)(logits.data<T>(), labels.data<int32_t>(), P, C, lse.data<float>(),
                                              reinterpret_cast<cuda::NllDeviceResult*>(stats.data<uint8_t>()),
                                              out.data<float>(),
                                              workspace(logits, cuda::softmax_nll_workspace_bytes(P, C)).data_ptr());
    } else)
    {
      const cpu::NllResult r =
          SEG_KERNEL(dev, softmax_nll_forward<T, T>)(logits.data<T>(), labels.data<int32_t>(), P, C, lse.data<T>());
      cuda::NllDeviceResult* h = host_stats(stats);
      h->loss_sum = static_cast<float>(r.loss_sum);
      h->loss = r.valid > 0 ? static_cast<float>(r.loss_sum / static_cast<double>(r.valid)) : 0.0f;
      h->valid = r.valid;
      h->bad_pixel = r.bad_pixel;
      h->bad_label = r.bad_label;
      if (r.bad_pixel >= 0) throw bad_label_error(r.bad_pixel, r.bad_label, C);
      valid = r.valid;
      out.fill_(r.valid > 0 ? r.loss_sum / static_cast<double>(r.valid) : 0.0);
    }
  });
  if (stats_out) *stats_out = stats;
  record(op, {logits_in}, {out},
         [logits, labels, lse, stats, P, C, valid, in_dtype = logits_in.dtype(), shape = logits_in.shape()](
             const std::vector<Tensor>& g) {
           SEG_PROFILE("softmax_nll_loss", "backward", {{"x", prof_tensor(logits)}});
           Tensor d = logits.new_empty(logits.shape());
           const Tensor dloss = g[0].to(logits.dtype()).contiguous();
           check_same_device("softmax_nll_loss", {&logits, &dloss});
           SEG_DISPATCH_DEVICE("softmax_nll_loss", logits, (DType::f32, DType::f64), (DType::f32),
                               [&](auto dev, auto tag) {
                                 using T = SEG_TYPE(tag);
                                 SEG_CUDA_ONLY(if constexpr (on_cuda(dev)) {
                                   // k = dloss / valid, both read on the device.
                                   SEG_CUDA_KERNEL(dev, softmax_nll_backward_device_scale<T>)(
                                       logits.data<T>(), labels.data<int32_t>(), lse.data<float>(), P, C,
                                       dloss.data<float>(),
                                       reinterpret_cast<const cuda::NllDeviceResult*>(stats.data<uint8_t>()),
                                       d.data<T>());
                                 } else)
                                 {
                                   const double k = valid > 0 ? dloss.item() / static_cast<double>(valid) : 0.0;
                                   SEG_KERNEL(dev, softmax_nll_backward<T, T>)(logits.data<T>(), labels.data<int32_t>(),
                                                                              lse.data<T>(), P, C, k, d.data<T>());
                                 }
                               });
           return std::vector<Tensor>{d.to(in_dtype).view(shape)};
         });
  return out;
}

void pixel_accuracy_counts(const Tensor& logits_in, const Tensor& labels_in, Tensor& stats) {
  const char* op = "pixel_accuracy";
  check_same_device(op, {&logits_in, &labels_in, &stats});
  const int64_t C = logits_in.size(-1), P = logits_in.numel() / C;
  SEG_CHECK(labels_in.numel() == P, runtime, op, ": ", P, " pixels of logits ", logits_in.str(), " but labels ",
            labels_in.str());
  const Tensor logits = logits_in.contiguous(), labels = labels_in.contiguous();
  SEG_PROFILE(op, "forward", {{"x", prof_tensor(logits)}});
  SEG_DISPATCH_DEVICE(op, logits, SEG_CPU_FLOAT_DTYPES, SEG_CUDA_FLOAT_DTYPES, [&](auto dev, auto tag) {
    using T = SEG_TYPE(tag);
    SEG_CUDA_ONLY(if constexpr (on_cuda(dev)) {
      SEG_CUDA_KERNEL(dev, pixel_accuracy<T>)(logits.data<T>(), labels.data<int32_t>(), P, C,
                                         reinterpret_cast<cuda::NllDeviceResult*>(stats.data<uint8_t>()),
                                         workspace(logits, cuda::pixel_accuracy_workspace_bytes(P, C)).data_ptr());
    } else)
    {
      // Upstream's counting (models.py pixel_acc): valid = label >= 0, correct = valid & argmax == label.
      Tensor pred = logits.new_empty({P}, DType::i32);
      cpu::argmax_channels<T>(logits.data<T>(), P, C, pred.data<int32_t>());
      const int32_t* p = pred.data<int32_t>();
      const int32_t* l = labels.data<int32_t>();
      int64_t correct = 0, labelled = 0;
      for (int64_t i = 0; i < P; ++i) {
        if (l[i] < 0) continue;
        ++labelled;
        correct += p[i] == l[i];
      }
      cuda::NllDeviceResult* h = host_stats(stats);
      h->correct = correct;
      h->labelled = labelled;
    }
  });
}

}  // namespace seg::ops
