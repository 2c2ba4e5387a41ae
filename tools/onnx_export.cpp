#include "tools/onnx_export.h"

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <unordered_map>
#include <vector>

#include "core/autograd.h"
#include "core/error.h"
#include "core/fileio.h"
#include "core/op_observer.h"
#include "kernels/common/half.h"
#include "kernels/common/pool_shape.h"
#include "layers/batchnorm.h"
#include "layers/conv2d.h"

namespace seg::cli {

namespace {

// ---------------------------------------------------------------- the trace

struct TracedOp {
  std::string op;
  std::vector<Tensor> inputs, outputs;  // held, so no tensor (and no TensorImpl address) is reused
  nlohmann::json attrs;
};

class Tracer final : public OpObserver {
 public:
  void on_forward(const OpEvent& e) override { ops.push_back(TracedOp{e.op, e.inputs, e.outputs, e.attrs}); }
  std::vector<TracedOp> ops;
};

// ---------------------------------------------------------------- the model's named tensors

struct ModelTensors {
  std::unordered_map<const TensorImpl*, std::string> names;  // parameters and buffers -> state_dict name
  std::unordered_map<const TensorImpl*, Conv2d*> convs;      // weight -> its Conv2d
  std::unordered_map<const TensorImpl*, BatchNorm2d*> bns;   // gamma -> its BatchNorm2d
};

ModelTensors collect_model_tensors(SegmentationModule& model) {
  ModelTensors m;
  for (const NamedTensor& p : model.named_parameters()) m.names[p.tensor->impl()] = p.name;
  for (const NamedTensor& b : model.named_buffers()) m.names[b.tensor->impl()] = b.name;
  model.visit([&](Module& mod) {
    if (auto* c = dynamic_cast<Conv2d*>(&mod)) m.convs[c->weight.impl()] = c;
    if (auto* b = dynamic_cast<BatchNorm2d*>(&mod)) m.bns[b->weight.impl()] = b;
  });
  return m;
}

std::string module_of(const std::string& param_name) {
  const size_t dot = param_name.rfind('.');
  return dot == std::string::npos ? param_name : param_name.substr(0, dot);
}

// ---------------------------------------------------------------- building the graph

class GraphBuilder {
 public:
  GraphBuilder(onnx::GraphProto* graph, bool half, OnnxExportReport& report)
      : g_(graph), float_type_(half ? onnx::TensorProto::FLOAT16 : onnx::TensorProto::FLOAT), report_(report) {}

  int32_t float_type() const { return float_type_; }

  // The ONNX value of a traced tensor (or an error naming where it came from).
  const std::string& value(const Tensor& t, const std::string& op) const {
    auto it = values_.find(t.impl());
    if (it == values_.end())
      throw Error(ErrorKind::runtime, str("export: op '", op, "' reads a tensor ", t.str(),
                                          " that no traced op produced (a view or a host-side computation in "
                                          "the model's forward); segtrain export cannot map it to ONNX"))
          .op("export");
    return it->second;
  }
  void bind(const Tensor& t, const std::string& name) { values_[t.impl()] = name; }
  bool bound(const Tensor& t) const { return values_.count(t.impl()) > 0; }

  std::string fresh(const std::string& base) { return base + "_" + std::to_string(counter_++); }

  onnx::NodeProto* node(const std::string& type, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs, const std::string& name) {
    onnx::NodeProto* n = g_->add_node();
    n->set_op_type(type);
    n->set_name(name);
    for (const std::string& i : inputs) n->add_input(i);
    for (const std::string& o : outputs) n->add_output(o);
    ++report_.nodes;
    ++report_.op_counts[type];
    return n;
  }

  // Float data as an initializer of the graph's float type (f32 or f16), dims as given.
  std::string float_init(const std::string& name, const std::vector<float>& data, const std::vector<int64_t>& dims,
                         const std::string& doc = "") {
    onnx::TensorProto* t = g_->add_initializer();
    t->set_name(name);
    t->set_data_type(float_type_);
    for (int64_t d : dims) t->add_dims(d);
    if (float_type_ == onnx::TensorProto::FLOAT) {
      t->set_raw_data(data.data(), data.size() * sizeof(float));
    } else {
      std::vector<uint16_t> bits(data.size());
      for (size_t i = 0; i < data.size(); ++i) bits[i] = f16(data[i]).bits;
      t->set_raw_data(bits.data(), bits.size() * sizeof(uint16_t));
    }
    if (!doc.empty()) t->set_doc_string(doc);
    ++report_.initializers;
    return name;
  }
  std::string i64_init(const std::vector<int64_t>& data) {
    const std::string name = fresh("const_i64");
    onnx::TensorProto* t = g_->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(static_cast<int64_t>(data.size()));
    t->set_raw_data(data.data(), data.size() * sizeof(int64_t));
    ++report_.initializers;
    return name;
  }
  std::string scalar_init(float v) { return float_init(fresh("const"), {v}, {}); }

