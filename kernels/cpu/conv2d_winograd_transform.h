// The per-tile transforms of the Winograd convolution (kernels/cpu/conv2d_winograd.cpp uses them).
//
// A tile transform reads one tile of `Cols x Cols` channel vectors and writes `Rows x Rows` of them:
//   dst[k][c] = (Map * src * Map^T)[k][c] (+ bias[c])    for every channel c < n
// where src[k] / dst[k] point at channel 0 of tile element k (row-major over the tile's axes; the
// caller points padding at a buffer of zeros and discarded outputs at a scratch row), and Map is
//   kind       Map (conv2d_winograd_matrices.h)   tile        used by
//   input      BT                                 a x a -> a x a   forward / backward data: x or dy
//   weight     G                                  3 x 3 -> a x a   forward / backward data: w
//   output     AT                                 a x a -> m x m   forward / backward data: y or dx (+bias)
//   out_grad   A = AT^T                           m x m -> a x a   backward weight: dy
//   weight_grad G^T                               a x a -> 3 x 3   backward weight: dw
// with a = m + 2. Vectorised over channels: AVX-512 (16 lanes, when cpu_isa() is avx512), AVX2
// (8 lanes), then scalar for the last n mod 8 channels. Memory traffic per tile: Cols^2 * n floats
// read, Rows^2 * n written; the arithmetic is about (Rows + Cols) * Cols * Rows fused multiply-adds
// per L channels, at most, fewer where the matrix has zeros and ones.
#pragma once

#include <cstdint>

namespace seg::cpu::winograd {

enum class Transform { input, weight, output, out_grad, weight_grad };

using TileFn = void (*)(const float* const* src, float* const* dst, int64_t n, const float* bias);

// The transform for tile size m (2, 4 or 6), for the ISA active now (cpu_isa()).
TileFn tile_transform(int m, Transform kind);

}  // namespace seg::cpu::winograd
