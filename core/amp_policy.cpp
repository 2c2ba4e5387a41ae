#include "core/amp_policy.h"

#include <cctype>
#include <cstdio>
#include "core/numbers.h"  // (kept on this line: docs/mixed-precision.md links to lines below)

namespace seg {

const char* op_class_name(OpClass c) {
  switch (c) {
    case OpClass::conv: return "conv / GEMM";
    case OpClass::batchnorm: return "batchnorm";
    case OpClass::activation: return "relu, relu6";
    case OpClass::dropout: return "dropout2d";
    case OpClass::pool: return "pooling";
    case OpClass::resize: return "bilinear resize";
    case OpClass::concat_add: return "concat, add";
    case OpClass::softmax: return "softmax, log-softmax";
    case OpClass::loss: return "NLL loss";
    case OpClass::reduction: return "sum, mean";
    case OpClass::optimizer: return "optimizer";
  }
  return "?";
}

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::fp32: return "fp32";
    case Precision::half: return "half";
    case Precision::widest: return "widest input";
    case Precision::input: return "input dtype";
  }
  return "?";
}

// The table. Read a row as: under this level, this op computes in this precision.
Precision AmpConfig::precision(OpClass c) const {
  switch (level) {
    case AmpLevel::O0:
      return Precision::fp32;
    case AmpLevel::O1:
      switch (c) {
        case OpClass::conv: return Precision::half;
        case OpClass::batchnorm: return Precision::fp32;  // statistics and parameters; I/O in the input dtype
        case OpClass::softmax:
        case OpClass::loss:
        case OpClass::reduction:
        case OpClass::optimizer: return Precision::fp32;
        case OpClass::pool:
        case OpClass::resize:
        case OpClass::concat_add: return Precision::widest;
        case OpClass::activation:
        case OpClass::dropout: return Precision::input;
      }
      break;
    case AmpLevel::O2:
      switch (c) {
        case OpClass::batchnorm:
        case OpClass::loss:
        case OpClass::optimizer: return Precision::fp32;  // BN kept fp32, loss in fp32, fp32 master weights
        default: return Precision::input;                 // the model is half, so everything else is half
      }
    case AmpLevel::O3:
      return c == OpClass::loss ? Precision::fp32 : Precision::half;  // the loss kernel always accumulates in fp32
  }
  return Precision::fp32;
}

std::string AmpConfig::name() const {
  std::string out = "O";
  out += static_cast<char>('0' + static_cast<int>(level));
  if (level != AmpLevel::O0) {
    out += " (";
    out += dtype_name(half_dtype);
    out += ")";
  }
  return out;
}

// TF32 (DESIGN 7 leaves the f32 of O0 to the backend): on cuda, f32 convolutions and GEMMs run on
// TF32 tensor cores by default, as PyTorch's (torch.backends.cudnn.allow_tf32); kernels/cuda/engine.h
// holds the switch, which `--no-tf32` turns off. The CPU backend computes them in f32.
constexpr const char* kTf32Note =
    " (on cuda: TF32 tensor cores, inputs rounded to 10 mantissa bits, f32 sums; --no-tf32 for strict f32)";
constexpr const char* kStrictNote = " (--no-tf32: strict f32 on cuda too, no TF32 tensor cores)";

std::string AmpConfig::policy_table(bool no_tf32) const {
  std::string out = "mixed precision " + name() + ":\n";
  out += "  model parameters: ";
  out += model_in_half() ? std::string(dtype_name(half_dtype)) + (batchnorm_fp32() ? " (BatchNorm f32)" : "") : "f32";
  out += master_weights() ? ", f32 master weights in the optimizer\n" : "\n";
  out += "  loss scale: ";
  if (!scaler.enabled) out += "off\n";
  else if (scaler.dynamic) out += "dynamic, start " + format_scale(scaler.init_scale) + ", x2 after " +
                                  std::to_string(scaler.growth_interval) + " clean steps, x0.5 on overflow, max " +
                                  format_scale(scaler.max_scale) + "\n";
  else out += "static " + format_scale(scaler.init_scale) + "\n";
  for (int i = 0; i < kNumOpClasses; ++i) {
    const OpClass c = static_cast<OpClass>(i);
    const Precision p = precision(c);
    std::string shown = precision_name(p);
    if (p == Precision::half) shown = dtype_name(half_dtype);
    if (p == Precision::fp32) shown = "f32";
    if (c == OpClass::conv && p == Precision::fp32) shown += no_tf32 ? kStrictNote : kTf32Note;
    char line[160];
    std::snprintf(line, sizeof line, "  %-22s %s\n", op_class_name(c), shown.c_str());
    out += line;
  }
  return out;
}