  // A model tensor (parameter or buffer) as an initializer under its upstream name, once.
  std::string param(const Tensor& t, const std::string& name, const std::vector<int64_t>& dims, const Tensor& data) {
    auto it = params_.find(t.impl());
    if (it != params_.end()) return it->second;
    params_[t.impl()] = float_init(name, data.to(Device::cpu()).to(DType::f32).contiguous().to_vector<float>(), dims);
    return name;
  }

 private:
  onnx::GraphProto* g_;
  int32_t float_type_;
  OnnxExportReport& report_;
  std::unordered_map<const TensorImpl*, std::string> values_;
  std::unordered_map<const TensorImpl*, std::string> params_;
  int64_t counter_ = 0;
};

void set_ints(onnx::NodeProto* n, const char* name, const std::vector<int64_t>& v) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
void set_int(onnx::NodeProto* n, const char* name, int64_t v) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}
void set_float(onnx::NodeProto* n, const char* name, float v) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}
void set_string(onnx::NodeProto* n, const char* name, const std::string& v) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}

void set_value_info(onnx::ValueInfoProto* v, const std::string& name, int32_t elem, const std::vector<int64_t>& dims,
                    bool dynamic_batch) {
  v->set_name(name);
  onnx::TypeProto_Tensor* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(elem);
  for (size_t i = 0; i < dims.size(); ++i) {
    onnx::TensorShapeProto_Dimension* d = t->mutable_shape()->add_dim();
    if (i == 0 && dynamic_batch) d->set_dim_param("N");
    else d->set_dim_value(dims[i]);
  }
}

// [N, H, W, C] -> ONNX's NCHW dims.
std::vector<int64_t> nchw(const Tensor& t) {
  SEG_CHECK(t.dim() == 4, runtime, "export: expected a 4-d activation, got ", t.str());
  return {t.size(0), t.size(3), t.size(1), t.size(2)};
}

// ---------------------------------------------------------------- op by op

class Exporter {
 public:
  Exporter(GraphBuilder& b, const ModelTensors& m, const OnnxExportOptions& opt, OnnxExportReport& report)
      : b_(b), m_(m), opt_(opt), report_(report) {}

  void run(const std::vector<TracedOp>& ops) {
    // How often each traced tensor is read: a conv's output may absorb its BatchNorm only when the
    // BatchNorm is its one reader.
    std::unordered_map<const TensorImpl*, int> reads;
    for (const TracedOp& op : ops)
      for (const Tensor& t : op.inputs)
        if (t.defined()) ++reads[t.impl()];
    for (size_t i = 0; i < ops.size(); ++i) {
      const TracedOp& op = ops[i];
      if (op.op == "conv2d" && opt_.fold_bn && i + 1 < ops.size() && foldable(op, ops[i + 1], reads)) {
        conv(op, &ops[i + 1]);
        ++i;  // the BatchNorm is done
        continue;
      }
      one(op);
    }
  }

 private:
  bool foldable(const TracedOp& conv_op, const TracedOp& next, const std::unordered_map<const TensorImpl*, int>& reads) {
    if (!is_batch_norm(next.op) || next.inputs.empty() || !next.inputs[0].same(conv_op.outputs[0])) return false;
    auto r = reads.find(conv_op.outputs[0].impl());
    return r != reads.end() && r->second == 1 && m_.bns.count(next.inputs[1].impl()) > 0;
  }

