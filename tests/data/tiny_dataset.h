// A tiny on-disk dataset for loader tests: random-noise photos with blocky labels, mixed
// landscape/portrait sizes, written as PNG (lossless, so every test sees exact pixels).
#pragma once

#include <string>
#include <vector>

#include "core/rng.h"
#include "data/file_io.h"
#include "data/image_codec.h"
#include "data/odgt.h"
#include "test_helpers.h"

namespace seg::data::test {

struct TinyDataset {
  std::string root;
  std::string list;  // odgt path
  int size = 0;
};

// n records; record i is portrait when i % 3 == 0. Labels hold values 0..num_class.
inline TinyDataset make_tiny_dataset(const std::string& root, int n, int num_class = 5, uint64_t seed = 1) {
  PhiloxStream rng(seed, RngPurpose::test, 77);
  std::string lines;
  for (int i = 0; i < n; ++i) {
    const bool portrait = i % 3 == 0;
    const int w = portrait ? 20 + static_cast<int>(rng.below(12)) : 30 + static_cast<int>(rng.below(20));
    const int h = portrait ? 30 + static_cast<int>(rng.below(20)) : 18 + static_cast<int>(rng.below(10));
    Image img(w, h, 3), label(w, h, 1);
    for (auto& p : img.pixels) p = static_cast<uint8_t>(rng.below(256));
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) label.at(x, y) = static_cast<uint8_t>((x / 4 + y / 4 + i) % (num_class + 1));
    const std::string name = "img" + std::to_string(i);
    save_png(root + "/images/" + name + ".png", img);
    save_png(root + "/labels/" + name + ".png", label);
    lines += odgt_line("images/" + name + ".png", "labels/" + name + ".png", w, h) + "\n";
  }
  const std::string list = root + "/train.odgt";
  write_file_atomic(list, lines);
  return {root, list, n};
}

}  // namespace seg::data::test
