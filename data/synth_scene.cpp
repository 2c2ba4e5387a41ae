#include "data/synth_scene.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "core/error.h"
#include "core/rng.h"
#include "data/synth_canvas.h"
#include "data/synth_texture.h"

namespace seg::data::synth {

namespace {

enum Label : uint8_t { unlabeled = 0, sky, ground, road, building, tree, ball, box, sign, ring, kite };

constexpr float kPi = 3.14159265358979f;

float smoothstep(float lo, float hi, float x) {
  const float t = std::clamp((x - lo) / (hi - lo), 0.0f, 1.0f);
  return t * t * (3.0f - 2.0f * t);
}

float luminance(const Colour& c) { return 0.299f * c.r + 0.587f * c.g + 0.114f * c.b; }

// Random draws for one scene, in the order the renderer asks for them.
class Dice {
 public:
  Dice(uint64_t seed, uint64_t stream) : rng_(seed, RngPurpose::data_synth, stream) {}
  float uniform(float lo, float hi) { return lo + (hi - lo) * rng_.uniform(); }
  float log_uniform(float lo, float hi) { return std::exp(uniform(std::log(lo), std::log(hi))); }
  bool chance(float p) { return rng_.uniform() < p; }
  int below(int n) { return static_cast<int>(rng_.below(static_cast<uint32_t>(n))); }
  uint32_t seed32() { return rng_.next_u32(); }
  // Any saturated colour (clutter).
  Colour any_colour() { return hsv(uniform(0, 360), uniform(0.35f, 1.0f), uniform(0.35f, 1.0f)); }
  // An object's main colour: each thing class prefers a 180-degree hue window centred on its own hue
  // (ball 0, box 72, sign 144, ring 216, kite 288), so every hue is shared by two or three classes:
  // colour is a hint, as in real scenes, never the answer.
  Colour thing_colour(int thing) {
    return hsv(72.0f * thing + uniform(-90, 90), uniform(0.35f, 1.0f), uniform(0.35f, 1.0f));
  }
  // A second colour that differs clearly in brightness from `c` (stripes, borders, checks).
  Colour contrasting(const Colour& c) {
    Colour d = hsv(uniform(0, 360), uniform(0.2f, 1.0f), uniform(0.2f, 1.0f));
    if (std::fabs(luminance(d) - luminance(c)) < 60.0f) d = luminance(c) > 128 ? scale(d, 0.35f) : offset(scale(d, 0.5f), 128);
    return d;
  }

 private:
  PhiloxStream rng_;
};

// A union of discs (tree canopies).
struct Discs {
  std::vector<Vec2> centres;
  std::vector<float> radii;
  bool contains(float x, float y) const {
    for (size_t i = 0; i < centres.size(); ++i) {
      const float dx = x - centres[i].x, dy = y - centres[i].y;
      if (dx * dx + dy * dy <= radii[i] * radii[i]) return true;
    }
    return false;
  }
  BBox bounds() const {
    BBox b{1 << 30, 1 << 30, -(1 << 30), -(1 << 30)};
    for (size_t i = 0; i < centres.size(); ++i) {
      b.x0 = std::min(b.x0, static_cast<int>(std::floor(centres[i].x - radii[i])));
      b.y0 = std::min(b.y0, static_cast<int>(std::floor(centres[i].y - radii[i])));
      b.x1 = std::max(b.x1, static_cast<int>(std::ceil(centres[i].x + radii[i])) + 1);
      b.y1 = std::max(b.y1, static_cast<int>(std::ceil(centres[i].y + radii[i])) + 1);
    }
    return b;
  }
};

// An ellipse with an elliptical hole of the same centre and orientation.
struct Annulus {
  Ellipse outer;
  float hole = 0.5f;  // inner radii / outer radii
  bool contains(float x, float y) const {
    const Vec2 p = outer.frame.local(x, y);
    const float r2 = (p.x * p.x) / (outer.rx * outer.rx) + (p.y * p.y) / (outer.ry * outer.ry);
    return r2 <= 1.0f && r2 > hole * hole;
  }
  BBox bounds() const { return outer.bounds(); }
};

class SceneRenderer {
 public:
  SceneRenderer(uint64_t seed, uint64_t stream, int width, int height, int num_class)
      : num_objects_(num_class - (ball - 1)), dice_(seed, stream), canvas_(width, height), w_(float(width)), h_(float(height)),
        s_(float(std::min(width, height))) {
    horizon_ = h_ * dice_.uniform(0.25f, 0.6f);
    tilt_ = dice_.uniform(-0.1f, 0.1f);
  }

