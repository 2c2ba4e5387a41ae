// nvcuda::wmma for simulated kernels: fragments, fill/load/store/mma, with the hardware's rules.
//
// CUDA leaves the mapping of fragment elements to lanes unspecified (it differs between GPU
// generations). The simulation makes that explicit: every lane holds the WHOLE tile, element i at
// (row, col) = (i / cols, i % cols), so num_elements is rows*cols (256 for 16x16) instead of 8 or
// 16. Consequences:
//   * loops `for (i < frag.num_elements) frag.x[i] = f(frag.x[i])` that treat every element alike
//     (scaling, activation, conversion) are correct, at 32x the work;
//   * code that relies on a lane mapping (a bias by column computed from the lane, `if (lane == 0)
//     c.x[0] = ...`) makes the lanes' copies differ, and the next mma_sync or store_matrix_sync
//     reports a fragment_mismatch fault naming the lanes and the element. DESIGN decision 3:
//     epilogues that need element positions go through shared memory.
// Hardware rules checked (fault `misaligned`): the pointer of load/store_matrix_sync is 256-bit
// (32-byte) aligned, and ldm is a multiple of 16 bytes (8 halves, 4 floats). All operations are
// warp collectives that need all 32 lanes with identical pointer, ldm and layout (else
// `divergent_collective`). mma_sync multiplies exactly and accumulates in float, in k order; the
// tensor cores' rounding differs in the last bits, so tests use tolerances. tf32 inputs are
// truncated to 10 mantissa bits in mma_sync, as the hardware ignores the low bits. satf is ignored.
// Shapes: m16n16k16, m32n8k16, m8n32k16 for __half and __nv_bfloat16 (float or __half accumulator);
// m16n16k8 for precision::tf32. Not simulated: integer, sub-byte, double fragments.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#if defined(__F16C__)
#include <immintrin.h>
#endif
#include <source_location>
#include <string>
#include <type_traits>

#include "kernels/sim/device_runtime.h"

