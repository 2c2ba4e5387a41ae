#include "data/png_check.h"

#include <cstring>

namespace seg::data {

namespace {
constexpr uint8_t kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
constexpr size_t kChunkOverhead = 12;  // length + type + CRC

uint32_t big_endian32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}
}  // namespace

bool drop_empty_png_idat(const uint8_t* data, size_t size, std::vector<uint8_t>& out) {
  if (size < sizeof kSignature || std::memcmp(data, kSignature, sizeof kSignature) != 0) return false;
  // Offsets of the chunks to drop; each is kChunkOverhead bytes long (no data).
  std::vector<size_t> empty;
  size_t pos = sizeof kSignature;
  while (size - pos >= kChunkOverhead) {
    const uint64_t length = big_endian32(data + pos);
    if (length > size - pos - kChunkOverhead) break;
    if (length == 0 && std::memcmp(data + pos + 4, "IDAT", 4) == 0) empty.push_back(pos);
    pos += kChunkOverhead + static_cast<size_t>(length);
  }
  // The file may end inside an empty IDAT chunk's CRC (a truncated file): stb reads the length and
  // the type, and copies the zero bytes to null just the same. Dropping that tail leaves a file stb
  // refuses cleanly (no image data).
  const bool truncated_empty_tail = size - pos >= 8 && size - pos < kChunkOverhead && big_endian32(data + pos) == 0 &&
                                    std::memcmp(data + pos + 4, "IDAT", 4) == 0;
  if (empty.empty() && !truncated_empty_tail) return false;
  out.clear();
  out.reserve(size - empty.size() * kChunkOverhead);
  size_t from = 0;
  for (size_t at : empty) {
    out.insert(out.end(), data + from, data + at);
    from = at + kChunkOverhead;
  }
  out.insert(out.end(), data + from, data + (truncated_empty_tail ? pos : size));
  return true;
}

std::string png_idat_past_end(const uint8_t* data, size_t size) {
  if (size < sizeof kSignature || std::memcmp(data, kSignature, sizeof kSignature) != 0) return "";
  size_t pos = sizeof kSignature;
  while (size - pos >= kChunkOverhead) {
    const uint64_t length = big_endian32(data + pos);
    if (length > size - pos - kChunkOverhead) {
      if (std::memcmp(data + pos + 4, "IDAT", 4) != 0) return "";
      return "its IDAT chunk at byte " + std::to_string(pos) + " declares " + std::to_string(length) +
             " bytes, but only " + std::to_string(size - pos - kChunkOverhead) + " follow it";
    }
    pos += kChunkOverhead + static_cast<size_t>(length);
  }
  return "";
}

}  // namespace seg::data
