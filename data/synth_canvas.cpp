#include "data/synth_canvas.h"

#include <limits>

namespace seg::data::synth {

Colour hsv(float hue, float saturation, float value) {
  hue = std::fmod(hue, 360.0f);
  if (hue < 0) hue += 360.0f;
  const float c = value * saturation;
  const float h = hue / 60.0f;
  const float x = c * (1.0f - std::fabs(std::fmod(h, 2.0f) - 1.0f));
  float r = 0, g = 0, b = 0;
  switch (static_cast<int>(h)) {
    case 0: r = c, g = x; break;
    case 1: r = x, g = c; break;
    case 2: g = c, b = x; break;
    case 3: g = x, b = c; break;
    case 4: r = x, b = c; break;
    default: r = c, b = x; break;
  }
  const float m = value - c;
  return {255.0f * (r + m), 255.0f * (g + m), 255.0f * (b + m)};
}

BBox frame_bounds(const Frame& f, float hu, float hv) {
  const float ex = std::fabs(hu * f.cos_a) + std::fabs(hv * f.sin_a);
  const float ey = std::fabs(hu * f.sin_a) + std::fabs(hv * f.cos_a);
  return {static_cast<int>(std::floor(f.centre.x - ex)), static_cast<int>(std::floor(f.centre.y - ey)),
          static_cast<int>(std::ceil(f.centre.x + ex)) + 1, static_cast<int>(std::ceil(f.centre.y + ey)) + 1};
}

bool Polygon::contains(float x, float y) const {
  bool inside = false;
  for (size_t i = 0, j = points.size() - 1; i < points.size(); j = i++) {
    const Vec2& a = points[i];
    const Vec2& b = points[j];
    if ((a.y > y) != (b.y > y) && x < (b.x - a.x) * (y - a.y) / (b.y - a.y) + a.x) inside = !inside;
  }
  return inside;
}

BBox Polygon::bounds() const {
  float x0 = std::numeric_limits<float>::max(), y0 = x0, x1 = -x0, y1 = -x0;
  for (const Vec2& p : points) {
    x0 = std::min(x0, p.x), y0 = std::min(y0, p.y);
    x1 = std::max(x1, p.x), y1 = std::max(y1, p.y);
  }
  return {static_cast<int>(std::floor(x0)), static_cast<int>(std::floor(y0)), static_cast<int>(std::ceil(x1)) + 1,
          static_cast<int>(std::ceil(y1)) + 1};
}

float Polygon::edge_distance(float x, float y) const {
  float best = std::numeric_limits<float>::max();
  for (size_t i = 0, j = points.size() - 1; i < points.size(); j = i++) {
    const Vec2& a = points[j];
    const Vec2& b = points[i];
    const float ex = b.x - a.x, ey = b.y - a.y;
    const float len2 = ex * ex + ey * ey;
    float t = len2 > 0 ? ((x - a.x) * ex + (y - a.y) * ey) / len2 : 0.0f;
    t = std::clamp(t, 0.0f, 1.0f);
    const float dx = a.x + t * ex - x, dy = a.y + t * ey - y;
    best = std::min(best, dx * dx + dy * dy);
  }
  return std::sqrt(best);
}

Image Canvas::image() const {
  Image out(width_, height_, 3);
  auto to_byte = [](float v) { return static_cast<uint8_t>(std::clamp(v + 0.5f, 0.0f, 255.0f)); };
  for (size_t i = 0; i < rgb_.size(); ++i) {
    out.pixels[3 * i] = to_byte(rgb_[i].r);
    out.pixels[3 * i + 1] = to_byte(rgb_[i].g);
    out.pixels[3 * i + 2] = to_byte(rgb_[i].b);
  }
  return out;
}

Image Canvas::labels() const {
  Image out(width_, height_, 1);
  out.pixels = label_;
  return out;
}

}  // namespace seg::data::synth
