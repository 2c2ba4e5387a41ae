// Fuzz target: image decoding (data/image_codec.h), the way the loader meets files: as a label
// (8-bit single-channel PNG, anything else refused) and as a photo (JPEG/PNG/BMP to RGB). A decoded
// image must have the size its header announces and exactly width*height*channels pixels.
#include "data/image_codec.h"

#include "core/error.h"
#include "tests/fuzz/fuzz_targets.h"

namespace seg::fuzz {

int image(const uint8_t* data, size_t size) {
  const std::vector<uint8_t> bytes(data, data + size);
  for (int as_label = 0; as_label < 2; ++as_label) {
    try {
      const data::Image img = as_label ? data::decode_label(bytes, "fuzz.png") : data::decode_image_rgb(bytes, "fuzz.jpg");
      const int channels = as_label ? 1 : 3;
      if (img.width <= 0 || img.height <= 0 || img.channels != channels ||
          img.pixels.size() != static_cast<size_t>(img.width) * static_cast<size_t>(img.height) * static_cast<size_t>(channels))
        property_failed("image", "decoded image has an inconsistent size");
    } catch (const Error&) {
    }
  }
  return 0;
}

}  // namespace seg::fuzz

SEG_FUZZ_ENTRY(image)