  Scene render() {
    paint_sky();
    paint_ground();
    if (dice_.chance(0.75f))
      for (int n = 1 + dice_.below(3); n > 0; --n) paint_building();
    if (dice_.chance(0.6f)) paint_road();
    const int trees = dice_.below(4);
    for (int n = 0; n < trees; ++n) paint_tree();
    // Things and unlabeled clutter in a random interleaved order, so either may occlude the other.
    std::vector<int> layers;
    for (int n = 3 + dice_.below(4); n > 0; --n) layers.push_back(ball + dice_.below(num_objects_));
    for (int n = dice_.chance(0.6f) ? 1 + dice_.below(3) : 0; n > 0; --n) layers.push_back(unlabeled);
    for (size_t i = layers.size(); i > 1; --i) std::swap(layers[i - 1], layers[dice_.below(static_cast<int>(i))]);
    for (int layer : layers) paint_layer(layer);
    finish();
    return {canvas_.image(), canvas_.labels()};
  }

 private:
  float horizon_at(float x) const { return horizon_ + tilt_ * (x - 0.5f * w_); }
  // Texture periods are given for a 160-pixel short side and scale with the image, so stripes, checks
  // and windows keep their size relative to the objects at any --size.
  float px(float at_160) const { return at_160 * s_ / 160.0f; }

  // ---- stuff ----
  void paint_sky() {
    Colour top, bottom;
    switch (dice_.below(3)) {
      case 0: {  // clear blue
        const float hue = dice_.uniform(195, 230);
        top = hsv(hue, dice_.uniform(0.45f, 0.8f), dice_.uniform(0.55f, 0.85f));
        bottom = hsv(hue + dice_.uniform(-10, 10), dice_.uniform(0.1f, 0.35f), dice_.uniform(0.85f, 1.0f));
        break;
      }
      case 1: {  // overcast grey
        const float v = dice_.uniform(0.45f, 0.75f);
        top = hsv(dice_.uniform(0, 360), dice_.uniform(0.0f, 0.08f), v);
        bottom = hsv(dice_.uniform(0, 360), dice_.uniform(0.0f, 0.08f), std::min(1.0f, v + 0.15f));
        break;
      }
      default:  // dusk
        top = hsv(dice_.uniform(220, 260), dice_.uniform(0.3f, 0.5f), dice_.uniform(0.4f, 0.6f));
        bottom = hsv(dice_.uniform(15, 40), dice_.uniform(0.4f, 0.7f), dice_.uniform(0.85f, 1.0f));
    }
    const Colour cloud = hsv(dice_.uniform(0, 360), dice_.uniform(0.0f, 0.1f), dice_.uniform(0.85f, 1.0f));
    const float cloudiness = dice_.uniform(0.0f, 0.85f);
    const float cell = s_ * dice_.uniform(0.15f, 0.3f);
    const uint32_t seed = dice_.seed32();
    canvas_.paint_region(
        sky, [&](float x, float y) { return y < horizon_at(x); },
        [&](float x, float y) {
          const Colour base = mix(top, bottom, std::clamp(y / std::max(1.0f, horizon_at(x)), 0.0f, 1.0f));
          // clouds: horizontally stretched smooth noise, thresholded softly
          const float n = fractal_noise(x, y * 2.5f, cell, 3, seed);
          return mix(base, cloud, cloudiness * smoothstep(0.5f, 0.72f, n));
        });
  }

