// Decoding and encoding image files: JPEG decoding with libjpeg-turbo (data/jpeg_decode.h), PNG and
// BMP decoding and all encoding with stb_image / stb_image_write.
//
// What upstream does, and what we match:
//   photos  PIL Image.open(path).convert('RGB'): any JPEG/PNG becomes 3-channel 8-bit RGB (grey is
//           replicated, alpha is dropped without compositing). stb_image does the same conversions
//           for PNG; JPEGs decode through Pillow's own library and settings, to Pillow's pixels.
//   labels  PIL Image.open(path) asserted to be mode "L": an 8-bit single-channel image whose values
//           are class indices (0 = unlabeled). A palette or RGB PNG is rejected, never converted,
//           because converting colours to indices would silently produce garbage classes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/image.h"

namespace seg::data {

// Photo file -> RGB image. Error(data) naming the file when it is missing or cannot be decoded.
Image load_image_rgb(const std::string& path);
// Label file -> 1-channel image of class indices. Error(data) naming the file when it is missing,
// cannot be decoded, or is not 8-bit single-channel.
Image load_label(const std::string& path);

// The same from bytes already in memory (`path` only names the source in error messages).
Image decode_image_rgb(const std::vector<uint8_t>& bytes, const std::string& path);
Image decode_label(const std::vector<uint8_t>& bytes, const std::string& path);

// What an image file's header says, read without decoding the pixels (a few hundred bytes for a
// PNG, the markers up to the first scan for a JPEG): cheap enough to check a whole dataset list
// before training. Error(data) with load_image_rgb / load_label's messages when the file is missing
// or its header cannot be parsed (`what` is "image" or "label").
struct ImageHeader {
  int width = 0, height = 0;
  int channels = 0;          // in the file: 1 grey, 2 grey+alpha, 3 RGB or palette, 4 RGBA
  bool sixteen_bit = false;  // 16 bits per channel (PNG only)
};
ImageHeader read_image_header(const std::string& path, const char* what);
// The label rule of load_label (8-bit single-channel), from a header: Error(data) naming `path`.
void check_label_format(const ImageHeader& header, const std::string& path);

// Encoders (1 or 3 channels). JPEG quality 1..100; stb uses 4:2:0 chroma subsampling up to
// quality 90 and 4:4:4 above.
std::vector<uint8_t> encode_png(const Image& image);
std::vector<uint8_t> encode_jpeg(const Image& image, int quality);

// Encode and write atomically (data/file_io.h).
void save_png(const std::string& path, const Image& image);
void save_jpeg(const std::string& path, const Image& image, int quality);

}  // namespace seg::data
