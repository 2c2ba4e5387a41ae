// softmax_nll_loss: the segmentation loss (upstream: NLLLoss(ignore_index=-1) on log_softmax).
// Computed in at least f32 whatever the logits' dtype (DESIGN decision 7: loss in fp32).
#include "core/autograd.h"
#include "kernels/cpu/softmax_nll.h"
#include "layers/autocast.h"
#include "layers/ops.h"

namespace seg::ops {

Tensor softmax_nll_loss(const Tensor& logits_arg, const Tensor& labels_in) {
  const char* op = "softmax_nll_loss";
  const Tensor logits_in = autocast(OpClass::loss, logits_arg);
  require_cpu(op, logits_in);
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
  Tensor lse = Tensor::empty(Shape{P}, compute);
  cpu::NllResult r;
  SEG_DISPATCH(op, compute, logits.device(), (DType::f32, DType::f64), [&](auto tag) {
    using T = SEG_TYPE(tag);
    r = cpu::softmax_nll_forward<T, T>(logits.data<T>(), labels.data<int32_t>(), P, C, lse.data<T>());
  });
  if (r.bad_pixel >= 0)
    throw Error(ErrorKind::data, str("label ", r.bad_label, " at pixel ", r.bad_pixel, " is outside [-1, ", C - 1,
                                     "] for ", C, " classes"))
        .op(op)
        .hint("check DATASET.num_class against the label files (0 = unlabeled, 1..num_class)");
  const double loss = r.valid > 0 ? r.loss_sum / static_cast<double>(r.valid) : 0.0;
  Tensor out = Tensor::full(Shape{}, loss, compute);
  const int64_t valid = r.valid;
  record(op, {logits_in}, {out},
         [logits, labels, lse, P, C, valid, in_dtype = logits_in.dtype(), shape = logits_in.shape()](
             const std::vector<Tensor>& g) {
           SEG_PROFILE("softmax_nll_loss", "backward", {{"x", prof_tensor(logits)}});
           Tensor d = Tensor::empty(logits.shape(), logits.dtype());
           const double k = valid > 0 ? g[0].item() / static_cast<double>(valid) : 0.0;
           SEG_DISPATCH("softmax_nll_loss", logits.dtype(), logits.device(), (DType::f32, DType::f64), [&](auto tag) {
             using T = SEG_TYPE(tag);
             cpu::softmax_nll_backward<T, T>(logits.data<T>(), labels.data<int32_t>(), lse.data<T>(), P, C, k,
                                             d.data<T>());
           });
           return std::vector<Tensor>{d.to(in_dtype).view(shape)};
         });
  return out;
}

}  // namespace seg::ops