  void paint_ground() {
    Colour base;
    switch (dice_.below(3)) {
      case 0: base = hsv(dice_.uniform(75, 130), dice_.uniform(0.35f, 0.7f), dice_.uniform(0.3f, 0.6f)); break;
      case 1: base = hsv(dice_.uniform(20, 45), dice_.uniform(0.3f, 0.6f), dice_.uniform(0.3f, 0.55f)); break;
      default: base = hsv(dice_.uniform(0, 360), dice_.uniform(0.0f, 0.15f), dice_.uniform(0.35f, 0.6f));
    }
    const float cell = px(dice_.uniform(5, 12));
    const float grain = dice_.uniform(35, 60);
    const uint32_t seed = dice_.seed32();
    canvas_.paint_region(
        ground, [&](float x, float y) { return y >= horizon_at(x); },
        [&](float x, float y) {
          const float patches = 0.75f + 0.5f * value_noise(x, y, cell, seed);
          const float speckle = (white_noise(int(x), int(y), seed + 1) - 0.5f) * grain;
          return offset(scale(base, patches), speckle);
        });
  }

  void paint_building() {
    const float width = w_ * dice_.uniform(0.12f, 0.35f);
    const float left = dice_.uniform(-0.1f * w_, w_ - 0.5f * width);
    const float cx = left + 0.5f * width;
    const float bottom = horizon_at(cx) + h_ * dice_.uniform(0.0f, 0.04f);
    const float top = bottom - h_ * dice_.uniform(0.15f, 0.65f);
    const Box shape{Frame({cx, 0.5f * (top + bottom)}, 0.0f), 0.5f * width, 0.5f * (bottom - top)};
    const Colour wall = hsv(dice_.uniform(0, 360), dice_.uniform(0.05f, 0.35f), dice_.uniform(0.3f, 0.85f));
    const Colour glass = hsv(dice_.uniform(190, 240), dice_.uniform(0.1f, 0.4f), dice_.uniform(0.1f, 0.3f));
    const Colour lit = hsv(dice_.uniform(40, 60), dice_.uniform(0.3f, 0.6f), dice_.uniform(0.75f, 0.95f));
    const float cell_w = px(dice_.uniform(7, 13)), cell_h = px(dice_.uniform(9, 15));
    const float fill_w = dice_.uniform(0.4f, 0.7f), fill_h = dice_.uniform(0.45f, 0.7f);
    const uint32_t seed = dice_.seed32();
    canvas_.paint(shape, building, [&](float x, float y) {
      // window grid in building coordinates, anchored at the top-left corner
      const float gx = (x - left) / cell_w, gy = (y - top) / cell_h;
      const float fx = gx - std::floor(gx), fy = gy - std::floor(gy);
      const bool window = std::fabs(fx - 0.5f) < 0.5f * fill_w && std::fabs(fy - 0.5f) < 0.5f * fill_h;
      if (window) return white_noise(int(gx), int(gy), seed) < 0.2f ? lit : glass;
      return offset(wall, (white_noise(int(x), int(y), seed + 1) - 0.5f) * 10.0f);
    });
  }

  void paint_road() {
    const float vx = w_ * dice_.uniform(0.2f, 0.8f);
    const float vy = horizon_at(vx) + 1.0f;
    const float bottom_w = w_ * dice_.uniform(0.5f, 1.1f);
    const float bottom_cx = w_ * dice_.uniform(0.2f, 0.8f);
    const float top_w = bottom_w * dice_.uniform(0.03f, 0.12f);
    const float bottom_y = h_ + 1.0f;
    const Polygon shape{{{bottom_cx - 0.5f * bottom_w, bottom_y}, {bottom_cx + 0.5f * bottom_w, bottom_y},
                         {vx + 0.5f * top_w, vy}, {vx - 0.5f * top_w, vy}}};
    const Colour asphalt = hsv(dice_.uniform(0, 360), dice_.uniform(0.0f, 0.12f), dice_.uniform(0.22f, 0.5f));
    const Colour paint = dice_.chance(0.7f) ? hsv(0, 0, 0.9f) : hsv(50, 0.7f, 0.9f);
    const bool edge_lines = dice_.chance(0.5f);
    const float dash = dice_.uniform(0.6f, 1.2f);
    const uint32_t seed = dice_.seed32();
    canvas_.paint(shape, road, [&](float x, float y) {
      // depth t: 0 at the vanishing end, 1 at the bottom; lane coordinate u: -1..1 across the road
      const float t = std::clamp((y - vy) / (bottom_y - vy), 0.0f, 1.0f);
      const float centre = vx + (bottom_cx - vx) * t;
      const float half = 0.5f * (top_w + (bottom_w - top_w) * t);
      const float u = (x - centre) / half;
      const float dashes = dash / (t + 0.08f);
      const bool centre_mark = std::fabs(u) < 0.035f && dashes - std::floor(dashes) < 0.5f;
      const bool edge_mark = edge_lines && std::fabs(u) > 0.88f && std::fabs(u) < 0.93f;
      if (centre_mark || edge_mark) return paint;
      return offset(scale(asphalt, 0.93f + 0.14f * value_noise(x, y, 20.0f, seed)),
                    (white_noise(int(x), int(y), seed + 1) - 0.5f) * 10.0f);
    });
  }

