// Procedural texture building blocks for the synthetic generator: a position hash (white noise)
// and smooth value noise. They are pure functions of (position, seed), so every pixel can be shaded
// independently and the generator stays deterministic in any thread.
#pragma once

#include <cstdint>

namespace seg::data::synth {

// A well-mixed 32-bit hash of a lattice point and a seed.
uint32_t hash_point(int32_t x, int32_t y, uint32_t seed);

// White noise in [0, 1) per integer pixel.
inline float white_noise(int32_t x, int32_t y, uint32_t seed) {
  return static_cast<float>(hash_point(x, y, seed) >> 8) * (1.0f / 16777216.0f);
}

// Smooth noise in [0, 1): random values on a lattice of spacing `cell` pixels, blended with a
// smoothstep between lattice points. Features are about `cell` pixels across.
float value_noise(float x, float y, float cell, uint32_t seed);

// Sum of `octaves` value noises, each half the cell size and half the weight of the previous,
// normalised to [0, 1).
float fractal_noise(float x, float y, float cell, int octaves, uint32_t seed);

}  // namespace seg::data::synth
