// The largest image segtrain decodes, checked from a file's header before any pixel memory is
// allocated: a header can claim any size (a 100-byte PNG may say 60000 x 60000). 2^27 pixels (about
// 134 megapixels, 400 MB as RGB) is far above every segmentation dataset (ADE20K's largest images
// are a few megapixels).
#pragma once

#include <cstdint>
#include <string>

#include "core/error.h"

namespace seg::data {

constexpr int64_t kMaxImagePixels = int64_t{1} << 27;

inline void check_pixel_count(int w, int h, const std::string& path, const char* what) {
  const int64_t pixels = static_cast<int64_t>(w) * h;
  if (pixels <= kMaxImagePixels) return;
  throw Error(ErrorKind::data, str(what, " is ", w, "x", h, " (", pixels / 1000000, " megapixels), above segtrain's limit of ",
                                   kMaxImagePixels / 1000000, " megapixels"))
      .file(path)
      .hint("downscale the image (training resizes to DATASET.imgMaxSize anyway), or check that the file is not corrupt");
}

}  // namespace seg::data
