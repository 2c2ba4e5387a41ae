// A guard in front of stb_image's PNG decoder (Debian's libstb-dev, stb_image v2.27): when a PNG's
// first IDAT chunk is empty, stb copies its zero bytes into a buffer it has not allocated yet,
// `memcpy(NULL, p, 0)` (stbi__getn, found by the image fuzz target, docs/reliability.md). That is
// undefined behaviour even for zero bytes: the compiler may assume the pointer is not null. We cannot
// patch the system header, so an empty IDAT chunk (legal, and carrying no data) is dropped before
// stb sees the file; the decoded image is the same.
//
// A PNG is the 8-byte signature, then chunks of: length (4 bytes, big endian), type (4), data
// (length bytes), CRC (4). Dropping a whole chunk leaves every other chunk's CRC valid.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace seg::data {

// When `data` is a PNG holding one or more zero-length IDAT chunks, writes the file without them to
// `out` and returns true; otherwise (not a PNG, or nothing to drop) returns false and leaves `out`
// alone. A chunk whose length runs past the end stops the walk: stb refuses the file there anyway.
// A file that ends inside an empty IDAT chunk (length and type present, CRC cut off) loses that
// tail too (the second fuzz finding of this kind).
bool drop_empty_png_idat(const uint8_t* data, size_t size, std::vector<uint8_t>& out);

// stb_image 2.27 grows its compressed-data buffer to an IDAT chunk's declared length before reading
// the chunk, so a 611-byte PNG whose IDAT claims about a gigabyte made it allocate 2 GB (the image
// fuzz target's out-of-memory of 2026-12-02; again on 2026-12-03 with the chunk's CRC cut off too).
// Returns what is wrong with the first IDAT chunk whose data or CRC runs past the end of the file
// (its length and type present), or "" when there is none (or `data` is not a PNG). The walk stops,
// returning "", at the first other chunk that runs past the end: stb skips those without allocating.
std::string png_idat_past_end(const uint8_t* data, size_t size);

}  // namespace seg::data
