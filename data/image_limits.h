// The largest image segtrain decodes, checked from a file's header before any pixel memory is
// allocated: a header can claim any size (a 100-byte PNG may say 60000 x 60000). 2^27 pixels (about
// 134 megapixels, 400 MB as RGB) is far above every segmentation dataset (ADE20K's largest images
// are a few megapixels).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/error.h"

namespace seg::data {

constexpr int64_t kMaxImagePixels = int64_t{1} << 27;

// The largest single buffer stb_image may allocate (data/stb_impl.cpp): a 16-bit RGBA PNG at the
// pixel limit, 8 bytes a pixel, plus one filter byte per row (at most 2^24 rows, stb's own limit),
// is the largest an image within the limit needs. 1.03 GiB.
constexpr int64_t kMaxDecoderAllocation = kMaxImagePixels * 8 + (int64_t{1} << 24);

// w and h as a header states them; their magnitudes count (stb's BMP header gives a top-down file's
// height as negative, and its loader decodes |height| rows: a signed product let such a file past
// this check, the fuzz finding of 2026-12-03). Returns that pixel count.
inline int64_t check_pixel_count(int w, int h, const std::string& path, const char* what) {
  const int64_t pixels = std::llabs(static_cast<long long>(w)) * std::llabs(static_cast<long long>(h));
  if (pixels <= kMaxImagePixels) return pixels;
  throw Error(ErrorKind::data, str(what, " is ", w, "x", h, " (", pixels / 1000000, " megapixels), above segtrain's limit of ",
                                   kMaxImagePixels / 1000000, " megapixels"))
      .file(path)
      .hint("downscale the image (training resizes to DATASET.imgMaxSize anyway), or check that the file is not corrupt");
}

}  // namespace seg::data
