#include "data/image_codec.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>

#include <stb/stb_image.h>
#include <stb/stb_image_write.h>

#include "core/error.h"
#include "data/bmp_check.h"
#include "data/file_io.h"
#include "data/image_limits.h"
#include "data/jpeg_decode.h"
#include "data/png_check.h"

namespace seg::data {

namespace {

// stb_image's failure reason is thread-local, so concurrent loader workers each see their own.
Error decode_error(const std::string& path, const char* what) {
  const char* reason = stbi_failure_reason();
  return Error(ErrorKind::data, str("cannot decode ", what, " file (", reason ? reason : "unknown format", ")"))
      .file(path)
      .hint("the file is corrupt or not a JPEG/PNG/BMP image; re-export it or remove it from the list");
}

ImageHeader header_of(const JpegHeader& j) {
  ImageHeader h;
  h.width = j.width;
  h.height = j.height;
  h.channels = j.components;
  return h;
}

// stb's BMP header reader reports a top-down BMP's height as negative; its loader decodes |height|
// rows. INT_MIN has no magnitude in an int and stb's loader refuses it, so it stays as it is.
int top_down_height(int h) { return h < 0 && h != std::numeric_limits<int>::min() ? -h : h; }

// A file whose structure (png_check.h, bmp_check.h) would make stb allocate or read what is not there.
Error structure_error(const std::string& path, const char* what, const char* format, const std::string& problem) {
  return Error(ErrorKind::data, str("cannot decode ", what, " file (", format, ": ", problem, ")"))
      .file(path)
      .hint("the file is truncated or corrupt; re-export it or remove it from the list");
}

int checked_size(size_t n, const std::string& path) {
  if (n > static_cast<size_t>(std::numeric_limits<int>::max()))
    throw Error(ErrorKind::data, "file too large to decode").file(path);
  return static_cast<int>(n);
}

// Decodes a JPEG with libjpeg-turbo (data/jpeg_decode.h), anything else with stb, into an Image with
// `channels` channels. The pixel limit (data/image_limits.h) is checked from the header first.
Image decode(const std::vector<uint8_t>& file_bytes, const std::string& path, int channels, const char* what) {
  if (looks_like_jpeg(file_bytes.data(), file_bytes.size()))
    return decode_jpeg(file_bytes.data(), file_bytes.size(), channels, path, what);
  // An empty IDAT chunk would make stb memcpy to a null pointer (data/png_check.h): drop it first.
  std::vector<uint8_t> without_empty_idat;
  const std::vector<uint8_t>& bytes =
      drop_empty_png_idat(file_bytes.data(), file_bytes.size(), without_empty_idat) ? without_empty_idat : file_bytes;
  // An IDAT chunk that claims more bytes than the file has would make stb allocate that much first.
  const std::string idat = png_idat_past_end(bytes.data(), bytes.size());
  if (!idat.empty()) throw structure_error(path, what, "PNG", idat);
  int w = 0, h = 0, file_channels = 0;
  const int size = checked_size(bytes.size(), path);
  // Every file stb can decode has a header stb can read, so a file without one is refused here: the
  // pixel limit must never be skipped on the way to the decoder.
  if (!stbi_info_from_memory(bytes.data(), size, &w, &h, &file_channels)) throw decode_error(path, what);
  const int64_t header_pixels = check_pixel_count(w, h, path, what);
  // stb reads zeros past the end of a BMP's data: a short file would decode to a blank image.
  const std::string bmp = bmp_pixels_past_end(bytes.data(), bytes.size());
  if (!bmp.empty()) throw structure_error(path, what, "BMP", bmp);
  stbi_uc* pixels = stbi_load_from_memory(bytes.data(), size, &w, &h, &file_channels, channels);
  if (!pixels) throw decode_error(path, what);
  // stb decodes a BMP of width 0 to an image of no pixels (and the copy below would pass memcpy a
  // null pointer: the fuzz finding bmp_width_0_null_memcpy.bmp).
  if (w <= 0 || h <= 0 || static_cast<int64_t>(w) * h != header_pixels) {
    stbi_image_free(pixels);
    throw Error(ErrorKind::data, str("cannot decode ", what, " file: decoded ", w, "x", h, " pixels",
                                     w <= 0 || h <= 0 ? ", no image" : ", not the size its header states"))
        .file(path)
        .hint("the file is corrupt; re-export it or remove it from the list");
  }
  Image image(w, h, channels);
  std::memcpy(image.pixels.data(), pixels, image.pixels.size());
  stbi_image_free(pixels);
  return image;
}

void append_bytes(void* context, void* data, int size) {
  auto* out = static_cast<std::vector<uint8_t>*>(context);
  const auto* p = static_cast<const uint8_t*>(data);
  out->insert(out->end(), p, p + size);
}

void check_encodable(const Image& image, const char* format) {
  SEG_CHECK(image.width > 0 && image.height > 0 && (image.channels == 1 || image.channels == 3), runtime,
            "cannot encode a ", image.width, "x", image.height, "x", image.channels, " image as ", format);
}

}  // namespace

Image decode_image_rgb(const std::vector<uint8_t>& bytes, const std::string& path) {
  return decode(bytes, path, 3, "image");
}

void check_label_format(const ImageHeader& header, const std::string& path) {
  if (header.channels == 1 && !header.sixteen_bit) return;
  throw Error(ErrorKind::data,
              str("label image must be 8-bit single-channel (PIL mode \"L\"), this one is ",
                  header.sixteen_bit ? "16-bit" : str(header.channels, "-channel"),
                  header.channels >= 3 ? " (RGB or palette colours, not class indices)" : ""))
      .file(path)
      .hint("labels hold class indices 0..num_class (0 = unlabeled); convert coloured masks to indices first");
}

Image decode_label(const std::vector<uint8_t>& bytes, const std::string& path) {
  // Check the file's own format first: stb would happily convert a palette or RGB PNG to grey.
  ImageHeader header;
  if (looks_like_jpeg(bytes.data(), bytes.size())) {
    header = header_of(read_jpeg_header(bytes.data(), bytes.size(), path, "label"));
  } else {
    const int size = checked_size(bytes.size(), path);
    if (!stbi_info_from_memory(bytes.data(), size, &header.width, &header.height, &header.channels))
      throw decode_error(path, "label");
    header.height = top_down_height(header.height);
    header.sixteen_bit = stbi_is_16_bit_from_memory(bytes.data(), size) != 0;
  }
  check_label_format(header, path);
  return decode(bytes, path, 1, "label");
}

namespace {
// stb_image reading straight from a FILE (the library is built with STBI_NO_STDIO), so that the
// header functions read only the bytes they need.
int file_read(void* user, char* data, int size) {
  return static_cast<int>(std::fread(data, 1, static_cast<size_t>(size), static_cast<std::FILE*>(user)));
}
void file_skip(void* user, int n) { std::fseek(static_cast<std::FILE*>(user), n, SEEK_CUR); }
int file_eof(void* user) {
  std::FILE* f = static_cast<std::FILE*>(user);
  return std::feof(f) || std::ferror(f);
}
const stbi_io_callbacks kFileCallbacks = {file_read, file_skip, file_eof};
}  // namespace

ImageHeader read_image_header(const std::string& path, const char* what) {
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  std::FILE* f = file.get();
  if (!f) throw file_open_error(path, what, errno);
  // A JPEG's markers up to its first scan go to libjpeg (a few KB, more with big EXIF or ICC blocks).
  uint8_t magic[3] = {0, 0, 0};
  const size_t got = std::fread(magic, 1, sizeof magic, f);
  std::rewind(f);
  if (looks_like_jpeg(magic, got)) return header_of(read_jpeg_header(f, path, what));
  ImageHeader h;
  if (!stbi_info_from_callbacks(&kFileCallbacks, f, &h.width, &h.height, &h.channels)) throw decode_error(path, what);
  h.height = top_down_height(h.height);
  std::rewind(f);
  h.sixteen_bit = stbi_is_16_bit_from_callbacks(&kFileCallbacks, f) != 0;
  return h;
}

Image load_image_rgb(const std::string& path) { return decode_image_rgb(read_file_bytes(path, "image"), path); }

Image load_label(const std::string& path) { return decode_label(read_file_bytes(path, "label"), path); }

std::vector<uint8_t> encode_png(const Image& image) {
  check_encodable(image, "PNG");
  std::vector<uint8_t> out;
  const int ok = stbi_write_png_to_func(append_bytes, &out, image.width, image.height, image.channels,
                                        image.pixels.data(), static_cast<int>(image.row_bytes()));
  SEG_CHECK(ok, runtime, "PNG encoding failed");
  return out;
}

std::vector<uint8_t> encode_jpeg(const Image& image, int quality) {
  check_encodable(image, "JPEG");
  SEG_CHECK(quality >= 1 && quality <= 100, usage, "JPEG quality must be 1..100, got ", quality);
  std::vector<uint8_t> out;
  const int ok = stbi_write_jpg_to_func(append_bytes, &out, image.width, image.height, image.channels,
                                        image.pixels.data(), quality);
  SEG_CHECK(ok, runtime, "JPEG encoding failed");
  return out;
}

void save_png(const std::string& path, const Image& image) {
  const std::vector<uint8_t> bytes = encode_png(image);
  write_file_atomic(path, bytes.data(), bytes.size());
}

void save_jpeg(const std::string& path, const Image& image, int quality) {
  const std::vector<uint8_t> bytes = encode_jpeg(image, quality);
  write_file_atomic(path, bytes.data(), bytes.size());
}

}  // namespace seg::data
