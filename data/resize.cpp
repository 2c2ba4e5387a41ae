#include "data/resize.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"

namespace seg::data {

namespace {

// Pillow keeps 8-bit resampling weights in fixed point with 22 fractional bits: 32 bits minus 8 for
// the pixel value minus 2 spare bits for filters with negative lobes (not bilinear, but the format
// is shared).
constexpr int kPrecisionBits = 22;

// The taps of one 1-D resampling pass: output pixel i reads `count[i]` source pixels starting at
// `first[i]`, with fixed-point weights weights[i * ksize + k].
struct Taps {
  int ksize = 0;
  std::vector<int> first;
  std::vector<int> count;
  std::vector<int32_t> weights;
};

double triangle(double x) {
  x = std::fabs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

// Pillow's precompute_coeffs() for the bilinear filter (support 1) over the whole source range,
// followed by its conversion of the weights to fixed point.
Taps bilinear_taps(int in_size, int out_size) {
  // Pillow passes the box edges as floats; (in1 - in0) is a float subtraction widened to double.
  const double scale = static_cast<double>(static_cast<float>(in_size) - 0.0f) / out_size;
  const double filter_scale = std::max(scale, 1.0);  // widen the triangle only when shrinking
  const double support = 1.0 * filter_scale;
  Taps taps;
  taps.ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  taps.first.resize(out_size);
  taps.count.resize(out_size);
  taps.weights.assign(static_cast<size_t>(out_size) * taps.ksize, 0);
  const double inverse_filter_scale = 1.0 / filter_scale;  // Pillow multiplies by the reciprocal
  std::vector<double> w(taps.ksize);
  for (int i = 0; i < out_size; ++i) {
    const double center = (i + 0.5) * scale;
    // Source window [lo, hi): the pixels whose centres lie within the support, rounded as Pillow
    // does (a cast truncates toward zero, so slightly negative values become 0).
    const int lo = std::max(static_cast<int>(center - support + 0.5), 0);
    const int hi = std::min(static_cast<int>(center + support + 0.5), in_size);
    const int n = hi - lo;
    double sum = 0.0;
    for (int k = 0; k < n; ++k) {
      // Distance from the output centre to source pixel centre (lo + k + 0.5), in filter units.
      w[k] = triangle((k + lo - center + 0.5) * inverse_filter_scale);
      sum += w[k];
    }
    for (int k = 0; k < n; ++k) {
      const double normalised = sum != 0.0 ? w[k] / sum : w[k];
      // Round half away from zero into fixed point (weights are never negative for bilinear).
      taps.weights[static_cast<size_t>(i) * taps.ksize + k] =
          static_cast<int32_t>(0.5 + normalised * (1 << kPrecisionBits));
    }
    taps.first[i] = lo;
    taps.count[i] = n;
  }
  return taps;
}

// Fixed-point accumulator -> uint8 with clamping (Pillow's clip8).
inline uint8_t clip8(int32_t acc) {
  const int32_t v = acc >> kPrecisionBits;
  return static_cast<uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v));
}

constexpr int32_t kHalf = 1 << (kPrecisionBits - 1);  // rounds to nearest when shifted away

// Horizontal pass over source rows [row0, row0 + out.height): out.width comes from the taps.
template <int C>
void horizontal_pass(const Image& src, int row0, const Taps& taps, Image& out) {
  for (int y = 0; y < out.height; ++y) {
    const uint8_t* in = src.row(row0 + y);
    uint8_t* o = out.row(y);
    for (int x = 0; x < out.width; ++x) {
      const int32_t* k = &taps.weights[static_cast<size_t>(x) * taps.ksize];
      const uint8_t* p = in + static_cast<size_t>(taps.first[x]) * C;
      int32_t acc[C];
      for (int c = 0; c < C; ++c) acc[c] = kHalf;
      for (int t = 0; t < taps.count[x]; ++t)
        for (int c = 0; c < C; ++c) acc[c] += p[t * C + c] * k[t];
      for (int c = 0; c < C; ++c) o[x * C + c] = clip8(acc[c]);
    }
  }
}

// Vertical pass: out row y mixes source rows first[y] .. first[y] + count[y] - 1 (relative to the
// rows src holds). Accumulating whole rows keeps the inner loop contiguous for the vectoriser.
void vertical_pass(const Image& src, const Taps& taps, int first_shift, Image& out) {
  const size_t n = out.row_bytes();
  std::vector<int32_t> acc(n);
  for (int y = 0; y < out.height; ++y) {
    std::fill(acc.begin(), acc.end(), kHalf);
    const int32_t* k = &taps.weights[static_cast<size_t>(y) * taps.ksize];
    for (int t = 0; t < taps.count[y]; ++t) {
      const uint8_t* in = src.row(taps.first[y] - first_shift + t);
      const int32_t w = k[t];
      for (size_t i = 0; i < n; ++i) acc[i] += in[i] * w;
    }
    uint8_t* o = out.row(y);
    for (size_t i = 0; i < n; ++i) o[i] = clip8(acc[i]);
  }
}

void horizontal_any(const Image& src, int row0, const Taps& taps, Image& out) {
  switch (src.channels) {
    case 1: horizontal_pass<1>(src, row0, taps, out); break;
    case 3: horizontal_pass<3>(src, row0, taps, out); break;
    case 4: horizontal_pass<4>(src, row0, taps, out); break;
    default: SEG_FAIL(runtime, "resize_bilinear supports 1, 3 or 4 channels, not ", src.channels);
  }
}

void check_sizes(const Image& src, int out_width, int out_height, const char* op) {
  SEG_CHECK(out_width > 0 && out_height > 0, runtime, op, ": output size must be positive, got ", out_width,
            "x", out_height);
  SEG_CHECK(src.width > 0 && src.height > 0, runtime, op, ": empty source image");
}

}  // namespace