  void paint_tree() {
    const float bx = dice_.uniform(0, w_);
    const float by = dice_.uniform(horizon_at(bx), h_ * 1.05f);
    const float depth = std::clamp((by - horizon_) / std::max(1.0f, h_ - horizon_), 0.3f, 1.2f);
    const float radius = s_ * dice_.uniform(0.12f, 0.25f) * (0.5f + 0.7f * depth);
    const float trunk_h = radius * dice_.uniform(0.6f, 1.2f);
    const float trunk_w = radius * dice_.uniform(0.18f, 0.3f);
    const Box trunk{Frame({bx, by - 0.5f * trunk_h}, 0.0f), 0.5f * trunk_w, 0.5f * trunk_h + 1.0f};
    Discs canopy;
    const Vec2 centre{bx, by - trunk_h - 0.6f * radius};
    for (int n = 3 + dice_.below(4); n > 0; --n) {
      const float a = dice_.uniform(0, 2 * kPi), r = radius * dice_.uniform(0.0f, 0.6f);
      canopy.centres.push_back({centre.x + r * std::cos(a), centre.y + 0.8f * r * std::sin(a)});
      canopy.radii.push_back(radius * dice_.uniform(0.45f, 0.75f));
    }
    const Colour bark = hsv(dice_.uniform(15, 35), dice_.uniform(0.3f, 0.6f), dice_.uniform(0.2f, 0.4f));
    const Colour leaves = dice_.chance(0.75f)
                              ? hsv(dice_.uniform(80, 140), dice_.uniform(0.4f, 0.8f), dice_.uniform(0.3f, 0.6f))
                              : hsv(dice_.uniform(10, 45), dice_.uniform(0.5f, 0.85f), dice_.uniform(0.4f, 0.75f));
    const float leaf = px(dice_.uniform(2.5f, 4.5f));
    const uint32_t seed = dice_.seed32();
    canvas_.paint(trunk, tree, [&](float x, float y) {
      return scale(bark, 0.7f + 0.6f * value_noise(x * 3.0f, y * 0.3f, 4.0f, seed));  // vertical bark streaks
    });
    canvas_.paint(canopy, tree, [&](float x, float y) {
      const float n = 0.7f * value_noise(x, y, leaf, seed + 1) + 0.3f * value_noise(x, y, 3.0f * leaf, seed + 2);
      return mix(scale(leaves, 0.55f), scale(leaves, 1.4f), smoothstep(0.35f, 0.65f, n));
    });
  }

