#include "core/dtype.h"

namespace seg {

size_t dtype_size(DType dt) {
  switch (dt) {
    case DType::f32: return 4;
    case DType::f64: return 8;
    case DType::f16: return 2;
    case DType::bf16: return 2;
    case DType::i32: return 4;
    case DType::i64: return 8;
    case DType::u8: return 1;
  }
  SEG_FAIL(runtime, "invalid dtype code ", static_cast<int>(dt));
}

const char* dtype_name(DType dt) {
  switch (dt) {
    case DType::f32: return "f32";
    case DType::f64: return "f64";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
    case DType::u8: return "u8";
  }
  return "invalid";
}

DType parse_dtype(const std::string& name) {
  struct Alias { const char* name; DType dt; };
  static const Alias aliases[] = {
      {"f32", DType::f32}, {"float32", DType::f32}, {"float", DType::f32}, {"fp32", DType::f32},
      {"f64", DType::f64}, {"float64", DType::f64}, {"double", DType::f64},
      {"f16", DType::f16}, {"float16", DType::f16}, {"half", DType::f16}, {"fp16", DType::f16},
      {"bf16", DType::bf16}, {"bfloat16", DType::bf16},
      {"i32", DType::i32}, {"int32", DType::i32}, {"i64", DType::i64}, {"int64", DType::i64},
      {"u8", DType::u8}, {"uint8", DType::u8}};
  for (const auto& a : aliases)
    if (name == a.name) return a.dt;
  SEG_FAIL(usage, "unknown dtype '", name, "'").hint("use one of f32, f64, f16, bf16, i32, i64, u8");
}

bool is_floating(DType dt) { return dt == DType::f32 || dt == DType::f64 || is_half(dt); }
bool is_half(DType dt) { return dt == DType::f16 || dt == DType::bf16; }

void throw_missing_instantiation(const char* op, DType dt, Device dev) {
  throw Error(ErrorKind::device, str("op '", op, "' is not implemented for dtype ", dtype_name(dt), " on ",
                                     dev.str()))
      .op(op)
      .with("dtype", dtype_name(dt))
      .with("device", dev.str());
}

}  // namespace seg
