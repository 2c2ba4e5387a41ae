#include "data/class_info.h"

#include <charconv>
#include <cstdio>
#include <map>
#include <sstream>

#include "core/error.h"
#include "data/file_io.h"

namespace seg::data {

namespace {

// The CSV files here are simple: no quoting, no commas inside fields (synonyms use ';').
std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> fields;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, ',')) {
    if (!field.empty() && field.back() == '\r') field.pop_back();
    fields.push_back(field);
  }
  if (!line.empty() && line.back() == ',') fields.emplace_back();
  return fields;
}

// Rows of a CSV file with the expected header; calls row(fields, line number) for each data row.
template <class RowFn>
void for_each_row(const std::string& path, const char* what, const std::vector<std::string>& header, RowFn row) {
  std::istringstream in(read_file_text(path, what));
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty() || line == "\r") continue;
    std::vector<std::string> fields = split_csv_line(line);
    if (line_no == 1) {
      if (fields != header) {
        std::string expected;
        for (const auto& h : header) expected += (expected.empty() ? "" : ",") + h;
        throw Error(ErrorKind::data, str(what, " file has an unexpected header")).file(path, 1).hint(
            "the first line must be: " + expected);
      }
      continue;
    }
    if (fields.size() != header.size())
      throw Error(ErrorKind::data, str(what, " row has ", fields.size(), " fields, expected ", header.size()))
          .file(path, line_no);
    row(fields, line_no);
  }
}

template <class T>
T parse_number(const std::string& text, const std::string& path, int line, const char* column) {
  T value{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size())
    throw Error(ErrorKind::data, str("column ", column, ": '", text, "' is not a number")).file(path, line);
  return value;
}

double parse_double(const std::string& text, const std::string& path, int line, const char* column) {
  try {
    size_t used = 0;
    const double v = std::stod(text, &used);
    if (used == text.size()) return v;
  } catch (const std::exception&) {
  }
  throw Error(ErrorKind::data, str("column ", column, ": '", text, "' is not a number")).file(path, line);
}

}  // namespace

std::vector<ClassInfo> read_class_info_csv(const std::string& path) {
  std::vector<ClassInfo> classes;
  for_each_row(path, "class info", {"Idx", "Ratio", "Train", "Val", "Stuff", "Name"},
               [&](const std::vector<std::string>& f, int line) {
                 ClassInfo c;
                 c.idx = parse_number<int>(f[0], path, line, "Idx");
                 c.ratio = parse_double(f[1], path, line, "Ratio");
                 c.train = parse_number<int64_t>(f[2], path, line, "Train");
                 c.val = parse_number<int64_t>(f[3], path, line, "Val");
                 c.stuff = parse_number<int>(f[4], path, line, "Stuff") != 0;
                 c.name = f[5];
                 if (c.idx != static_cast<int>(classes.size()) + 1)
                   throw Error(ErrorKind::data, str("class Idx ", c.idx, " out of order, expected ",
                                                    classes.size() + 1)).file(path, line);
                 classes.push_back(c);
               });
  return classes;
}

std::string format_class_info_csv(const std::vector<ClassInfo>& classes) {
  std::string out = "Idx,Ratio,Train,Val,Stuff,Name\n";
  for (const auto& c : classes) {
    char ratio[32];
    std::snprintf(ratio, sizeof ratio, "%.4f", c.ratio);
    out += str(c.idx, ",", ratio, ",", c.train, ",", c.val, ",", c.stuff ? 1 : 0, ",", c.name, "\n");
  }
  return out;
}

std::vector<Rgb> read_palette_csv(const std::string& path) {
  std::vector<Rgb> palette;
  for_each_row(path, "palette", {"class", "r", "g", "b"}, [&](const std::vector<std::string>& f, int line) {
    const int cls = parse_number<int>(f[0], path, line, "class");
    if (cls != static_cast<int>(palette.size()))
      throw Error(ErrorKind::data, str("palette class ", cls, " out of order, expected ", palette.size()))
          .file(path, line);
    Rgb c;
    const char* names[3] = {"r", "g", "b"};
    uint8_t* channels[3] = {&c.r, &c.g, &c.b};
    for (int k = 0; k < 3; ++k) {
      const int v = parse_number<int>(f[1 + k], path, line, names[k]);
      if (v < 0 || v > 255)
        throw Error(ErrorKind::data, str("colour value ", v, " outside 0..255")).file(path, line);
      *channels[k] = static_cast<uint8_t>(v);
    }
    palette.push_back(c);
  });
  return palette;
}

std::string format_palette_csv(const std::vector<Rgb>& palette) {
  std::string out = "class,r,g,b\n";
  for (size_t k = 0; k < palette.size(); ++k)
    out += str(k, ",", int(palette[k].r), ",", int(palette[k].g), ",", int(palette[k].b), "\n");
  return out;
}

Image colorize_label(const Image& label, const std::vector<Rgb>& palette) {
  SEG_CHECK(label.channels == 1, runtime, "colorize_label needs a 1-channel label image");
  Image rgb(label.width, label.height, 3);
  for (size_t i = 0; i < label.pixels.size(); ++i) {
    const int v = label.pixels[i];
    if (v == 0 || v > static_cast<int>(palette.size())) continue;
    const Rgb& c = palette[v - 1];
    rgb.pixels[3 * i] = c.r;
    rgb.pixels[3 * i + 1] = c.g;
    rgb.pixels[3 * i + 2] = c.b;
  }
  return rgb;
}

Image decode_palette_label(const Image& rgb, const std::vector<Rgb>& palette, const std::string& source) {
  SEG_CHECK(rgb.channels == 3, runtime, "decode_palette_label needs an RGB image");
  SEG_CHECK(palette.size() < 256, runtime, "a palette of ", palette.size(), " classes does not fit 8-bit labels");
  auto key = [](uint8_t r, uint8_t g, uint8_t b) { return (uint32_t(r) << 16) | (uint32_t(g) << 8) | b; };
  std::map<uint32_t, uint8_t> value_of;  // colour -> label value; emplace keeps the first (lowest) class
  for (size_t k = 0; k < palette.size(); ++k)
    value_of.emplace(key(palette[k].r, palette[k].g, palette[k].b), static_cast<uint8_t>(k + 1));
  Image label(rgb.width, rgb.height, 1);
  for (int y = 0; y < rgb.height; ++y) {
    for (int x = 0; x < rgb.width; ++x) {
      const uint8_t r = rgb.at(x, y, 0), g = rgb.at(x, y, 1), b = rgb.at(x, y, 2);
      if (r == 0 && g == 0 && b == 0) continue;  // black = unlabeled
      const auto it = value_of.find(key(r, g, b));
      if (it == value_of.end())
        throw Error(ErrorKind::data, str("colour (", int(r), ",", int(g), ",", int(b), ") at pixel (", x, ",", y,
                                         ") is not in the palette"))
            .file(source)
            .hint("the picture must use exactly the palette colours (no resizing or JPEG compression)");
      label.at(x, y) = it->second;
    }
  }
  return label;
}

}  // namespace seg::data