  // ---- things and clutter ----
  void paint_layer(int layer) {
    const float size = s_ * dice_.log_uniform(0.2f, 0.6f);
    const float aspect = dice_.log_uniform(0.5f, 2.0f);
    const Vec2 c{dice_.uniform(0.05f, 0.95f) * w_, dice_.uniform(0.05f, 0.95f) * h_};
    const float long_half = 0.5f * size * std::sqrt(aspect), short_half = 0.5f * size / std::sqrt(aspect);
    const Colour c1 = layer == unlabeled ? dice_.any_colour() : dice_.thing_colour(layer - ball);
    const Colour c2 = dice_.contrasting(c1);
    const uint32_t seed = dice_.seed32();
    switch (layer) {
      case ball: {
        const Ellipse shape{Frame(c, dice_.uniform(0, kPi)), long_half, short_half};
        const float lx = dice_.uniform(-0.6f, 0.6f), ly = dice_.uniform(-0.6f, 0.6f);
        const float ln = std::sqrt(lx * lx + ly * ly + 0.64f);
        const float l[3] = {lx / ln, ly / ln, 0.8f / ln};
        // half vector between the light and the viewer (0, 0, 1), for the highlight
        const float hn = std::sqrt(l[0] * l[0] + l[1] * l[1] + (l[2] + 1) * (l[2] + 1));
        const float hv[3] = {l[0] / hn, l[1] / hn, (l[2] + 1) / hn};
        canvas_.paint(shape, ball, [&](float x, float y) {
          const Vec2 p = shape.frame.local(x, y);
          const float u = p.x / shape.rx, v = p.y / shape.ry;
          const float nz = std::sqrt(std::max(0.0f, 1.0f - u * u - v * v));
          const float diffuse = std::max(0.0f, u * l[0] + v * l[1] + nz * l[2]);
          const float spec = std::pow(std::max(0.0f, u * hv[0] + v * hv[1] + nz * hv[2]), 24.0f);
          return offset(scale(c1, 0.3f + 0.7f * diffuse), 150.0f * spec);
        });
        break;
      }
      case box: {
        const Box shape{Frame(c, dice_.uniform(-0.5f * kPi, 0.5f * kPi)), long_half, short_half};
        const float period = px(dice_.uniform(6, 11));
        const bool across = dice_.chance(0.5f);
        canvas_.paint(shape, box, [&](float x, float y) {
          const Vec2 p = shape.frame.local(x, y);
          const float s = (across ? p.x : p.y) / period;
          const Colour base = s - std::floor(s) < 0.5f ? c1 : c2;
          return offset(base, (white_noise(int(x), int(y), seed) - 0.5f) * 12.0f);
        });
        break;
      }
      case sign: {
        const Frame f(c, dice_.uniform(-0.25f, 0.25f) + (dice_.chance(0.3f) ? kPi : 0.0f));
        const float r = 0.75f * size, stretch = std::clamp(aspect, 0.75f, 1.33f);
        Polygon shape;
        for (float a : {-0.5f * kPi, kPi / 6, 5 * kPi / 6})
          shape.points.push_back(f.world(r * std::cos(a) * stretch, r * std::sin(a) / stretch));
        // Polka dots on a grid that turns with the sign.
        const float grid = px(dice_.uniform(8, 12)), dot = grid * dice_.uniform(0.3f, 0.4f);
        canvas_.paint(shape, sign, [&](float x, float y) {
          const Vec2 p = f.local(x, y);
          const float du = p.x - (std::floor(p.x / grid) + 0.5f) * grid;
          const float dv = p.y - (std::floor(p.y / grid) + 0.5f) * grid;
          return offset(du * du + dv * dv < dot * dot ? c2 : c1, (white_noise(int(x), int(y), seed) - 0.5f) * 8.0f);
        });
        break;
      }
      case ring: {
        const Annulus shape{Ellipse{Frame(c, dice_.uniform(0, kPi)), long_half, short_half},
                            dice_.uniform(0.3f, 0.55f)};
        const int spokes = 12 + 2 * dice_.below(7);  // radial tread, like a tyre
        canvas_.paint(shape, ring, [&](float x, float y) {
          const Vec2 p = shape.outer.frame.local(x, y);
          const float turn = (std::atan2(p.y / shape.outer.ry, p.x / shape.outer.rx) + kPi) / (2 * kPi) * spokes;
          const Colour base = turn - std::floor(turn) < 0.3f ? c2 : c1;
          return offset(base, (white_noise(int(x), int(y), seed) - 0.5f) * 10.0f);
        });
        break;
      }
      case kite: {
        const Frame f(c, dice_.uniform(-0.4f, 0.4f));
        const float a = 1.2f * long_half, b = 1.2f * short_half;
        const Polygon shape{{f.world(0, -a), f.world(b, 0), f.world(0, a), f.world(-b, 0)}};
        const float cell = px(dice_.uniform(5, 9));
        canvas_.paint(shape, kite, [&](float x, float y) {
          const Vec2 p = f.local(x, y);
          const int i = int(std::floor((p.x + p.y) / cell)), j = int(std::floor((p.x - p.y) / cell));
          return ((i + j) & 1) ? c1 : c2;
        });
        break;
      }
      default:
        paint_clutter(c, c1, c2, seed);
    }
  }

