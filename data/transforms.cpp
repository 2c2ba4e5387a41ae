#include "data/transforms.h"

#include <algorithm>

#include "core/error.h"

namespace seg::data {

int round_up_multiple(int x, int p) {
  // Python's // floors, so x = 0 gives 0 (not p); C++'s / truncates, hence the explicit floor.
  const int q = x - 1 >= 0 ? (x - 1) / p : -((p - (x - 1) - 1) / p);
  return (q + 1) * p;
}

namespace {
double scale_for(int width, int height, int short_side, int max_size) {
  return std::min(static_cast<double>(short_side) / std::min(height, width),
                  static_cast<double>(max_size) / std::max(height, width));
}
}  // namespace

ScaledSize train_scaled_size(int width, int height, int short_side, int max_size) {
  SEG_ASSERT(width > 0 && height > 0);
  const double s = scale_for(width, height, short_side, max_size);
  return {std::max(1, static_cast<int>(width * s)), std::max(1, static_cast<int>(height * s))};
}

ScaledSize eval_scaled_size(int width, int height, int short_side, int max_size, int padding) {
  SEG_ASSERT(width > 0 && height > 0);
  const double s = scale_for(width, height, short_side, max_size);
  const int w = std::max(1, static_cast<int>(width * s));
  const int h = std::max(1, static_cast<int>(height * s));
  return {round_up_multiple(w, padding), round_up_multiple(h, padding)};
}

Normalizer::Normalizer() {
  // torchvision stores mean/std as float32 tensors; the arithmetic is float32 sub then div.
  const float mean[3] = {0.485f, 0.456f, 0.406f};
  const float std[3] = {0.229f, 0.224f, 0.225f};
  for (int c = 0; c < 3; ++c)
    for (int v = 0; v < 256; ++v) {
      const float unit = static_cast<float>(v) / 255.0f;
      lut_[c][v] = (unit - mean[c]) / std[c];
    }
}

void Normalizer::apply(const Image& rgb, float* dst, int64_t row_stride) const {
  SEG_CHECK(rgb.channels == 3, runtime, "Normalizer::apply needs an RGB image");
  for (int y = 0; y < rgb.height; ++y) {
    const uint8_t* in = rgb.row(y);
    float* out = dst + y * row_stride;
    for (int x = 0; x < rgb.width; ++x) {
      out[3 * x] = lut_[0][in[3 * x]];
      out[3 * x + 1] = lut_[1][in[3 * x + 1]];
      out[3 * x + 2] = lut_[2][in[3 * x + 2]];
    }
  }
}

const Normalizer& imagenet_normalizer() {
  static const Normalizer normalizer;
  return normalizer;
}

}  // namespace seg::data
