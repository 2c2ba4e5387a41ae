#include "data/bmp_check.h"

#include <cstdlib>

namespace seg::data {

namespace {
uint32_t little_endian16(const uint8_t* p) { return uint32_t{p[0]} | (uint32_t{p[1]} << 8); }
uint32_t little_endian32(const uint8_t* p) {
  return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}
}  // namespace

std::string bmp_pixels_past_end(const uint8_t* data, size_t size) {
  constexpr size_t kFileHeader = 14;
  if (size < kFileHeader + 12 || data[0] != 'B' || data[1] != 'M') return "";
  const uint64_t offset = little_endian32(data + 10);
  const uint32_t info_size = little_endian32(data + 14);
  int64_t width = 0, height = 0;
  uint32_t bpp = 0, compression = 0;
  if (info_size == 12) {
    width = little_endian16(data + 18);
    height = little_endian16(data + 20);
    bpp = little_endian16(data + 24);
  } else {
    if (size < kFileHeader + 20) return "";
    width = static_cast<int32_t>(little_endian32(data + 18));
    height = static_cast<int32_t>(little_endian32(data + 22));
    bpp = little_endian16(data + 28);
    compression = little_endian32(data + 30);
  }
  // 0: none; 3: bit fields (masks, uncompressed rows). stb refuses RLE and everything else.
  if (compression != 0 && compression != 3) return "";
  if (width <= 0 || !(bpp == 1 || bpp == 4 || bpp == 8 || bpp == 16 || bpp == 24 || bpp == 32)) return "";
  const int64_t rows = std::llabs(height);  // int32 in int64: no overflow
  const int64_t row_bytes = (width * bpp + 31) / 32 * 4;
  const uint64_t end = offset + static_cast<uint64_t>(row_bytes) * static_cast<uint64_t>(rows);
  if (end <= size) return "";
  return "its " + std::to_string(width) + "x" + std::to_string(rows) + " pixels at " + std::to_string(bpp) +
         " bits need " + std::to_string(rows) + " rows of " + std::to_string(row_bytes) + " bytes from byte " +
         std::to_string(offset) + ", up to byte " + std::to_string(end) + ", but the file has " + std::to_string(size) +
         " bytes";
}

}  // namespace seg::data
