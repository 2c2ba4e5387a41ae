// The synthetic generator's drawing surface: a float RGB picture and its label map, painted
// back to front (a later shape covers earlier ones in both, so overlaps are occlusions).
//
// Shapes are small value types with contains(x, y) and bounds(); colours come from a "shader", a
// function of the pixel position. Pixels are sampled at their centres (x + 0.5, y + 0.5), without
// antialiasing, so the label of a pixel is exactly the shape that covers its centre.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "data/image.h"

namespace seg::data::synth {

struct Colour {
  float r = 0, g = 0, b = 0;  // 0..255
};

inline Colour mix(const Colour& a, const Colour& b, float t) {
  return {a.r + (b.r - a.r) * t, a.g + (b.g - a.g) * t, a.b + (b.b - a.b) * t};
}
inline Colour scale(const Colour& c, float k) { return {c.r * k, c.g * k, c.b * k}; }
inline Colour offset(const Colour& c, float d) { return {c.r + d, c.g + d, c.b + d}; }

// hue in degrees, saturation and value in 0..1.
Colour hsv(float hue, float saturation, float value);

struct Vec2 {
  float x = 0, y = 0;
};

// Pixel rectangle [x0, x1) x [y0, y1).
struct BBox {
  int x0 = 0, y0 = 0, x1 = 0, y1 = 0;
};

// A rotated frame: world point -> local coordinates (u along the frame's x axis, v along its y axis).
struct Frame {
  Vec2 centre;
  float cos_a = 1, sin_a = 0;
  Frame() = default;
  Frame(Vec2 c, float angle) : centre(c), cos_a(std::cos(angle)), sin_a(std::sin(angle)) {}
  Vec2 local(float x, float y) const {
    const float dx = x - centre.x, dy = y - centre.y;
    return {dx * cos_a + dy * sin_a, -dx * sin_a + dy * cos_a};
  }
  Vec2 world(float u, float v) const { return {centre.x + u * cos_a - v * sin_a, centre.y + u * sin_a + v * cos_a}; }
};

// Bounding box of a frame-aligned rectangle of half sizes (hu, hv).
BBox frame_bounds(const Frame& f, float hu, float hv);

struct Ellipse {
  Frame frame;
  float rx = 1, ry = 1;
  bool contains(float x, float y) const {
    const Vec2 p = frame.local(x, y);
    return (p.x * p.x) / (rx * rx) + (p.y * p.y) / (ry * ry) <= 1.0f;
  }
  BBox bounds() const { return frame_bounds(frame, rx, ry); }
};

struct Box {
  Frame frame;
  float hu = 1, hv = 1;  // half sizes along the frame axes
  bool contains(float x, float y) const {
    const Vec2 p = frame.local(x, y);
    return std::fabs(p.x) <= hu && std::fabs(p.y) <= hv;
  }
  BBox bounds() const { return frame_bounds(frame, hu, hv); }
};

// Any simple polygon (even-odd rule); convex or not.
struct Polygon {
  std::vector<Vec2> points;
  bool contains(float x, float y) const;
  BBox bounds() const;
  // Distance from (x, y) to the nearest edge (for borders).
  float edge_distance(float x, float y) const;
};

class Canvas {
 public:
  Canvas(int width, int height) : width_(width), height_(height), rgb_(size_t(width) * height), label_(size_t(width) * height, 0) {}

  int width() const { return width_; }
  int height() const { return height_; }

  // Paints the pixels of `shape` (centre inside) with shade(x, y) and class `label` (0 = unlabeled).
  template <class Shape, class Shader>
  void paint(const Shape& shape, uint8_t label, Shader&& shade) {
    const BBox b = clip(shape.bounds());
    for (int y = b.y0; y < b.y1; ++y)
      for (int x = b.x0; x < b.x1; ++x) {
        const float cx = x + 0.5f, cy = y + 0.5f;
        if (!shape.contains(cx, cy)) continue;
        const size_t i = size_t(y) * width_ + x;
        rgb_[i] = shade(cx, cy);
        label_[i] = label;
      }
  }

  // Paints every pixel for which region(x, y) is true (whole-image regions such as sky).
  template <class Region, class Shader>
  void paint_region(uint8_t label, Region&& region, Shader&& shade) {
    for (int y = 0; y < height_; ++y)
      for (int x = 0; x < width_; ++x) {
        const float cx = x + 0.5f, cy = y + 0.5f;
        if (!region(cx, cy)) continue;
        const size_t i = size_t(y) * width_ + x;
        rgb_[i] = shade(cx, cy);
        label_[i] = label;
      }
  }

  // Applies f(colour, x, y) -> colour to every pixel (lighting, sensor noise).
  template <class F>
  void filter(F&& f) {
    for (int y = 0; y < height_; ++y)
      for (int x = 0; x < width_; ++x) {
        Colour& c = rgb_[size_t(y) * width_ + x];
        c = f(c, x, y);
      }
  }

  Image image() const;  // rounded and clamped to uint8 RGB
  Image labels() const;  // 1 channel

 private:
  BBox clip(BBox b) const {
    return {std::max(b.x0, 0), std::max(b.y0, 0), std::min(b.x1, width_), std::min(b.y1, height_)};
  }
  int width_, height_;
  std::vector<Colour> rgb_;
  std::vector<uint8_t> label_;
};

}  // namespace seg::data::synth
