// Shared helpers for the data tests: where fixtures and golden files live, a scratch directory,
// and small image builders.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/image.h"
#include "data/transforms.h"
#include "tests/common/compare.h"
#include "tests/common/scratch.h"

namespace seg::data::test {

inline std::string source_path(const std::string& rel) { return std::string(SEG_SOURCE_DIR) + "/" + rel; }
inline std::string fixture(const std::string& name) { return source_path("tests/data/fixtures/" + name); }
inline std::string golden(const std::string& name) { return source_path("tests/data/golden/" + name); }

// A fresh directory in the test process's scratch folder, removed with everything in it at scope exit.
using ScratchDir = ::seg::test::ScratchDir;

// Runs fn, which must throw seg::Error; returns it (fails the test otherwise).
template <class Fn>
Error expect_error(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e;
  }
  throw std::runtime_error("expected a seg::Error, nothing was thrown");
}

// Two images pixel by pixel (tests/common/compare.h; tol in grey levels). Different sizes or channel
// counts are one mismatch.
inline ::seg::test::Comparison compare(const Image& got, const Image& want, ::seg::test::Tolerance tol = {}) {
  if (!got.same_size(want) || got.channels != want.channels)
    return ::seg::test::compare(std::vector<int>(1), std::vector<int>(2), tol);  // a size mismatch
  return ::seg::test::compare(got.pixels, want.pixels, tol);
}

// A normalised RGB image (channels-last floats, `row_stride` floats per row, at least the size of
// `want`) against ImageNet-normalised `want`, both in grey levels (one level of channel c is
// 1 / (255 * std_c) after normalisation); tol in grey levels.
inline ::seg::test::Comparison compare_normalised(const float* got, int64_t row_stride, const Image& want,
                                                  ::seg::test::Tolerance tol) {
  const Normalizer& n = imagenet_normalizer();
  const double level[3] = {1.0 / (255 * 0.229), 1.0 / (255 * 0.224), 1.0 / (255 * 0.225)};
  std::vector<double> g, w;
  for (int y = 0; y < want.height; ++y)
    for (int x = 0; x < want.width; ++x)
      for (int c = 0; c < 3; ++c) {
        g.push_back(got[y * row_stride + x * 3 + c] / level[c]);
        w.push_back(n.value(c, want.at(x, y, c)) / level[c]);
      }
  return ::seg::test::compare(g, w, tol);
}

}  // namespace seg::data::test