  // batch_norm, or a BatchNorm with its activation fused in (ops::BatchNormOptions::act), which
  // exports as the BatchNorm (or the folded conv) followed by Relu or Clip(0, 6).
  static bool is_batch_norm(const std::string& t) {
    return t == "batch_norm" || t == "batch_norm_relu" || t == "batch_norm_relu6";
  }
  // The value the BatchNorm part writes: the op's own output, or a fresh one its activation reads.
  std::string bn_output(const TracedOp& bn_op, const std::string& base) {
    return bn_op.op == "batch_norm" ? out(bn_op, base) : b_.fresh(base);
  }
  void fused_activation(const TracedOp& bn_op, const std::string& pre) {
    if (bn_op.op == "batch_norm_relu") b_.node("Relu", {pre}, {out(bn_op, "relu")}, b_.fresh("relu"));
    if (bn_op.op == "batch_norm_relu6") clip06(pre, bn_op);
  }
  // Clip(x, 0, 6) into op's output.
  void clip06(const std::string& x, const TracedOp& op) {
    const std::string lo = b_.scalar_init(0.0f), hi = b_.scalar_init(6.0f);
    b_.node("Clip", {x, lo, hi}, {out(op, "relu6")}, b_.fresh("relu6"));
  }

  const std::string& in(const TracedOp& op, size_t i) { return b_.value(op.inputs.at(i), op.op); }
  std::string out(const TracedOp& op, const std::string& base) {
    const std::string name = b_.fresh(base);
    b_.bind(op.outputs.at(0), name);
    return name;
  }

  void one(const TracedOp& op) {
    const std::string& t = op.op;
    if (t == "conv2d") return conv(op, nullptr);
    if (is_batch_norm(t)) return batch_norm(op);
    if (t == "relu") return unary(op, "Relu");
    if (t == "relu6") return relu6(op);
    if (t == "add") return binary(op, "Add");
    if (t == "mul") return binary(op, "Mul");
    if (t == "max_pool2d") return max_pool(op);
    if (t == "adaptive_avg_pool2d") return adaptive_pool(op);
    if (t == "resize_bilinear") return resize(op);
    if (t == "concat_channels") return concat(op);
    if (t == "softmax") return softmax(op, "Softmax");
    if (t == "log_softmax") return softmax(op, "LogSoftmax");
    if (t == "dropout2d") return unary(op, "Identity");  // eval: never recorded; kept for completeness
    throw Error(ErrorKind::runtime, str("export: op '", t, "' has no ONNX mapping yet (inputs ",
                                        op.inputs.empty() ? std::string("none") : op.inputs[0].str(), ")"))
        .op("export")
        .hint("docs/export.md lists the ops segtrain export maps");
  }

  std::string node_name(const TracedOp& op, size_t param_input) {
    if (op.inputs.size() > param_input && op.inputs[param_input].defined()) {
      auto it = m_.names.find(op.inputs[param_input].impl());
      if (it != m_.names.end()) return module_of(it->second) + "/" + op.op;
    }
    return b_.fresh(op.op);
  }

