// A guard in front of stb_image's BMP decoder (Debian's libstb-dev, stb_image v2.27): stb reads a
// BMP's pixel rows with a byte reader that returns 0 past the end of the data, so a 70-byte file
// whose header claims 11584 x 11584 pixels decodes, without an error, to 134 megapixels of black
// (12 s per file in the fuzz build: a libFuzzer timeout waiting to happen, and in training a silently
// blank photo). Pillow refuses such a file ("image file is truncated"); so do we, from the header,
// before stb allocates anything.
//
// A BMP is a 14-byte file header ("BM", file size, reserved, bfOffBits: where the pixel rows start)
// then an info header whose first 4 bytes are its size: 12 (OS/2: 16-bit width and height) or 40 and
// more (32-bit signed width and height; a negative height stores the rows top down), then the bits
// per pixel. Each row is padded to a multiple of 4 bytes: ((width * bpp + 31) / 32) * 4.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace seg::data {

// What is wrong when `data` is a BMP that stb reads as uncompressed rows (compression 0, 3, or any
// value stb does not refuse) whose pixel rows run past the end of the file, or "" when they fit (or
// `data` is not a BMP, or its header is one stb refuses anyway: RLE or embedded JPEG/PNG, a width
// of 0 or less).
std::string bmp_pixels_past_end(const uint8_t* data, size_t size);

}  // namespace seg::data
