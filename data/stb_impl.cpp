// The one translation unit that compiles stb_image and stb_image_write (headers from Debian's
// libstb-dev). Compiling them here rather than linking libstb keeps the build to headers only, lets
// the sanitizer builds instrument the decoders, and limits the formats to the ones datasets use.
// JPEG is not among them: data/jpeg_decode.cpp decodes it with libjpeg-turbo, as Pillow does (stb's
// JPEG encoder stays, for the synthetic dataset).
// data/CMakeLists.txt turns warnings off for this file only: it is third-party code.
//
// Every allocation stb_image makes goes through capped_malloc/capped_realloc: one larger than the
// largest buffer an image within the pixel limit needs (data/image_limits.h, kMaxDecoderAllocation)
// is refused, and stb reports "Out of memory" as for a failed malloc. The header checks in front of
// stb (the pixel limit, png_check.h) catch the cases the fuzzer found; this cap catches the ones it
// has not found yet, so a corrupt file can never make a loader worker ask for gigabytes.
#include <cstdlib>

#include "data/image_limits.h"

namespace {
void* capped_malloc(size_t bytes) {
  return bytes > static_cast<size_t>(seg::data::kMaxDecoderAllocation) ? nullptr : std::malloc(bytes);
}
void* capped_realloc(void* p, size_t bytes) {
  return bytes > static_cast<size_t>(seg::data::kMaxDecoderAllocation) ? nullptr : std::realloc(p, bytes);
}
}  // namespace

#define STBI_MALLOC(bytes) capped_malloc(bytes)
#define STBI_REALLOC(p, bytes) capped_realloc(p, bytes)
#define STBI_FREE(p) std::free(p)
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#define STBI_ONLY_BMP
#define STBI_NO_STDIO           // we decode from memory (data/image_codec.cpp reads the files)
#define STBI_FAILURE_USERMSG    // readable failure reasons for error messages
#include <stb/stb_image.h>

#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STBI_WRITE_NO_STDIO     // we encode to memory and write files atomically
#include <stb/stb_image_write.h>
