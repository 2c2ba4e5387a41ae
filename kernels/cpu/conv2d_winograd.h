// Winograd convolution on the CPU: 3x3 kernels, stride 1, any dilation and padding, groups 1,
// float32 (f16/bf16 storage is widened to f32 by the conv op, as for every other path).
//
// Math (conv2d_winograd_matrices.h has the matrices and where they come from). Per output tile of
// m x m pixels, alpha = m + 2, and per channel pair:
//   Y = AT [ (G g G^T) .* (BT d BT^T) ] AT^T,    d: the alpha x alpha input tile, g: the 3x3 filter
// Summed over input channels c, the element-wise product becomes, for each of the alpha^2 tile
// positions xi, one GEMM over all tiles t:
//   M_xi[t, o] = sum_c V_xi[t, c] * U_xi[o, c],    V = BT d BT^T (input transform), U = G g G^T
// and Y_t = AT M_t AT^T (output transform). Per output pixel that is alpha^2 / m^2 multiply-adds
// per (c, o) instead of 9: 4 for F(2x2) (2.25x fewer), 2.25 for F(4x4) (4x), 1.78 for F(6x6) (5.1x).
//
// Dilation d: the outputs a tile computes are d apart, (ho0 + i*d, wo0 + j*d), so its inputs are too:
// x[ho0 - pad + a*d, wo0 - pad + b*d], a, b < alpha. The transforms do not change; only which pixels
// a tile reads and writes. Tiles are laid out per residue class of the output coordinate mod d,
// m consecutive class members per tile; ragged edges (fewer than m left) compute into a scratch row.
//
// The three passes:
//   forward          y  = conv(x, w) + b                        the scheme above, with K = C, N = O
//   backward data    dx = conv(dy padded by 2d - pad, w flipped in space, transposed in channels)
//                         a stride-1 3x3 convolution again: the same code with K = O, N = C
//   backward weight  dU_xi[o, c] = sum_t (A dY_t A^T)_xi[t, o] * V_xi[t, c],  dw = G^T dU G
//                         (the transpose of the forward in g): GEMMs over all tiles, K = tiles
// All GEMMs run on kernels/cpu/gemm.h's micro-kernels (MatrixPacker operands).
//
// Blocking (conv2d_winograd.cpp): the transformed weights are kept within ~32 MiB by cutting K
// (forward) or N (backward data, when N is large) into blocks; the products M within ~32 MiB by
// cutting the tiles into super-blocks; threads take contiguous blocks of tiles, and each transforms
// its own input tiles, runs the alpha^2 GEMMs and transforms its own outputs. Backward weight runs
// the alpha^2 GEMMs in parallel. Every output element gets the same arithmetic in the same order
// whatever the thread count (block sizes that change a sum's order depend on the shape only), so
// runs are bit-identical for a given thread count and across thread counts.
//
// Scratch: per-thread buffers that grow to the largest layer and are kept (as gemm.cpp's packing
// buffers are): at most ~32 MiB of transformed weights + ~32 MiB of products on the calling thread
// and ~16 MiB of transformed inputs per pool thread, much less on most layers.
//
// Error: larger tiles round more (entries of AT and BT grow with m). Measured on the layer shapes of
// ResNet50dilated and the PPM decoder against a float64 convolution: docs/performance.md.
#pragma once

#include <cstdint>

#include "kernels/common/conv_shape.h"

namespace seg::cpu {

// True when the Winograd path can run this shape: 3x3, stride 1, groups 1.
bool conv2d_winograd_applicable(const ConvShape& s);

// m = 2, 4 or 6: F(m x m, 3 x 3). Outputs are overwritten; b, db may be null.
void conv2d_forward_winograd(int m, const ConvShape& s, const float* x, const float* w, const float* b, float* y);
void conv2d_backward_data_winograd(int m, const ConvShape& s, const float* w, const float* dy, float* dx);
void conv2d_backward_weight_winograd(int m, const ConvShape& s, const float* x, const float* dy, float* dw, float* db);

// The scratch limits that decide the blocking, in floats. Tests shrink them to run every blocking
// path (K, N and channel blocks, tile super-blocks and chunks) on small shapes; the lab tries others.
// Changing them changes the order of some sums (K blocks), so a run must not change them midway.
struct WinogradLimits {
  int64_t weight_floats = int64_t{8} << 20;   // U (forward, backward data) or dU (backward weight): 32 MiB
  int64_t product_floats = int64_t{8} << 20;  // M of a tile super-block; V + A dY A^T of a tile chunk
  int64_t input_floats = int64_t{4} << 20;    // V of one thread's block of tiles: 16 MiB
  int64_t channel_block = 64;                 // K, N and channel blocks are multiples of this
};
WinogradLimits winograd_limits();
void set_winograd_limits(const WinogradLimits& limits);

}  // namespace seg::cpu
