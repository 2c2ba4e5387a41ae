// The per-sample arithmetic of upstream's dataset.py (spec/upstream.md sections 2.2-2.4).
#pragma once

#include <cstdint>

#include "data/image.h"

namespace seg::data {

// round2nearest_multiple(x, p) = ((x - 1) // p + 1) * p: x rounded UP to a multiple of p.
int round_up_multiple(int x, int p);

struct ScaledSize {
  int width = 0;
  int height = 0;
  bool operator==(const ScaledSize& o) const { return width == o.width && height == o.height; }
};

// Training: s = min(short / min(h, w), max_size / max(h, w)) in double, then (int32) truncation of
// w*s and h*s, as upstream's int32 arrays do. Deviation: a side that would truncate to 0 (images
// more than imgMaxSize times longer than wide) becomes 1 instead of crashing PIL.
ScaledSize train_scaled_size(int width, int height, int short_side, int max_size);

// Evaluation: the same scale, int() truncation, then each side rounded up to `padding`; the image is
// resized straight to that size (aspect ratio changes slightly, as upstream).
ScaledSize eval_scaled_size(int width, int height, int short_side, int max_size, int padding);

// uint8 RGB -> float, exactly as upstream: np.float32(img) / 255, then torchvision Normalize with
// the ImageNet mean and std, all in float32. A 3 x 256 table holds every possible result.
class Normalizer {
 public:
  Normalizer();
  float value(int channel, uint8_t v) const { return lut_[channel][v]; }
  // Writes the image into dst (NHWC rows): pixel (x, y) channel c goes to
  // dst[y * row_stride + x * 3 + c]. Requires a 3-channel image.
  void apply(const Image& rgb, float* dst, int64_t row_stride) const;

 private:
  float lut_[3][256];
};

const Normalizer& imagenet_normalizer();

}  // namespace seg::data
