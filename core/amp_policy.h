// The mixed-precision policy: the one table of level x op class -> precision (DESIGN decision 7),
// following Apex's opt levels.
//
//   O0  pure fp32 (the reference).
//   O1  weights stay fp32; each op casts its inputs by the table below (conv/GEMM in half;
//       BN statistics, softmax, log-softmax, NLL, reductions, loss, optimizer in fp32; resize,
//       pooling, concat and add in the widest input dtype); dynamic loss scaling.
//   O2  the model is cast to half except BatchNorm (fp32 parameters and statistics); the optimizer
//       keeps fp32 master weights; ops run in their input dtype; dynamic loss scaling.
//   O3  everything half ("pure fp16", Apex's speed baseline); static loss scale 1 unless asked.
// `--amp-dtype bf16` keeps the levels and turns loss scaling off by default (bf16 has fp32's range).
//
// Ops ask precision(op class) (layers/autocast.h applies it under O1); segtrain prints
// policy_table() at start-up so a run says exactly what it does.
#pragma once

#include <string>

#include "core/dtype.h"
#include "core/loss_scaler.h"

namespace seg {

enum class AmpLevel { O0 = 0, O1 = 1, O2 = 2, O3 = 3 };

// The op classes of the table. Every differentiable op belongs to one.
enum class OpClass {
  conv,          // conv2d (and any GEMM)
  batchnorm,     // batch_norm: statistics and parameters
  activation,    // relu, relu6
  dropout,       // dropout2d
  pool,          // max_pool2d, adaptive_avg_pool2d
  resize,        // resize_bilinear
  concat_add,    // concat_channels, add
  softmax,       // softmax, log_softmax
  loss,          // softmax_nll_loss
  reduction,     // sum, mean
  optimizer,     // the parameter update
};
constexpr int kNumOpClasses = 11;
const char* op_class_name(OpClass c);

enum class Precision {
  fp32,    // cast inputs to fp32
  half,    // cast inputs to the half dtype (f16 or bf16)
  widest,  // cast inputs to the widest dtype among them
  input,   // run in the input dtype (no cast)
};
const char* precision_name(Precision p);

struct AmpConfig {
  AmpLevel level = AmpLevel::O0;
  DType half_dtype = DType::f16;
  LossScalerOptions scaler;  // filled by make_amp_config from the level, overridable

  Precision precision(OpClass c) const;  // THE table
  bool autocast() const { return level == AmpLevel::O1; }
  bool model_in_half() const { return level == AmpLevel::O2 || level == AmpLevel::O3; }
  bool batchnorm_fp32() const { return level != AmpLevel::O3; }
  bool master_weights() const { return level == AmpLevel::O2; }
  std::string name() const;          // "O2 (f16)"
  // The table for this level, for the start-up log. no_tf32: the run has --no-tf32, so O0's f32
  // convolutions and GEMMs are strict f32 on cuda as well (the note says so instead of TF32).
  std::string policy_table(bool no_tf32 = false) const;
};

// "O0".."O3" (case-insensitive) and "f16"/"fp16"/"bf16". loss_scale: "dynamic", "none" or a number
// (static), "" = the level's default. Errors name the flag.
AmpConfig make_amp_config(const std::string& level, const std::string& dtype = "f16", const std::string& loss_scale = "");

// The full level x op table (all four levels), for docs and `segtrain info --amp`.
std::string amp_policy_overview(DType half_dtype = DType::f16);

}  // namespace seg
