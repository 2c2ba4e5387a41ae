// concat_channels: [N,H,W,C_i] -> [N,H,W,sum C_i]. Each input is copied into a channel slice of the
// output (a strided copy, Tensor::copy_, on the inputs' device); backward hands every input its
// slice of dy.
#include "core/autograd.h"
#include "layers/autocast.h"
#include "layers/ops.h"

namespace seg::ops {

Tensor concat_channels(const std::vector<Tensor>& xs_arg) {
  const char* op = "concat_channels";
  std::vector<Tensor> xs = xs_arg;
  autocast_all(OpClass::concat_add, xs);
  SEG_CHECK(!xs.empty(), runtime, op, ": nothing to concatenate");
  const Tensor& first = xs[0];
  int64_t total = 0;
  for (const Tensor& x : xs) {
    check_same_device(op, {&first, &x});
    SEG_CHECK(x.dim() == first.dim() && x.dtype() == first.dtype(), runtime, op, ": ", x.str(), " does not match ",
              first.str());
    for (int d = 0; d + 1 < x.dim(); ++d)
      SEG_CHECK(x.size(d) == first.size(d), runtime, op, ": ", x.str(), " does not match ", first.str(),
                " outside the channel dimension");
    total += x.size(-1);
  }
  auto prof_args = [&] {
    nlohmann::json list = nlohmann::json::array();
    for (const Tensor& x : xs) list.push_back(prof_tensor(x));
    return nlohmann::json{{"xs", list}};
  };
  SEG_PROFILE(op, "forward", prof_args());
  Shape shape = first.shape();
  shape[shape.size() - 1] = total;
  Tensor out = first.new_empty(shape);
  std::vector<int64_t> offsets;
  int64_t at = 0;
  for (const Tensor& x : xs) {
    offsets.push_back(at);
    out.channels(at, at + x.size(-1)).copy_(x);
    at += x.size(-1);
  }
  offsets.push_back(at);
  record(op, xs, {out}, [offsets, args = prof::enabled() ? prof_args() : nlohmann::json()](const std::vector<Tensor>& g) {
    SEG_PROFILE("concat_channels", "backward", args);
    std::vector<Tensor> grads;
    for (size_t i = 0; i + 1 < offsets.size(); ++i) grads.push_back(g[0].channels(offsets[i], offsets[i + 1]).contiguous());
    return grads;
  });
  return out;
}

}  // namespace seg::ops
