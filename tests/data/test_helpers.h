// Shared helpers for the data tests: where fixtures and golden files live, a scratch directory,
// and small image builders.
#pragma once

#include <filesystem>
#include <string>

#include "core/error.h"
#include "tests/common/scratch.h"
#include "data/image.h"

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

// Largest absolute difference between two images of the same shape (-1 when shapes differ).
inline int max_abs_diff(const Image& a, const Image& b) {
  if (a.width != b.width || a.height != b.height || a.channels != b.channels) return -1;
  int worst = 0;
  for (size_t i = 0; i < a.pixels.size(); ++i) {
    const int d = std::abs(int(a.pixels[i]) - int(b.pixels[i]));
    worst = d > worst ? d : worst;
  }
  return worst;
}

}  // namespace seg::data::test
