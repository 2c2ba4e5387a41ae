// Image resizing that reproduces Pillow 9.4's Image.resize bit for bit, because upstream resizes
// every training and evaluation image with PIL (spec/upstream.md section 2.2).
//
// resize_bilinear  = Image.BILINEAR on 8-bit images:
//   * a triangle filter evaluated at each output pixel centre, in0 + (x + 0.5) * scale;
//   * when shrinking (scale > 1) the triangle is widened by the scale, so every source pixel under
//     the output pixel contributes (antialiasing); when enlarging its support stays 1, which is
//     plain bilinear interpolation with half-pixel centres (align_corners=False) and edge clamping;
//   * weights normalised to sum 1, then rounded to 22-bit fixed point, as Pillow does;
//   * two separable passes, horizontal first, each rounded to uint8 (the intermediate is 8-bit);
//     a pass whose size does not change is skipped.
// resize_nearest  = Image.NEAREST: output pixel x takes source pixel floor((x + 0.5) * in/out),
//   the source position accumulated step by step in double as Pillow's affine scaler does, so a
//   /8 downscale picks source pixels 8i+4 (the centre of each 8x8 block).
//
// Both work for any channel count (labels have 1, photos 3).
#pragma once

#include "data/image.h"

namespace seg::data {

Image resize_bilinear(const Image& src, int out_width, int out_height);
Image resize_nearest(const Image& src, int out_width, int out_height);

}  // namespace seg::data