AmpConfig make_amp_config(const std::string& level_in, const std::string& dtype_in, const std::string& loss_scale) {
  std::string level;
  for (char ch : level_in) level += static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  AmpConfig c;
  if (level == "O0" || level.empty()) c.level = AmpLevel::O0;
  else if (level == "O1") c.level = AmpLevel::O1;
  else if (level == "O2") c.level = AmpLevel::O2;
  else if (level == "O3") c.level = AmpLevel::O3;
  else SEG_FAIL(usage, "unknown mixed-precision level '", level_in, "'").key("--amp").hint("use O0, O1, O2 or O3");
  if (dtype_in == "f16" || dtype_in == "fp16" || dtype_in == "float16" || dtype_in == "half") c.half_dtype = DType::f16;
  else if (dtype_in == "bf16" || dtype_in == "bfloat16") c.half_dtype = DType::bf16;
  else SEG_FAIL(usage, "unknown half dtype '", dtype_in, "'").key("--amp-dtype").hint("use f16 or bf16");
  // Defaults per level: O1/O2 dynamic scaling (f16 only), O3 static 1, O0 none.
  c.scaler = LossScalerOptions{};
  c.scaler.enabled = (c.level == AmpLevel::O1 || c.level == AmpLevel::O2) && c.half_dtype == DType::f16;
  c.scaler.dynamic = true;
  if (c.level == AmpLevel::O3) {
    c.scaler.enabled = c.half_dtype == DType::f16;
    c.scaler.dynamic = false;
    c.scaler.init_scale = 1.0;
  }
  if (loss_scale == "dynamic") {
    c.scaler.enabled = true;
    c.scaler.dynamic = true;
    c.scaler.init_scale = 65536.0;
  } else if (loss_scale == "none" || loss_scale == "off") {
    c.scaler.enabled = false;
  } else if (!loss_scale.empty()) {
    const double v = parse_finite_double(loss_scale).value_or(0.0);
    if (!(v > 0))
      SEG_FAIL(usage, "bad loss scale '", loss_scale, "'").key("--loss-scale").hint("use dynamic, none or a positive number");
    c.scaler.enabled = true;
    c.scaler.dynamic = false;
    c.scaler.init_scale = v;
  }
  if (c.level == AmpLevel::O0) c.scaler.enabled = false;
  return c;
}

std::string amp_policy_overview(DType half_dtype) {
  std::string out = "op class               O0    O1            O2            O3\n";
  bool tf32_cell = false;
  for (int i = 0; i < kNumOpClasses; ++i) {
    const OpClass c = static_cast<OpClass>(i);
    char line[160];
    std::string cells[4];
    for (int l = 0; l < 4; ++l) {
      AmpConfig cfg;
      cfg.level = static_cast<AmpLevel>(l);
      cfg.half_dtype = half_dtype;
      const Precision p = cfg.precision(c);
      cells[l] = p == Precision::half ? dtype_name(half_dtype) : p == Precision::fp32 ? "f32" : precision_name(p);
      if (c == OpClass::conv && p == Precision::fp32) {
        cells[l] += "*";
        tf32_cell = true;
      }
    }
    std::snprintf(line, sizeof line, "%-22s %-5s %-13s %-13s %s\n", op_class_name(c), cells[0].c_str(), cells[1].c_str(),
                  cells[2].c_str(), cells[3].c_str());
    out += line;
  }
  if (tf32_cell) out += std::string("* f32 conv / GEMM") + kTf32Note + "\n";
  return out;
}

}  // namespace seg
