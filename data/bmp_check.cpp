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
  uint32_t bpp = 0;
  int32_t compression = 0;  // stb reads it as an int
  if (info_size == 12) {
    width = little_endian16(data + 18);
    height = little_endian16(data + 20);
    bpp = little_endian16(data + 24);
  } else {
    if (size < kFileHeader + 20) return "";
    width = static_cast<int32_t>(little_endian32(data + 18));
    height = static_cast<int32_t>(little_endian32(data + 22));
    bpp = little_endian16(data + 28);
    compression = static_cast<int32_t>(little_endian32(data + 30));
  }
  // stb refuses 1 and 2 (RLE) and 4 and above (JPEG, PNG, ...), and reads every other value,
  // negative ones included, as uncompressed rows (3: bit fields, masks then rows): the fuzzer's
  // second BMP timeout (2026-12-03) had compression 0xFFFFFFFF. Any bit depth is checked: one stb
  // refuses is refused either way, only with another message.
  if (compression == 1 || compression == 2 || compression >= 4) return "";
  if (width <= 0) return "";
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
