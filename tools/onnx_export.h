// `segtrain export`: a whole SegmentationModule (encoder + decoder + inference head) as one ONNX
// model, written with the ONNX library's protobuf classes and checked with its checker.
//
// How: the model's inference (`SegmentationModule::infer`) runs once on a zero image of the export
// size with an op observer installed (core/op_observer.h). Every op reports its name, its input and
// output tensors and its attributes; tensors are matched by identity, so the trace is the model's
// dataflow graph. Parameters and buffers become initializers under upstream's state_dict names
// ("encoder.layer1.0.conv1.weight"), the zero image becomes the graph input.
//
// Layout: segtrain's activations are [N, H, W, C]; the ONNX graph is NCHW throughout, as upstream's
// PyTorch model. Every mapped op is layout-free except for its axes (Concat and Softmax on axis 1,
// pooling slices on axes 2 and 3); conv weights [O, KH, KW, I/g] are written OIHW.
//
// Ops (docs/export.md has the table): conv2d -> Conv (with the following eval BatchNorm folded in
// unless fold_bn is off), batch_norm -> BatchNormalization, relu -> Relu, relu6 -> Clip(0, 6),
// add -> Add, max_pool2d -> MaxPool, adaptive_avg_pool2d -> AveragePool where the bins are uniform,
// else Slice + ReduceMean + Concat per bin along each axis (exact PyTorch bins, separable),
// resize_bilinear -> Resize(linear, half_pixel), concat_channels -> Concat(axis 1),
// softmax -> Softmax(axis 1). Anything else is an error naming the op.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "models/segmentation_module.h"

namespace seg::cli {

struct OnnxExportOptions {
  int64_t height = 0, width = 0;  // the input size the graph is traced at (and fixed to)
  bool dynamic_batch = false;     // the batch dimension is a symbol ("N") instead of 1
  int opset = 17;                 // 13..17 (what the ONNX library here checks)
  bool half = false;              // f16 weights and arithmetic; the input and output stay f32
  bool fold_bn = true;            // fold eval BatchNorm into the preceding convolution
  nlohmann::json metadata;        // string values, stored as the model's metadata_props
};

struct OnnxExportReport {
  int64_t nodes = 0;
  int64_t initializers = 0;
  int64_t folded_bn = 0;
  int64_t uneven_pools = 0;  // adaptive pools written as per-bin slices (upstream's export fails on these)
  size_t bytes = 0;          // size of the written file
  std::map<std::string, int64_t> op_counts;  // ONNX op type -> nodes
};

// Traces `model` (put in eval mode) at opt.height x opt.width, builds the ONNX model, checks it with
// onnx::checker and writes it to `path` atomically (nothing is left behind on failure).
OnnxExportReport export_onnx(SegmentationModule& model, const OnnxExportOptions& opt, const std::string& path);

}  // namespace seg::cli
