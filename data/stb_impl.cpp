// The one translation unit that compiles stb_image and stb_image_write (headers from Debian's
// libstb-dev). Compiling them here rather than linking libstb keeps the build to headers only, lets
// the sanitizer builds instrument the decoders, and limits the formats to the ones datasets use.
// JPEG is not among them: data/jpeg_decode.cpp decodes it with libjpeg-turbo, as Pillow does (stb's
// JPEG encoder stays, for the synthetic dataset).
// data/CMakeLists.txt turns warnings off for this file only: it is third-party code.
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#define STBI_ONLY_BMP
#define STBI_NO_STDIO           // we decode from memory (data/image_codec.cpp reads the files)
#define STBI_FAILURE_USERMSG    // readable failure reasons for error messages
#include <stb/stb_image.h>

#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STBI_WRITE_NO_STDIO     // we encode to memory and write files atomically
#include <stb/stb_image_write.h>
