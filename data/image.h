// Image: an 8-bit raster in memory, rows top to bottom, channels interleaved (HWC).
//
// This is the pipeline's working type between decoding and the final float tensor: RGB photos have
// 3 channels, labels (class indices, 0 = unlabeled) have 1. It is a plain value type (a vector of
// bytes), so loader worker threads can create and pass images around without touching tensors.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace seg::data {

struct Image {
  int width = 0;
  int height = 0;
  int channels = 0;
  std::vector<uint8_t> pixels;  // height * width * channels bytes

  Image() = default;
  Image(int w, int h, int c, uint8_t fill = 0)
      : width(w), height(h), channels(c), pixels(static_cast<size_t>(w) * h * c, fill) {}

  bool empty() const { return pixels.empty(); }
  size_t row_bytes() const { return static_cast<size_t>(width) * channels; }
  uint8_t* row(int y) { return pixels.data() + static_cast<size_t>(y) * row_bytes(); }
  const uint8_t* row(int y) const { return pixels.data() + static_cast<size_t>(y) * row_bytes(); }
  uint8_t& at(int x, int y, int c = 0) { return row(y)[static_cast<size_t>(x) * channels + c]; }
  uint8_t at(int x, int y, int c = 0) const { return row(y)[static_cast<size_t>(x) * channels + c]; }
  bool same_size(const Image& o) const { return width == o.width && height == o.height; }
};

// Mirrors left and right in place (PIL's Image.FLIP_LEFT_RIGHT).
void flip_horizontal(Image& image);

// Pastes `src` into `dst` with its top-left corner at (x, y); both must have the same channel count
// and src must fit.
void paste(Image& dst, const Image& src, int x, int y);

// A crop [x, x+w) x [y, y+h) of `src`.
Image crop(const Image& src, int x, int y, int w, int h);

// u8 tensor [H, W, C] holding a copy of the image, and back.
Tensor image_to_tensor(const Image& image);
Image tensor_to_image(const Tensor& t);

}  // namespace seg::data