namespace nvcuda::wmma {

struct row_major {};
struct col_major {};
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
enum layout_t { mem_row_major, mem_col_major };
namespace precision {
struct tf32 {};
}  // namespace precision

namespace sim {

template <class Use, int M, int N, int K>
struct tile_dims;
template <int M, int N, int K>
struct tile_dims<matrix_a, M, N, K> {
  static constexpr int rows = M, cols = K;
  static constexpr const char* name = "matrix_a";
};
template <int M, int N, int K>
struct tile_dims<matrix_b, M, N, K> {
  static constexpr int rows = K, cols = N;
  static constexpr const char* name = "matrix_b";
};
template <int M, int N, int K>
struct tile_dims<accumulator, M, N, K> {
  static constexpr int rows = M, cols = N;
  static constexpr const char* name = "accumulator";
};

template <class T>
struct storage {
  using type = T;
};
template <>
struct storage<precision::tf32> {
  using type = float;
};

// Conversions for the emulation's inner loops. They are uninstrumented like the loops
// (SEG_SIM_NO_ACCESS_CHECKS; g++ does not inline across that attribute, so CUDA's own conversion
// functions would be calls), and round like CUDA's: to nearest even, NaN to NaN.
template <class T>
SEG_SIM_NO_ACCESS_CHECKS inline float to_float(T v) {
  if constexpr (std::is_same_v<T, __half>) {
    uint16_t bits;
    std::memcpy(&bits, &v, 2);
#if defined(__F16C__)
    return _cvtsh_ss(bits);
#else
    return __half2float(v);
#endif
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    uint16_t bits;
    std::memcpy(&bits, &v, 2);
    const uint32_t u = static_cast<uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  } else {
    return static_cast<float>(v);
  }
}
template <class T>
SEG_SIM_NO_ACCESS_CHECKS inline T from_float(float v) {
  if constexpr (std::is_same_v<T, __half>) {
#if defined(__F16C__)
    const auto bits = static_cast<uint16_t>(_cvtss_sh(v, _MM_FROUND_TO_NEAREST_INT));
    T h;
    std::memcpy(static_cast<void*>(&h), &bits, 2);
    return h;
#else
    return __float2half(v);
#endif
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    uint32_t u;
    std::memcpy(&u, &v, 4);
    const auto bits = static_cast<uint16_t>(std::isnan(v) ? 0x7FFFu : (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
    T h;
    std::memcpy(static_cast<void*>(&h), &bits, 2);
    return h;
  } else {
    return v;
  }
}

template <class Use, int M, int N, int K, class T>
constexpr bool supported() {
  constexpr bool half_like = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;
  constexpr bool shape16 =
      (M == 16 && N == 16 && K == 16) || (M == 32 && N == 8 && K == 16) || (M == 8 && N == 32 && K == 16);
  if constexpr (std::is_same_v<Use, accumulator>) {
    return (std::is_same_v<T, float> || std::is_same_v<T, __half>)&&(shape16 || (M == 16 && N == 16 && K == 8));
  } else {
    return (half_like && shape16) || (std::is_same_v<T, precision::tf32> && M == 16 && N == 16 && K == 8);
  }
}

struct MemoryArgs {
  const void* ptr;
  unsigned ldm;
  int layout;  // 0 row-major, 1 col-major
};

// Faults (misaligned) unless ptr is 32-byte aligned and ldm a multiple of 16 bytes.
void check_memory_args(const char* op, const void* ptr, unsigned ldm, size_t element_bytes,
                       const seg::sim::detail::Where& where);
// Once per warp and tile: checks the tile's memory with the pointer checks and counts it
// (counters.h): `rows` x `cols` elements of `element_bytes`, `ldm` elements between lines.
void account_tile(const char* op, const void* ptr, int rows, int cols, unsigned ldm, size_t element_bytes,
                  bool col_major, bool store, const seg::sim::detail::Where& where);
void count_mma(int m, int n, int k, bool tf32);
void no_op_complete(seg::sim::detail::WarpOpView& view);
// Faults (fragment_mismatch): lane `lane` holds a `role` fragment that differs from lane 0's at
// element (row, col).
[[noreturn]] void fragment_mismatch(const seg::sim::detail::WarpOpView& view, const char* role, unsigned lane, int row,
                                    int col);

// Checks that every lane passed an identical fragment; lane l's copy is *fragments[l].
template <class Frag>
SEG_SIM_NO_ACCESS_CHECKS void check_same_fragment(const seg::sim::detail::WarpOpView& v, const char* role,
                                                  const Frag* const (&fragments)[32]) {
  const Frag& first = *fragments[0];
  for (unsigned l = 1; l < 32; ++l) {
    const Frag& other = *fragments[l];
    if (std::memcmp(first.x, other.x, sizeof first.x) == 0) continue;
    for (int i = 0; i < Frag::num_elements; ++i)
      if (std::memcmp(&first.x[i], &other.x[i], sizeof first.x[i]) != 0)
        fragment_mismatch(v, role, l, i / Frag::cols, i % Frag::cols);
  }
}

}  // namespace sim

template <class Use, int M, int N, int K, class T, class Layout = void>
class fragment {
  static_assert(sim::supported<Use, M, N, K, T>(), "this WMMA fragment shape/type is not supported by the simulator");

 public:
  using element_type = T;
  using storage_element_type = typename sim::storage<T>::type;
  using use_type = Use;
  using layout_type = Layout;
  static constexpr int rows = sim::tile_dims<Use, M, N, K>::rows;
  static constexpr int cols = sim::tile_dims<Use, M, N, K>::cols;
  enum { num_elements = rows * cols };
  storage_element_type x[num_elements];
};

template <class Use, int M, int N, int K, class T, class L>
SEG_SIM_NO_ACCESS_CHECKS inline void fill_fragment(fragment<Use, M, N, K, T, L>& f,
                          const typename fragment<Use, M, N, K, T, L>::storage_element_type& v) {
  for (auto& e : f.x) e = v;
}

namespace sim {

// The tile is checked and counted once, for the warp, by the lane that completes the collective.
template <class Frag, class E>
SEG_SIM_NO_ACCESS_CHECKS void load_complete(seg::sim::detail::WarpOpView& v) {
  const auto& u = *static_cast<const MemoryArgs*>(v.uniform);
  account_tile(v.name, u.ptr, Frag::rows, Frag::cols, u.ldm, sizeof(E), u.layout != 0, false, v.where);
}

template <class Frag, class E>
SEG_SIM_NO_ACCESS_CHECKS void load(Frag& f, const E* p, unsigned ldm, bool col_major_memory, const char* op,
                                   const seg::sim::detail::Where& where) {
  check_memory_args(op, p, ldm, sizeof(E), where);
  const MemoryArgs uniform{p, ldm, col_major_memory ? 1 : 0};
  seg::sim::detail::LaneArgs args;
  seg::sim::detail::warp_collective({op, &load_complete<Frag, E>, 0xFFFFFFFFu, &uniform, sizeof uniform, true}, args,
                                    where);
  // Each lane reads the whole tile itself once the warp has met (checked in load_complete).
  for (int r = 0; r < Frag::rows; ++r)
    for (int c = 0; c < Frag::cols; ++c)
      f.x[r * Frag::cols + c] =
          col_major_memory ? p[static_cast<size_t>(c) * ldm + r] : p[static_cast<size_t>(r) * ldm + c];
}

// The store is done once, for the warp, by the lane that completes the collective.
template <class Frag, class E>
SEG_SIM_NO_ACCESS_CHECKS void store_complete(seg::sim::detail::WarpOpView& v) {
  const Frag* fragments[32];
  for (unsigned l = 0; l < 32; ++l) fragments[l] = static_cast<const Frag*>(v.lanes[l]->in);
  check_same_fragment<Frag>(v, "accumulator", fragments);
  const auto& u = *static_cast<const MemoryArgs*>(v.uniform);
  account_tile(v.name, u.ptr, Frag::rows, Frag::cols, u.ldm, sizeof(E), u.layout != 0, true, v.where);
  const Frag& f = *fragments[0];
  E* p = static_cast<E*>(const_cast<void*>(u.ptr));
  for (int r = 0; r < Frag::rows; ++r)
    for (int c = 0; c < Frag::cols; ++c)
      (u.layout ? p[static_cast<size_t>(c) * u.ldm + r] : p[static_cast<size_t>(r) * u.ldm + c]) =
          f.x[r * Frag::cols + c];
}

template <class A, class B, class C>
struct MmaOperands {
  const A* a;
  const B* b;
  const C* c;
};

SEG_SIM_NO_ACCESS_CHECKS inline float tf32_truncate(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  u &= 0xFFFFE000u;
  std::memcpy(&x, &u, 4);
  return x;
}

template <class T>
SEG_SIM_NO_ACCESS_CHECKS inline float multiplicand(T v) {
  if constexpr (std::is_same_v<T, float>)
    return tf32_truncate(v);  // tf32 fragments store floats
  else
    return to_float(v);
}

// D = A * B + C, once for the warp, written into every lane's D.
template <class D, class A, class B, class C>
SEG_SIM_NO_ACCESS_CHECKS void mma_complete(seg::sim::detail::WarpOpView& v) {
  using Ops = MmaOperands<A, B, C>;
  const A* as[32];
  const B* bs[32];
  const C* cs[32];
  for (unsigned l = 0; l < 32; ++l) {
    const Ops& ops = *static_cast<const Ops*>(v.lanes[l]->in);
    as[l] = ops.a;
    bs[l] = ops.b;
    cs[l] = ops.c;
  }
  check_same_fragment<A>(v, "matrix_a", as);
  check_same_fragment<B>(v, "matrix_b", bs);
  check_same_fragment<C>(v, "accumulator", cs);
  const A& a = *as[0];
  const B& b = *bs[0];
  const C& c = *cs[0];
  constexpr int M = A::rows, K = A::cols, N = B::cols;
  D result;
  float acc[N];
  for (int i = 0; i < M; ++i) {
    // Each element accumulates in k order; the j loop innermost lets the compiler vectorise.
    for (int j = 0; j < N; ++j) acc[j] = to_float(c.x[i * N + j]);
    for (int k = 0; k < K; ++k) {
      const float aik = multiplicand(a.x[i * K + k]);
      for (int j = 0; j < N; ++j) acc[j] = std::fma(aik, multiplicand(b.x[k * N + j]), acc[j]);
    }
    for (int j = 0; j < N; ++j) result.x[i * N + j] = from_float<typename D::storage_element_type>(acc[j]);
  }
  for (unsigned l = 0; l < 32; ++l) std::memcpy(static_cast<D*>(v.lanes[l]->out)->x, result.x, sizeof result.x);
  count_mma(M, N, K, std::is_same_v<typename A::element_type, precision::tf32>);
}

}  // namespace sim

template <int M, int N, int K, class T, class L, class E>
inline void load_matrix_sync(fragment<matrix_a, M, N, K, T, L>& a, const E* p, unsigned ldm,
                             const std::source_location& where = std::source_location::current()) {
  static_assert(std::is_same_v<E, typename fragment<matrix_a, M, N, K, T, L>::storage_element_type>,
                "pointer type must match the fragment");
  sim::load(a, p, ldm, std::is_same_v<L, col_major>, "wmma::load_matrix_sync(matrix_a)", where);
}
template <int M, int N, int K, class T, class L, class E>
inline void load_matrix_sync(fragment<matrix_b, M, N, K, T, L>& b, const E* p, unsigned ldm,
                             const std::source_location& where = std::source_location::current()) {
  static_assert(std::is_same_v<E, typename fragment<matrix_b, M, N, K, T, L>::storage_element_type>,
                "pointer type must match the fragment");
  sim::load(b, p, ldm, std::is_same_v<L, col_major>, "wmma::load_matrix_sync(matrix_b)", where);
}
template <int M, int N, int K, class T>
inline void load_matrix_sync(fragment<accumulator, M, N, K, T>& c, const T* p, unsigned ldm, layout_t layout,
                             const std::source_location& where = std::source_location::current()) {
  sim::load(c, p, ldm, layout == mem_col_major, "wmma::load_matrix_sync(accumulator)", where);
}

template <int M, int N, int K, class T>
inline void store_matrix_sync(T* p, const fragment<accumulator, M, N, K, T>& c, unsigned ldm, layout_t layout,
                              const std::source_location& where = std::source_location::current()) {
  using Frag = fragment<accumulator, M, N, K, T>;
  sim::check_memory_args("wmma::store_matrix_sync", p, ldm, sizeof(T), where);
  const sim::MemoryArgs uniform{p, ldm, layout == mem_col_major ? 1 : 0};
  seg::sim::detail::LaneArgs args{&c, nullptr, 0};
  seg::sim::detail::warp_collective(
      {"wmma::store_matrix_sync", &sim::store_complete<Frag, T>, 0xFFFFFFFFu, &uniform, sizeof uniform, true}, args,
      where);
}

template <int M, int N, int K, class Td, class Ta, class La, class Tb, class Lb, class Tc>
inline void mma_sync(fragment<accumulator, M, N, K, Td>& d, const fragment<matrix_a, M, N, K, Ta, La>& a,
                     const fragment<matrix_b, M, N, K, Tb, Lb>& b, const fragment<accumulator, M, N, K, Tc>& c,
                     bool satf = false, const std::source_location& where = std::source_location::current()) {
  (void)satf;
  using D = fragment<accumulator, M, N, K, Td>;
  using A = fragment<matrix_a, M, N, K, Ta, La>;
  using B = fragment<matrix_b, M, N, K, Tb, Lb>;
  using C = fragment<accumulator, M, N, K, Tc>;
  static_assert(std::is_same_v<Ta, Tb>, "matrix_a and matrix_b must have the same element type");
  const sim::MmaOperands<A, B, C> ops{&a, &b, &c};
  seg::sim::detail::LaneArgs args{&ops, &d, 0};
  seg::sim::detail::warp_collective({"wmma::mma_sync", &sim::mma_complete<D, A, B, C>, 0xFFFFFFFFu, nullptr, 0, true},
                                    args, where);
}

// Rounds to the nearest tf32 value (10 mantissa bits), ties away from zero, as cvt.rna.tf32.f32.
inline float __float_to_tf32(float x) {
  if (!std::isfinite(x)) return x;
  uint32_t u;
  std::memcpy(&u, &x, 4);
  u = (u + 0x1000u) & 0xFFFFE000u;
  std::memcpy(&x, &u, 4);
  return x;
}

}  // namespace nvcuda::wmma
