// Class names and the visualization palette, in the two CSV formats of upstream's ADE20K metadata
// (data/ade20k/object150_info.csv and color150.csv). The synthetic dataset writes the same formats for
// its own classes, so every tool reads both kinds of dataset the same way.
//
// Index conventions (as upstream): label files hold 0 = unlabeled and 1..num_class; the network's
// classes and the palette rows are 0-based (class k = label value k + 1).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/image.h"

namespace seg::data {

// One row of object<N>_info.csv: Idx,Ratio,Train,Val,Stuff,Name.
struct ClassInfo {
  int idx = 0;          // 1-based label value
  double ratio = 0.0;   // share of all training pixels
  int64_t train = 0;    // training images that contain the class
  int64_t val = 0;      // validation images that contain the class
  bool stuff = false;   // amorphous region (sky, road) rather than a countable object
  std::string name;     // synonyms separated by ';' (the first one is the short name)
  std::string short_name() const { return name.substr(0, name.find(';')); }
};

struct Rgb {
  uint8_t r = 0, g = 0, b = 0;
  bool operator==(const Rgb& o) const { return r == o.r && g == o.g && b == o.b; }
};

std::vector<ClassInfo> read_class_info_csv(const std::string& path);
std::string format_class_info_csv(const std::vector<ClassInfo>& classes);

// color<N>.csv: class (0-based),r,g,b. Returned in class order.
std::vector<Rgb> read_palette_csv(const std::string& path);
std::string format_palette_csv(const std::vector<Rgb>& palette);

// Label image (0 = unlabeled, k = class k-1) -> RGB with the palette; unlabeled and values beyond the
// palette are black.
Image colorize_label(const Image& label, const std::vector<Rgb>& palette);

// The reverse, for ground truth that was published as a coloured picture: every pixel must be black
// (unlabeled) or a palette colour. When two classes share a colour the lower class wins. Error(data)
// naming `source` and the first unknown colour otherwise.
Image decode_palette_label(const Image& rgb, const std::vector<Rgb>& palette, const std::string& source);

}  // namespace seg::data