Image resize_bilinear(const Image& src, int out_width, int out_height) {
  check_sizes(src, out_width, out_height, "resize_bilinear");
  const bool need_horizontal = out_width != src.width;
  const bool need_vertical = out_height != src.height;
  if (!need_horizontal && !need_vertical) return src;

  const Taps vertical = bilinear_taps(src.height, out_height);
  if (!need_horizontal) {
    Image out(out_width, out_height, src.channels);
    vertical_pass(src, vertical, 0, out);
    return out;
  }
  // Horizontal first, only over the source rows the vertical pass will read.
  const int row_first = vertical.first.front();
  const int row_last = vertical.first.back() + vertical.count.back();
  const Taps horizontal = bilinear_taps(src.width, out_width);
  Image temp(out_width, row_last - row_first, src.channels);
  horizontal_any(src, row_first, horizontal, temp);
  if (!need_vertical) return temp;
  Image out(out_width, out_height, src.channels);
  vertical_pass(temp, vertical, row_first, out);
  return out;
}

Image resize_nearest(const Image& src, int out_width, int out_height) {
  check_sizes(src, out_width, out_height, "resize_nearest");
  if (out_width == src.width && out_height == src.height) return src;
  // Pillow maps output pixel x to source coordinate a * (x + 0.5), accumulating x0 + a*0.5, + a, ...
  // in double. Accumulating (rather than multiplying) matters for exactness at boundaries.
  const double ax = static_cast<double>(static_cast<float>(src.width)) / out_width;
  const double ay = static_cast<double>(static_cast<float>(src.height)) / out_height;
  auto coord = [](double v) { return v < 0.0 ? -1 : static_cast<int>(v); };
  std::vector<int> source_x(out_width, -1);
  double xo = ax * 0.5;
  for (int x = 0; x < out_width; ++x, xo += ax) {
    const int xi = coord(xo);
    if (xi >= 0 && xi < src.width) source_x[x] = xi;
  }
  const int c = src.channels;
  Image out(out_width, out_height, c);  // pixels outside the source (rounding only) stay 0, as in Pillow
  double yo = ay * 0.5;
  for (int y = 0; y < out_height; ++y, yo += ay) {
    const int yi = coord(yo);
    if (yi < 0 || yi >= src.height) continue;
    const uint8_t* in = src.row(yi);
    uint8_t* o = out.row(y);
    for (int x = 0; x < out_width; ++x) {
      if (source_x[x] < 0) continue;
      for (int k = 0; k < c; ++k) o[x * c + k] = in[source_x[x] * c + k];
    }
  }
  return out;
}

}  // namespace seg::data
