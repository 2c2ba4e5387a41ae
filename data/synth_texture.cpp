#include "data/synth_texture.h"

#include <cmath>

namespace seg::data::synth {

uint32_t hash_point(int32_t x, int32_t y, uint32_t seed) {
  // Combine with distinct odd multipliers, then an avalanche finaliser (xor-shift-multiply rounds)
  // so neighbouring points get unrelated values.
  uint32_t h = static_cast<uint32_t>(x) * 0x8da6b343u ^ static_cast<uint32_t>(y) * 0xd8163841u ^ seed * 0xcb1ab31fu;
  h ^= h >> 16;
  h *= 0x7feb352du;
  h ^= h >> 15;
  h *= 0x846ca68bu;
  h ^= h >> 16;
  return h;
}

float value_noise(float x, float y, float cell, uint32_t seed) {
  const float fx = x / cell, fy = y / cell;
  const float gx = std::floor(fx), gy = std::floor(fy);
  const int32_t ix = static_cast<int32_t>(gx), iy = static_cast<int32_t>(gy);
  float tx = fx - gx, ty = fy - gy;
  tx = tx * tx * (3.0f - 2.0f * tx);  // smoothstep: no visible lattice creases
  ty = ty * ty * (3.0f - 2.0f * ty);
  const float v00 = white_noise(ix, iy, seed), v10 = white_noise(ix + 1, iy, seed);
  const float v01 = white_noise(ix, iy + 1, seed), v11 = white_noise(ix + 1, iy + 1, seed);
  const float top = v00 + (v10 - v00) * tx;
  const float bottom = v01 + (v11 - v01) * tx;
  return top + (bottom - top) * ty;
}

float fractal_noise(float x, float y, float cell, int octaves, uint32_t seed) {
  float sum = 0.0f, weight = 1.0f, total = 0.0f;
  for (int o = 0; o < octaves; ++o) {
    sum += weight * value_noise(x, y, cell, seed + 0x9e3779b9u * static_cast<uint32_t>(o));
    total += weight;
    weight *= 0.5f;
    cell *= 0.5f;
  }
  return sum / total;
}

}  // namespace seg::data::synth
