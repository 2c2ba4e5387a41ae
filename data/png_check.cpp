#include "data/png_check.h"

#include <cstring>

namespace seg::data {

namespace {
constexpr uint8_t kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
constexpr size_t kChunkOverhead = 12;  // length + type + CRC

uint32_t big_endian32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

// Visits every chunk whose data and CRC lie inside the file, visit(offset, length), and returns the
// offset where the walk stopped: the end of the file, a chunk that runs past it, or a chunk header
// cut short. `data` starts with the PNG signature.
template <class Visit>
size_t walk_chunks(const uint8_t* data, size_t size, Visit visit) {
  size_t pos = sizeof kSignature;
  while (size - pos >= kChunkOverhead) {
    const uint64_t length = big_endian32(data + pos);
    if (length > size - pos - kChunkOverhead) break;
    visit(pos, length);
    pos += kChunkOverhead + static_cast<size_t>(length);
  }
  return pos;
}

bool is_png(const uint8_t* data, size_t size) {
  return size >= sizeof kSignature && std::memcmp(data, kSignature, sizeof kSignature) == 0;
}
}  // namespace

bool drop_empty_png_idat(const uint8_t* data, size_t size, std::vector<uint8_t>& out) {
  if (!is_png(data, size)) return false;
  // Offsets of the chunks to drop; each is kChunkOverhead bytes long (no data).
  std::vector<size_t> empty;
  const size_t pos = walk_chunks(data, size, [&](size_t at, uint64_t length) {
    if (length == 0 && std::memcmp(data + at + 4, "IDAT", 4) == 0) empty.push_back(at);
  });
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
  if (!is_png(data, size)) return "";
  const size_t pos = walk_chunks(data, size, [](size_t, uint64_t) {});
  // The walk stopped at the end of the file or at a chunk that does not fit. stb needs only that
  // chunk's length and type (8 bytes) to size its buffer, so a chunk cut anywhere after its type
  // counts, even when fewer than 12 bytes are left (the fuzz finding of 2026-12-03: 11 bytes left,
  // a declared length of 1.2 GB, a 2 GB realloc).
  constexpr size_t kLengthAndType = 8;
  if (size - pos < kLengthAndType || std::memcmp(data + pos + 4, "IDAT", 4) != 0) return "";
  return "its IDAT chunk at byte " + std::to_string(pos) + " declares " + std::to_string(big_endian32(data + pos)) +
         " bytes, but the file ends " + std::to_string(size - pos - kLengthAndType) + " bytes after the chunk's type";
}

}  // namespace seg::data