  // Conv (optionally with the BatchNorm that reads its output folded into weight and bias).
  void conv(const TracedOp& op, const TracedOp* bn_op) {
    const Tensor& w = op.inputs.at(1);
    auto ci = m_.convs.find(w.impl());
    SEG_CHECK(ci != m_.convs.end(), runtime, "export: conv2d weight ", w.str(), " is not a Conv2d module's weight");
    const Conv2d& c = *ci->second;
    const ops::Conv2dOptions& o = c.options;
    const std::string wname = m_.names.at(w.impl());
    const int64_t O = w.size(0), KH = w.size(1), KW = w.size(2), I = w.size(3);
    const Tensor oihw = w.detach().to(Device::cpu()).to(DType::f32).permute({0, 3, 1, 2}).contiguous();
    const bool has_bias = op.inputs.size() > 2 && op.inputs[2].defined();
    std::vector<std::string> inputs{in(op, 0)};
    std::string name = module_of(wname) + "/conv";
    std::string y;
    if (bn_op == nullptr) {
      inputs.push_back(b_.param(w, wname, {O, I, KH, KW}, oihw));
      if (has_bias) inputs.push_back(b_.param(op.inputs[2], m_.names.at(op.inputs[2].impl()), {O}, op.inputs[2]));
      y = out(op, "conv");
    } else {
      // w' = w * gamma * invstd (per output channel), b' = beta + (b - mean) * gamma * invstd, in
      // double and rounded once: the same affine map as Conv then BatchNormalization.
      const BatchNorm2d& bn = *m_.bns.at(bn_op->inputs.at(1).impl());
      const auto gamma = bn.weight.to(Device::cpu()).to(DType::f64).to_vector<double>();
      const auto beta = bn.bias.to(Device::cpu()).to(DType::f64).to_vector<double>();
      const auto mean = bn.running_mean.to(Device::cpu()).to(DType::f64).to_vector<double>();
      const auto var = bn.running_var.to(Device::cpu()).to(DType::f64).to_vector<double>();
      const auto wv = oihw.to(DType::f64).to_vector<double>();
      std::vector<double> bias(static_cast<size_t>(O), 0.0);
      if (has_bias) bias = op.inputs[2].to(Device::cpu()).to(DType::f64).to_vector<double>();
      const int64_t per = I * KH * KW;
      std::vector<float> wf(wv.size()), bf(static_cast<size_t>(O));
      for (int64_t oc = 0; oc < O; ++oc) {
        const double k = gamma[oc] / std::sqrt(var[oc] + bn.eps);
        for (int64_t j = 0; j < per; ++j) wf[oc * per + j] = static_cast<float>(wv[oc * per + j] * k);
        bf[oc] = static_cast<float>(beta[oc] + (bias[oc] - mean[oc]) * k);
      }
      const std::string bn_module = module_of(m_.names.at(bn.weight.impl()));
      const std::string doc = wname + " with " + bn_module + " (eval BatchNorm) folded in";
      inputs.push_back(b_.float_init(wname + ".bn_folded", wf, {O, I, KH, KW}, doc));
      inputs.push_back(b_.float_init(module_of(wname) + ".bias.bn_folded", bf, {O}, doc));
      name = module_of(wname) + "/conv+" + bn_module;
      y = bn_output(*bn_op, "conv_bn");
      ++report_.folded_bn;
    }
    onnx::NodeProto* n = b_.node("Conv", inputs, {y}, name);
    set_ints(n, "kernel_shape", {KH, KW});
    set_ints(n, "strides", {o.stride_h, o.stride_w});
    set_ints(n, "pads", {o.pad_h, o.pad_w, o.pad_h, o.pad_w});
    set_ints(n, "dilations", {o.dil_h, o.dil_w});
    set_int(n, "group", o.groups);
    if (bn_op != nullptr) fused_activation(*bn_op, y);
  }

  void batch_norm(const TracedOp& op) {
    SEG_CHECK(!op.attrs.value("training", false), runtime,
              "export: a BatchNorm ran in training mode during the trace (the model must be in eval mode)");
    auto bi = m_.bns.find(op.inputs.at(1).impl());
    SEG_CHECK(bi != m_.bns.end(), runtime, "export: batch_norm's weight is not a BatchNorm2d module's weight");
    const BatchNorm2d& bn = *bi->second;
    const int64_t C = bn.weight.size(0);
    const std::string x = in(op, 0);
    std::vector<std::string> inputs{x};
    for (const Tensor* t : {&bn.weight, &bn.bias, &bn.running_mean, &bn.running_var})
      inputs.push_back(b_.param(*t, m_.names.at(t->impl()), {C}, *t));
    const std::string y = bn_output(op, "bn");
    onnx::NodeProto* n = b_.node("BatchNormalization", inputs, {y}, module_of(m_.names.at(bn.weight.impl())) + "/bn");
    set_float(n, "epsilon", static_cast<float>(bn.eps));
    fused_activation(op, y);
  }

  void unary(const TracedOp& op, const char* type) {
    const std::string x = in(op, 0);
    b_.node(type, {x}, {out(op, op.op)}, b_.fresh(op.op));
  }
  void relu6(const TracedOp& op) {
    const std::string x = in(op, 0);
    clip06(x, op);
  }
  void binary(const TracedOp& op, const char* type) {
    const std::string a = in(op, 0), c = in(op, 1);
    b_.node(type, {a, c}, {out(op, op.op)}, b_.fresh(op.op));
  }
  void max_pool(const TracedOp& op) {
    const std::string x = in(op, 0);
    const int64_t k = op.attrs.at("kernel"), s = op.attrs.at("stride"), p = op.attrs.at("pad");
    onnx::NodeProto* n = b_.node("MaxPool", {x}, {out(op, "maxpool")}, b_.fresh("maxpool"));
    set_ints(n, "kernel_shape", {k, k});
    set_ints(n, "strides", {s, s});
    set_ints(n, "pads", {p, p, p, p});
  }

