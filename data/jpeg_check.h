// A guard in front of stb_image's JPEG decoder (Debian's libstb-dev, stb_image v2.27): its Huffman
// table reader trusts the 16 code counts of a DHT segment, and a corrupt file whose counts add up
// to more than 256 makes it write past the end of its tables (found by the image fuzz target,
// docs/reliability.md; later stb versions check it). We cannot patch the system header, so every
// JPEG is walked marker by marker first, visiting at least every DHT segment stb could reach, and a
// table with more than 256 codes is refused as the corrupt file it is.
//
// The walk follows stb's own reading: before the frame header (SOF) stb skips stray bytes between
// segments, after it it reads segments back to back and scans entropy-coded data up to the next
// marker (FF 00 is a data byte, FF D0-D7 a restart, extra FF bytes are fill). Where the walk cannot
// follow (a marker stb rejects, the end of the data), stb stops decoding too, so nothing after it can
// reach the table reader.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace seg::data {

struct JpegCheck {
  std::string problem;  // empty: nothing stb would choke on (or not a JPEG at all)
  bool incomplete = false;  // `header_only` and the data ended before the frame header: read more
};

// `header_only`: stop at the frame header (what stbi_info reads); else walk the whole file.
JpegCheck check_jpeg_for_stb(const uint8_t* data, size_t size, bool header_only);

}  // namespace seg::data
