// Element types and the one dtype dispatch mechanism (DESIGN decision 4).
//
//   f32  float        storage and accumulation everywhere
//   f64  double       CPU only: references and finite-difference gradient checks
//   f16  seg::f16     half storage (IEEE binary16), arithmetic in f32
//   bf16 seg::bf16    bfloat16 storage, arithmetic in f32
//   i32  int32_t      labels (-1 = ignore)
//   i64  int64_t      file I/O (BatchNorm num_batches_tracked)
//   u8   uint8_t      images
//
// Dispatch: an op lists the dtypes it is instantiated for, explicitly, at the call site:
//
//   SEG_DISPATCH("relu", x.dtype(), x.device(), (DType::f32, DType::f64), [&](auto tag) {
//     using T = SEG_TYPE(tag);
//     relu_kernel<T>(...);
//   });
//
// Only the listed dtypes are compiled; any other dtype at run time is an Error naming op, dtype and
// device, never a silent conversion.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "core/device.h"
#include "core/error.h"
#include "kernels/common/half.h"

namespace seg {

enum class DType : uint8_t { f32, f64, f16, bf16, i32, i64, u8 };

constexpr int kNumDTypes = 7;

size_t dtype_size(DType dt);
const char* dtype_name(DType dt);
DType parse_dtype(const std::string& name);  // "f32", "float32", "half", ... ; Error(usage) otherwise
bool is_floating(DType dt);                  // f32, f64, f16, bf16
bool is_half(DType dt);                      // f16, bf16

template <class T> struct dtype_of;
template <> struct dtype_of<float> { static constexpr DType value = DType::f32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::f64; };
template <> struct dtype_of<f16> { static constexpr DType value = DType::f16; };
template <> struct dtype_of<bf16> { static constexpr DType value = DType::bf16; };
template <> struct dtype_of<int32_t> { static constexpr DType value = DType::i32; };
template <> struct dtype_of<int64_t> { static constexpr DType value = DType::i64; };
template <> struct dtype_of<uint8_t> { static constexpr DType value = DType::u8; };
template <class T> inline constexpr DType dtype_v = dtype_of<T>::value;

template <DType D> struct ctype_of;
template <> struct ctype_of<DType::f32> { using type = float; };
template <> struct ctype_of<DType::f64> { using type = double; };
template <> struct ctype_of<DType::f16> { using type = f16; };
template <> struct ctype_of<DType::bf16> { using type = bf16; };
template <> struct ctype_of<DType::i32> { using type = int32_t; };
template <> struct ctype_of<DType::i64> { using type = int64_t; };
template <> struct ctype_of<DType::u8> { using type = uint8_t; };
template <DType D> using ctype_t = typename ctype_of<D>::type;

// The value passed to a dispatch lambda: carries the C++ type of the chosen dtype.
template <DType D> struct DTypeTag {
  using type = ctype_t<D>;
  static constexpr DType value = D;
};
#define SEG_TYPE(tag) typename decltype(tag)::type

[[noreturn]] void throw_missing_instantiation(const char* op, DType dt, Device dev);

template <DType First, DType...> struct first_dtype { static constexpr DType value = First; };

template <DType... Ds, class F>
decltype(auto) dispatch_dtype(const char* op, DType dt, Device dev, F&& fn) {
  static_assert(sizeof...(Ds) > 0, "list at least one dtype");
  using R = decltype(fn(DTypeTag<first_dtype<Ds...>::value>{}));
  if constexpr (std::is_void_v<R>) {
    bool done = ((dt == Ds ? (fn(DTypeTag<Ds>{}), true) : false) || ...);
    if (!done) throw_missing_instantiation(op, dt, dev);
  } else {
    R result{};
    bool done = ((dt == Ds ? (result = fn(DTypeTag<Ds>{}), true) : false) || ...);
    if (!done) throw_missing_instantiation(op, dt, dev);
    return result;
  }
}

#define SEG_DTYPE_LIST(...) __VA_ARGS__
// SEG_DISPATCH(op, dtype, device, (DType::a, DType::b, ...), lambda)
#define SEG_DISPATCH(OP, DT, DEV, LIST, ...) ::seg::dispatch_dtype<SEG_DTYPE_LIST LIST>(OP, DT, DEV, __VA_ARGS__)

}  // namespace seg