  // AdaptiveAvgPool2d as fixed ops for this input size. Mean over a rectangle = mean over its rows
  // of the means over its columns, so the two axes are pooled one after the other. Per axis, with
  // PyTorch's bins [floor(i*in/out), ceil((i+1)*in/out)): nothing when in == out; ReduceMean when
  // out == 1; AveragePool when the bins are uniform (in % out == 0); otherwise one
  // Slice + ReduceMean per bin and a Concat (bins may overlap, which no single AveragePool can do).
  void adaptive_pool(const TracedOp& op) {
    const Tensor& xin = op.inputs.at(0);
    const Tensor& y = op.outputs.at(0);
    std::string v = in(op, 0);
    bool uneven = false;
    v = pool_axis(v, 2, xin.size(1), y.size(1), uneven);
    v = pool_axis(v, 3, xin.size(2), y.size(2), uneven);
    if (uneven) ++report_.uneven_pools;
    if (v == in(op, 0)) v = identity(v);  // same size both ways
    b_.bind(y, v);
  }
  std::string identity(const std::string& v) {
    const std::string o = b_.fresh("identity");
    b_.node("Identity", {v}, {o}, o);
    return o;
  }
  std::string pool_axis(const std::string& v, int64_t axis, int64_t in_size, int64_t out_size, bool& uneven) {
    if (in_size == out_size) return v;
    if (out_size == 1 || in_size % out_size == 0) {
      const std::string o = b_.fresh("avgpool");
      if (out_size == 1) {
        onnx::NodeProto* n = b_.node("ReduceMean", {v}, {o}, o);
        set_ints(n, "axes", {axis});
        set_int(n, "keepdims", 1);
      } else {
        const int64_t k = in_size / out_size;
        onnx::NodeProto* n = b_.node("AveragePool", {v}, {o}, o);
        set_ints(n, "kernel_shape", axis == 2 ? std::vector<int64_t>{k, 1} : std::vector<int64_t>{1, k});
        set_ints(n, "strides", axis == 2 ? std::vector<int64_t>{k, 1} : std::vector<int64_t>{1, k});
      }
      return o;
    }
    uneven = true;
    std::vector<std::string> bins;
    const std::string axes = b_.i64_init({axis});
    for (int64_t i = 0; i < out_size; ++i) {
      const int64_t lo = adaptive_start(i, in_size, out_size), hi = adaptive_end(i, in_size, out_size);
      const std::string sliced = b_.fresh("pool_bin");
      b_.node("Slice", {v, b_.i64_init({lo}), b_.i64_init({hi}), axes}, {sliced}, sliced);
      const std::string mean = b_.fresh("pool_bin_mean");
      onnx::NodeProto* n = b_.node("ReduceMean", {sliced}, {mean}, mean);
      set_ints(n, "axes", {axis});
      set_int(n, "keepdims", 1);
      bins.push_back(mean);
    }
    const std::string o = b_.fresh("adaptive_pool");
    onnx::NodeProto* n = b_.node("Concat", bins, {o}, o);
    set_int(n, "axis", axis);
    return o;
  }

  // Bilinear, align_corners=False: ONNX Resize, linear, half_pixel (the edge clamp of PyTorch's
  // source index is ONNX's edge padding of the interpolation).
  void resize(const TracedOp& op) {
    const Tensor& x = op.inputs.at(0);
    const Tensor& y = op.outputs.at(0);
    const std::string xv = in(op, 0);
    if (x.size(1) == y.size(1) && x.size(2) == y.size(2)) {
      b_.bind(y, identity(xv));
      return;
    }
    std::string sizes;
    if (opt_.dynamic_batch) {
      // sizes = concat(shape(x)[0:2], [Ho, Wo]): the batch comes from the input at run time.
      const std::string shape = b_.fresh("shape"), nc = b_.fresh("batch_channels");
      b_.node("Shape", {xv}, {shape}, shape);
      b_.node("Slice", {shape, b_.i64_init({0}), b_.i64_init({2}), b_.i64_init({0})}, {nc}, nc);
      sizes = b_.fresh("sizes");
      onnx::NodeProto* n = b_.node("Concat", {nc, b_.i64_init({y.size(1), y.size(2)})}, {sizes}, sizes);
      set_int(n, "axis", 0);
    } else {
      sizes = b_.i64_init(nchw(y));
    }
    onnx::NodeProto* n = b_.node("Resize", {xv, "", "", sizes}, {out(op, "resize")}, b_.fresh("resize"));
    set_string(n, "mode", "linear");
    set_string(n, "coordinate_transformation_mode", "half_pixel");
  }
  void concat(const TracedOp& op) {
    std::vector<std::string> xs;
    for (const Tensor& t : op.inputs) xs.push_back(b_.value(t, op.op));
    onnx::NodeProto* n = b_.node("Concat", xs, {out(op, "concat")}, b_.fresh("concat"));
    set_int(n, "axis", 1);
  }
  void softmax(const TracedOp& op, const char* type) {
    const std::string x = in(op, 0);
    onnx::NodeProto* n = b_.node(type, {x}, {out(op, op.op)}, b_.fresh(op.op));
    set_int(n, "axis", 1);
  }

