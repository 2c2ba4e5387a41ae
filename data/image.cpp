#include "data/image.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"

namespace seg::data {

void flip_horizontal(Image& image) {
  const int c = image.channels;
  for (int y = 0; y < image.height; ++y) {
    uint8_t* row = image.row(y);
    for (int l = 0, r = image.width - 1; l < r; ++l, --r)
      for (int k = 0; k < c; ++k) std::swap(row[l * c + k], row[r * c + k]);
  }
}

void paste(Image& dst, const Image& src, int x, int y) {
  SEG_ASSERT(dst.channels == src.channels && x >= 0 && y >= 0 && x + src.width <= dst.width &&
             y + src.height <= dst.height);
  for (int r = 0; r < src.height; ++r)
    std::memcpy(dst.row(y + r) + static_cast<size_t>(x) * dst.channels, src.row(r), src.row_bytes());
}

Image crop(const Image& src, int x, int y, int w, int h) {
  SEG_ASSERT(x >= 0 && y >= 0 && w >= 0 && h >= 0 && x + w <= src.width && y + h <= src.height);
  Image out(w, h, src.channels);
  for (int r = 0; r < h; ++r)
    std::memcpy(out.row(r), src.row(y + r) + static_cast<size_t>(x) * src.channels, out.row_bytes());
  return out;
}

Tensor image_to_tensor(const Image& image) {
  Tensor t = Tensor::empty({image.height, image.width, image.channels}, DType::u8, Device::cpu());
  if (!image.pixels.empty()) std::memcpy(t.data<uint8_t>(), image.pixels.data(), image.pixels.size());
  return t;
}

Image tensor_to_image(const Tensor& t) {
  SEG_CHECK(t.dtype() == DType::u8 && t.dim() == 3, runtime, "tensor_to_image needs a u8 [H, W, C] tensor, got ",
            t.str());
  const Tensor c = t.contiguous();
  Image image(static_cast<int>(c.size(1)), static_cast<int>(c.size(0)), static_cast<int>(c.size(2)));
  if (!image.pixels.empty()) std::memcpy(image.pixels.data(), c.data<uint8_t>(), image.pixels.size());
  return image;
}

}  // namespace seg::data
