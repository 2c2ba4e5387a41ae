// The Winograd tile transforms, written once over a vector type and compiled once per ISA.
//
// NO include guard on purpose: conv2d_winograd_transform.cpp includes this file twice, inside
// namespace SEG_WINO_NS, once as plain code (the x86-64-v3 baseline: AVX2 + FMA) and once between
// `#pragma GCC target("avx512f,...")` ... `pop_options`, which gives every function defined here an
// AVX-512 target attribute (the region form of SEG_TARGET_AVX512: a template instantiated from a
// target-attributed definition inherits the attribute, which a per-function attribute on a generic
// template could not express). Nothing outside those namespaces is defined here, so no AVX-512
// code can be picked by the linker for a baseline caller; the AVX-512 copy runs only after
// cpu_isa() said so.
//
// A transform maps a tile of Cols x Cols vectors to Rows x Rows vectors by a constant matrix Map
// (conv2d_winograd_matrices.h) applied along both axes: out = Map * in * Map^T, each element a
// vector of L consecutive channels. The matrix is a compile-time constant, so each output row is
// unrolled into only its non-zero terms: +-1 become adds/subtracts, the rest fused multiply-adds.
//
// Needs, before inclusion: <cstdint>, <utility>, the matrices header, and the Ops types it is
// instantiated with (see conv2d_winograd_transform.cpp): Ops::R (register), Ops::L (lanes),
// load, store, zero, add, sub, mul(r, float), fmadd(r, float, acc) = r * c + acc.

namespace SEG_WINO_NS {

template <int N, class F>
inline __attribute__((always_inline)) void static_for(F&& f) {
  [&]<int... I>(std::integer_sequence<int, I...>) { (f(std::integral_constant<int, I>{}), ...); }(
      std::make_integer_sequence<int, N>{});
}

template <class Map>
constexpr int first_nonzero(int i) {
  for (int j = 0; j < Map::cols; ++j)
    if (Map::at(i, j) != 0.0) return j;
  return -1;
}

// out[i * os] = sum_j Map(i, j) * in[j * is], for every row i, unrolled over the non-zeros.
template <class Ops, class Map>
inline __attribute__((always_inline)) void apply(const typename Ops::R* in, int is, typename Ops::R* out, int os) {
  using R = typename Ops::R;
  static_for<Map::rows>([&](auto i) {
    constexpr int j0 = first_nonzero<Map>(i);
    static_assert(j0 >= 0, "a transform row of zeros");
    constexpr double c0 = Map::at(i, j0);
    R acc = c0 == 1.0 ? in[j0 * is] : Ops::mul(in[j0 * is], static_cast<float>(c0));
    static_for<Map::cols>([&](auto j) {
      if constexpr (j > j0) {
        constexpr double c = Map::at(i, j);
        if constexpr (c == 1.0) acc = Ops::add(acc, in[j * is]);
        else if constexpr (c == -1.0) acc = Ops::sub(acc, in[j * is]);
        else if constexpr (c != 0.0) acc = Ops::fmadd(in[j * is], static_cast<float>(c), acc);
      }
    });
    out[i * os] = acc;
  });
}

// One tile, channels [c0, c1) in steps of Ops::L (the caller passes a range that is a multiple of L):
//   dst[k][c] = (Map * src * Map^T)[k] (+ bias[c]),   src: Cols*Cols pointers, dst: Rows*Rows pointers
// (row-major over the tile's two axes), each pointing at channel 0 of one tile element.
template <class Ops, class Map>
inline __attribute__((always_inline)) void tile_range(const float* const* src, float* const* dst, int64_t c0,
                                                      int64_t c1, const float* bias) {
  using R = typename Ops::R;
  constexpr int rows = Map::rows, cols = Map::cols;
  for (int64_t c = c0; c < c1; c += Ops::L) {
    R in[cols * cols], mid[rows * cols], out[rows * rows];
#pragma GCC unroll 64
    for (int k = 0; k < cols * cols; ++k) in[k] = Ops::load(src[k] + c);
    // along the first axis: mid[i][j] = sum_a Map(i, a) in[a][j]
#pragma GCC unroll 8
    for (int j = 0; j < cols; ++j) apply<Ops, Map>(in + j, cols, mid + j, cols);
    // along the second axis: out[i][k] = sum_b Map(k, b) mid[i][b]
#pragma GCC unroll 8
    for (int i = 0; i < rows; ++i) apply<Ops, Map>(mid + i * cols, 1, out + i * rows, 1);
    if (bias) {
      const R b = Ops::load(bias + c);
#pragma GCC unroll 64
      for (int k = 0; k < rows * rows; ++k) out[k] = Ops::add(out[k], b);
    }
#pragma GCC unroll 64
    for (int k = 0; k < rows * rows; ++k) Ops::store(dst[k] + c, out[k]);
  }
}

}  // namespace SEG_WINO_NS