  GraphBuilder& b_;
  const ModelTensors& m_;
  const OnnxExportOptions& opt_;
  OnnxExportReport& report_;
};

}  // namespace

OnnxExportReport export_onnx(SegmentationModule& model, const OnnxExportOptions& opt, const std::string& path) {
  SEG_CHECK(opt.height >= 1 && opt.width >= 1, usage, "export: the size must be positive, got ", opt.height, "x",
            opt.width);
  SEG_CHECK(opt.opset >= 13 && opt.opset <= 17, usage, "export: --opset ", opt.opset,
            " is not supported (13 to 17: what the ONNX library of this build checks)");
  model.eval();

  // 1. Trace inference on a zero image of the export size (values do not matter: no op branches on data).
  const Tensor image = Tensor::zeros({1, opt.height, opt.width, 3}, DType::f32, model.encoder->parameters().front().device());
  Tracer tracer;
  Tensor probs;
  {
    ScopedOpObserver observe(tracer);
    probs = model.infer(image, opt.height, opt.width);
  }
  SEG_CHECK(!tracer.ops.empty(), runtime, "export: the trace recorded no op");

  // 2. Build the graph.
  OnnxExportReport report;
  onnx::ModelProto mp;
  mp.set_ir_version(8);
  mp.set_producer_name("segtrain");
  mp.set_producer_version(opt.metadata.value("segtrain.version", std::string("")));
  mp.set_doc_string("segtrain export of " + model.encoder->arch() + " + " + model.decoder->arch());
  onnx::OperatorSetIdProto* ops = mp.add_opset_import();
  ops->set_domain("");
  ops->set_version(opt.opset);
  for (const auto& [k, v] : opt.metadata.items()) {
    onnx::StringStringEntryProto* e = mp.add_metadata_props();
    e->set_key(k);
    e->set_value(v.is_string() ? v.get<std::string>() : v.dump());
  }
  onnx::GraphProto* g = mp.mutable_graph();
  g->set_name(model.encoder->arch() + "-" + model.decoder->arch());
  GraphBuilder b(g, opt.half, report);
  set_value_info(g->add_input(), "image", onnx::TensorProto::FLOAT, {1, 3, opt.height, opt.width}, opt.dynamic_batch);
  if (opt.half) {
    onnx::NodeProto* n = b.node("Cast", {"image"}, {"image_f16"}, "image/cast_f16");
    set_int(n, "to", onnx::TensorProto::FLOAT16);
    b.bind(image, "image_f16");
  } else {
    b.bind(image, "image");
  }
  const ModelTensors named = collect_model_tensors(model);
  Exporter(b, named, opt, report).run(tracer.ops);
  const std::string result = b.value(probs, "output");
  const std::vector<int64_t> out_dims = nchw(probs);
  if (opt.half) {
    onnx::NodeProto* n = b.node("Cast", {result}, {"probabilities"}, "probabilities/cast_f32");
    set_int(n, "to", onnx::TensorProto::FLOAT);
  } else {
    b.node("Identity", {result}, {"probabilities"}, "probabilities");
  }
  set_value_info(g->add_output(), "probabilities", onnx::TensorProto::FLOAT, out_dims, opt.dynamic_batch);

  // 3. Check with the ONNX library's checker, then write atomically.
  try {
    onnx::checker::check_model(mp);
  } catch (const std::exception& e) {
    throw Error(ErrorKind::runtime, str("export: the ONNX checker rejected the model (a segtrain bug): ", e.what()))
        .op("export");
  }
  std::string bytes;
  SEG_CHECK(mp.SerializeToString(&bytes), runtime, "export: protobuf serialisation failed (model over 2 GB?)");
  write_file_atomic(path, bytes.data(), bytes.size());
  report.bytes = bytes.size();
  return report;
}

}  // namespace seg::cli
