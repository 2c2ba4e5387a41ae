// The synthetic scene renderer: outdoor-like scenes with 10 classes that a segmentation network can
// only tell apart by shape, texture and context, because colours are drawn from overlapping
// distributions (a grey sky, a grey road and a grey building; a green ball on green grass).
//
//  label  class     kind   how it looks
//    1    sky       stuff  top of the image; smooth vertical gradient with soft clouds
//    2    ground    stuff  bottom of the image; grainy, speckled noise
//    3    road      stuff  perspective trapezoid on the ground; smooth asphalt, dashed lane marks
//    4    building  stuff  rectangles standing on the horizon; flat wall with a regular window grid
//    5    tree      thing  round lumpy canopy on a trunk; blotchy leaf texture
//    6    ball      thing  ellipse; smooth 3-D shading with a highlight
//    7    box       thing  rotated rectangle; parallel two-colour stripes
//    8    sign      thing  triangle (up or down); polka dots
//    9    ring      thing  elliptical annulus (the hole shows what is behind); radial tread like a tyre
//   10    kite      thing  rhombus; diagonal checkerboard
//    0    unlabeled        "clutter" blobs with random textures, and nothing else
//
// Things appear at many scales (20%..60% of the short side) and aspect ratios (1:2..2:1), overlap
// and occlude each other, and may be cut by the image border. Everything is drawn from a Philox
// stream (seed, data_synth, stream), so a scene is a pure function of (seed, stream, size).
#pragma once

#include <cstdint>
#include <vector>

#include "data/class_info.h"
#include "data/image.h"

namespace seg::data::synth {

struct SynthClass {
  const char* name;   // ';'-separated synonyms, like ADE's object150_info.csv
  bool stuff;
  Rgb colour;         // visualization palette
  const char* looks;  // one line for the docs and --help
};

// All classes in label order (label value = position + 1).
const std::vector<SynthClass>& synth_classes();
inline int synth_num_class() { return static_cast<int>(synth_classes().size()); }

struct Scene {
  Image image;  // RGB
  Image label;  // 1 channel: 0 = unlabeled, 1..synth_num_class()
};

// The first num_class classes (kMinSynthClasses..10): fewer classes means fewer object kinds
// (ball, box, sign, ring, kite are dropped from the end), for an easier task.
constexpr int kMinSynthClasses = 6;
Scene render_scene(uint64_t seed, uint64_t stream, int width, int height, int num_class = 10);

}  // namespace seg::data::synth
