#include "data/jpeg_check.h"

#include "core/error.h"

namespace seg::data {

namespace {

class Walker {
 public:
  Walker(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  bool at_end() const { return pos_ >= n_; }
  // stb's stbi__get8 returns 0 past the end of its buffer; so do we.
  int get8() { return pos_ < n_ ? p_[pos_++] : (++pos_, 0); }
  int get16() {
    const int hi = get8();
    return (hi << 8) | get8();
  }
  void skip(size_t k) { pos_ += k; }
  size_t pos() const { return pos_; }

  // A DHT segment as stb_image reads it (stbi__process_marker, case 0xC4): returns the problem, if any.
  std::string dht() {
    int left = get16() - 2;
    while (left > 0 && !at_end()) {
      const int q = get8();
      if ((q >> 4) > 1 || (q & 15) > 3) return "";  // stb rejects the segment itself: it stops there
      int n = 0;
      for (int i = 0; i < 16; ++i) n += get8();
      if (n > 256) return str("corrupt JPEG: a Huffman table declares ", n, " codes (at most 256)");
      skip(static_cast<size_t>(n));
      left -= 17 + n;
    }
    return "";
  }

 private:
  const uint8_t* p_;
  size_t n_;
  size_t pos_ = 0;
};

bool is_sof(int m) { return m == 0xC0 || m == 0xC1 || m == 0xC2; }  // the frames stb decodes
// Segments stb reads with their length before or between scans (DRI, DQT, APPn, COM, SOF, SOS).
bool has_length(int m) { return m == 0xDD || m == 0xDB || (m >= 0xE0 && m <= 0xEF) || m == 0xFE || is_sof(m) || m == 0xDA; }

}  // namespace

JpegCheck check_jpeg_for_stb(const uint8_t* data, size_t size, bool header_only) {
  JpegCheck out;
  // stb reads the start-of-image marker as any other: FF, any number of FF fill bytes, D8. A file
  // starting FF FF D8 is a JPEG to it, so it is one here too.
  Walker w(data, size);
  if (w.get8() != 0xFF) return out;  // not a JPEG: stb's other decoders
  int soi = 0xFF;
  while (soi == 0xFF && !w.at_end()) soi = w.get8();
  if (soi == 0xFF) {  // only fill bytes so far
    out.incomplete = header_only;
    return out;
  }
  if (soi != 0xD8) return out;
  // Before the frame header: stb skips stray bytes up to the next FF.
  for (;;) {
    while (!w.at_end() && data[w.pos()] != 0xFF) w.skip(1);
    if (w.at_end()) {
      out.incomplete = header_only;
      return out;
    }
    int m = 0xFF;
    while (m == 0xFF && !w.at_end()) m = w.get8();
    if (w.at_end() && m == 0xFF) {
      out.incomplete = header_only;
      return out;
    }
    if (m == 0xC4) {
      out.problem = w.dht();
      if (!out.problem.empty()) return out;
    } else if (is_sof(m)) {
      if (header_only) return out;
      w.skip(static_cast<size_t>(std::max(0, w.get16() - 2)));
      break;
    } else if (has_length(m)) {
      w.skip(static_cast<size_t>(std::max(0, w.get16() - 2)));
    } else {
      return out;  // stb rejects any other marker here
    }
  }
  // After it: segments and entropy-coded data; every marker stb could stop at is visited.
  while (!w.at_end()) {
    if (w.get8() != 0xFF) continue;
    int m = 0xFF;
    while (m == 0xFF && !w.at_end()) m = w.get8();
    if (m == 0x00 || (m >= 0xD0 && m <= 0xD7)) continue;  // a data byte, a restart marker
    if (m == 0xD9) return out;                             // end of image
    if (m == 0xC4) {
      out.problem = w.dht();
      if (!out.problem.empty()) return out;
    } else if (m == 0xDC) {
      w.skip(4);  // DNL
    } else if (has_length(m)) {
      w.skip(static_cast<size_t>(std::max(0, w.get16() - 2)));
    }
    // other markers: stb stops decoding there; walking on only visits more than it would
  }
  return out;
}

}  // namespace seg::data