  // Unlabeled clutter: a star-shaped blob with one of three random textures.
  void paint_clutter(Vec2 c, Colour c1, Colour c2, uint32_t seed) {
    const float radius = s_ * dice_.uniform(0.06f, 0.2f);
    Polygon blob;
    const int n = 7 + dice_.below(7);
    for (int k = 0; k < n; ++k) {
      const float a = 2 * kPi * (k + dice_.uniform(-0.3f, 0.3f)) / n;
      const float r = radius * dice_.uniform(0.45f, 1.0f);
      blob.points.push_back({c.x + r * std::cos(a), c.y + r * std::sin(a)});
    }
    const int texture = dice_.below(3);
    const float cell = px(dice_.uniform(3, 10));
    canvas_.paint(blob, unlabeled, [&](float x, float y) {
      switch (texture) {
        case 0: return offset(c1, (white_noise(int(x), int(y), seed) - 0.5f) * 20.0f);
        case 1: return mix(c1, c2, value_noise(x, y, cell, seed));
        default: return mix(c1, c2, std::clamp((x - c.x) / (2 * radius) + 0.5f, 0.0f, 1.0f));
      }
    });
  }

  // Camera: uneven lighting, contrast/brightness, sensor noise.
  void finish() {
    const float gx = dice_.uniform(-0.25f, 0.25f), gy = dice_.uniform(-0.25f, 0.25f);
    const float contrast = dice_.uniform(0.85f, 1.15f), brightness = dice_.uniform(-15, 15);
    const float noise = dice_.uniform(4, 12);
    const uint32_t seed = dice_.seed32();
    canvas_.filter([&](Colour col, int x, int y) {
      const float light = 1.0f + gx * (x / w_ - 0.5f) + gy * (y / h_ - 0.5f);
      auto channel = [&](float v, uint32_t k) {
        return (v * light - 128.0f) * contrast + 128.0f + brightness +
               (white_noise(x, y, seed + k) - 0.5f) * noise;
      };
      return Colour{channel(col.r, 0), channel(col.g, 1), channel(col.b, 2)};
    });
  }

  int num_objects_;  // object classes in use: ball .. ball + num_objects_ - 1
  Dice dice_;
  Canvas canvas_;
  float w_, h_, s_;
  float horizon_ = 0, tilt_ = 0;
};

}  // namespace

const std::vector<SynthClass>& synth_classes() {
  static const std::vector<SynthClass> classes = {
      {"sky", true, {70, 130, 180}, "top of the image; smooth vertical gradient with soft clouds"},
      {"ground;grass;earth", true, {110, 150, 60}, "bottom of the image; grainy, speckled noise"},
      {"road", true, {128, 64, 128}, "perspective trapezoid on the ground; smooth asphalt, dashed lane marks"},
      {"building", true, {180, 120, 120}, "rectangles on the horizon; flat wall with a regular window grid"},
      {"tree", false, {4, 200, 3}, "round lumpy canopy on a trunk; blotchy leaf texture"},
      {"ball", false, {255, 200, 0}, "ellipse; smooth 3-D shading with a highlight"},
      {"box", false, {0, 102, 200}, "rotated rectangle; parallel two-colour stripes"},
      {"sign", false, {255, 0, 0}, "triangle, up or down; polka dots"},
      {"ring", false, {255, 0, 255}, "elliptical annulus (the hole shows the background); radial tread like a tyre"},
      {"kite", false, {0, 255, 255}, "rhombus; diagonal checkerboard"},
  };
  return classes;
}

Scene render_scene(uint64_t seed, uint64_t stream, int width, int height, int num_class) {
  SEG_CHECK(num_class >= kMinSynthClasses && num_class <= synth_num_class(), usage, "the synthetic dataset has ",
            kMinSynthClasses, "..", synth_num_class(), " classes, not ", num_class);
  return SceneRenderer(seed, stream, width, height, num_class).render();
}

}  // namespace seg::data::synth
