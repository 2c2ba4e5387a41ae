// Typed helpers of the CUDA-vs-CPU kernel suites: iterating over storage types, turning random
// floats into values of a storage type, and a bit-for-bit comparison for exact kernels.
//
//   for_each_type(StorageTypes{}, [&](auto tag) { using T = typename decltype(tag)::type; ... });
//   std::vector<f16> h = to_storage<f16>(random_floats(n, seed));
//   CHECK_MESSAGE(bits_mismatch(got, want) < 0, ...);   // NaN == NaN (any payload), else same bits
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/common/half.h"

namespace seg::test {

template <class... Ts> struct TypeList {};
using FloatTypes = TypeList<float, f16, bf16>;
using StorageTypes = TypeList<float, f16, bf16, int32_t, int64_t, uint8_t>;

template <class F, class... Ts> void for_each_type(TypeList<Ts...>, F&& f) {
  (f(std::type_identity<Ts>{}), ...);
}

template <class T> inline constexpr bool is_float_like_v =
    std::is_floating_point_v<T> || std::is_same_v<T, f16> || std::is_same_v<T, bf16>;

template <class T> const char* type_name() {
  if constexpr (std::is_same_v<T, float>) return "f32";
  else if constexpr (std::is_same_v<T, double>) return "f64";
  else if constexpr (std::is_same_v<T, f16>) return "f16";
  else if constexpr (std::is_same_v<T, bf16>) return "bf16";
  else if constexpr (std::is_same_v<T, int32_t>) return "i32";
  else if constexpr (std::is_same_v<T, int64_t>) return "i64";
  else if constexpr (std::is_same_v<T, uint8_t>) return "u8";
  else return "?";
}

// float -> T: rounded to nearest even for the 16-bit types, truncated for integers.
template <class T> T from_float(float v) {
  if constexpr (std::is_same_v<T, f16> || std::is_same_v<T, bf16>) return T(v);
  else return static_cast<T>(v);
}
template <class T> std::vector<T> to_storage(const std::vector<float>& v) {
  std::vector<T> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = from_float<T>(v[i]);
  return out;
}
template <class T> std::vector<float> to_floats(const std::vector<T>& v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = static_cast<float>(v[i]);
  return out;
}

template <class T> bool is_nan_value(const T& v) {
  if constexpr (is_float_like_v<T>) return std::isnan(static_cast<float>(v));
  else return false;
}

// Index of the first element whose bits differ (two NaNs count as equal), or -1.
template <class T> int64_t bits_mismatch(const std::vector<T>& got, const std::vector<T>& want) {
  if (got.size() != want.size()) return 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (is_nan_value(got[i]) && is_nan_value(want[i])) continue;
    if (std::memcmp(&got[i], &want[i], sizeof(T)) != 0) return static_cast<int64_t>(i);
  }
  return -1;
}

// Element i as a double for messages (0 when i is out of range, e.g. -1).
template <class T> double as_double_or_zero(const std::vector<T>& v, int64_t i) {
  if (i < 0 || static_cast<size_t>(i) >= v.size()) return 0.0;
  if constexpr (is_float_like_v<T>) return static_cast<double>(static_cast<float>(v[static_cast<size_t>(i)]));
  else return static_cast<double>(v[static_cast<size_t>(i)]);
}

}  // namespace seg::test
