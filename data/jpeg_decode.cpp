#include "data/jpeg_decode.h"

#include <csetjmp>
#include <cstring>
#include <vector>

// jpeglib.h needs FILE and size_t declared first (included above through jpeg_decode.h / <cstring>).
#include <jpeglib.h>
#include <jerror.h>

#include "core/error.h"
#include "data/image_limits.h"

namespace seg::data {

namespace {

// libjpeg reports a fatal error by calling error_exit, which must not return. Ours jumps back to the
// setjmp of the guarded step that called into libjpeg (start, read_pixels). longjmp skips
// destructors, so those steps hold no C++ object that has one: only the C structs below and plain
// pointers. Everything with a destructor (the Image, std::string messages) lives in their callers.
struct Guard {
  jpeg_error_mgr mgr;  // libjpeg's cinfo->err points here; Guard is standard-layout, so that is also &Guard
  jpeg_progress_mgr progress;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
  bool truncated;  // libjpeg met the end of the data before the end of the image (JWRN_JPEG_EOF)
  bool too_big;    // libjpeg's buffers would exceed kMaxJpegDecoderMemory (JERR_NO_BACKING_STORE)
};

struct Decoder {
  jpeg_decompress_struct cinfo;
  Guard guard;
};

Guard& guard_of(j_common_ptr cinfo) { return *reinterpret_cast<Guard*>(cinfo->err); }

void on_error(j_common_ptr cinfo) {
  Guard& g = guard_of(cinfo);
  if (cinfo->err->msg_code == JERR_NO_BACKING_STORE && cinfo->is_decompressor) {
    // libjpeg asks for a temporary file when its buffers would exceed max_memory_to_use; we have none.
    const auto* c = reinterpret_cast<j_decompress_ptr>(cinfo);
    g.too_big = true;
    std::snprintf(g.message, sizeof g.message,
                  "a %ux%u %s JPEG with %d components needs more than segtrain's %ld MiB of decoder memory",
                  c->image_width, c->image_height, c->progressive_mode ? "progressive" : "baseline", c->num_components,
                  kMaxJpegDecoderMemory >> 20);
  } else {
    (*cinfo->err->format_message)(cinfo, g.message);
  }
  std::longjmp(g.jump, 1);
}

// Warnings (level -1) are counted, never printed (libjpeg's default writes them to stderr); trace
// messages (level >= 0) are dropped. Pillow ignores the warnings too, except the end of the file.
void on_message(j_common_ptr cinfo, int level) {
  if (level >= 0) return;
  cinfo->err->num_warnings++;
  if (cinfo->err->msg_code == JWRN_JPEG_EOF) guard_of(cinfo).truncated = true;
}

// Called by libjpeg between passes over the input (once per scan and more); bounds the scan count.
void on_progress(j_common_ptr cinfo) {
  if (!cinfo->is_decompressor) return;
  if (reinterpret_cast<j_decompress_ptr>(cinfo)->input_scan_number <= kMaxJpegScans) return;
  Guard& g = guard_of(cinfo);
  std::snprintf(g.message, sizeof g.message, "more than %d scans", kMaxJpegScans);
  std::longjmp(g.jump, 1);
}

// Creates the decompressor over `file` (when not null) or the memory bytes and reads the markers up
// to the first scan. false: g.message says why.
bool start(Decoder& d, const uint8_t* data, size_t size, std::FILE* file) {
  std::memset(&d, 0, sizeof d);
  d.cinfo.err = jpeg_std_error(&d.guard.mgr);
  d.guard.mgr.error_exit = on_error;
  d.guard.mgr.emit_message = on_message;
  if (setjmp(d.guard.jump)) return false;
  jpeg_create_decompress(&d.cinfo);
  d.cinfo.mem->max_memory_to_use = kMaxJpegDecoderMemory;
  d.guard.progress.progress_monitor = on_progress;
  d.cinfo.progress = &d.guard.progress;
  if (file)
    jpeg_stdio_src(&d.cinfo, file);
  else
    jpeg_mem_src(&d.cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&d.cinfo, TRUE);
  return true;
}

// Decodes every row into `out` (output_height rows of width * channels bytes). With `cmyk_row` (a
// buffer of width * 4 bytes) libjpeg writes each row there as Adobe CMYK and it is converted into
// `out` at once: no whole-image CMYK buffer and no second pass over one. false: g.message says why.
bool read_pixels(Decoder& d, J_COLOR_SPACE space, int channels, uint8_t* out, uint8_t* cmyk_row) {
  if (setjmp(d.guard.jump)) return false;
  d.cinfo.out_color_space = space;
  jpeg_start_decompress(&d.cinfo);
  const int components = cmyk_row ? 4 : channels;
  if (d.cinfo.output_components != components || d.cinfo.output_width != d.cinfo.image_width) {
    std::snprintf(d.guard.message, sizeof d.guard.message, "libjpeg chose an unexpected output layout");
    return false;
  }
  const size_t width = d.cinfo.output_width, row_bytes = width * static_cast<size_t>(channels);
  while (d.cinfo.output_scanline < d.cinfo.output_height) {
    uint8_t* out_row = out + static_cast<size_t>(d.cinfo.output_scanline) * row_bytes;
    JSAMPROW row = cmyk_row ? cmyk_row : out_row;
    jpeg_read_scanlines(&d.cinfo, &row, 1);
    if (cmyk_row) adobe_cmyk_to_rgb(cmyk_row, out_row, width);
    // Past the end of the data libjpeg goes on with blank rows; the file is refused anyway, so stop
    // now rather than after the rest of a header-claimed 100-megapixel image.
    if (d.guard.truncated) return true;
  }
  jpeg_finish_decompress(&d.cinfo);
  return true;
}

// Owns a Decoder: destroys libjpeg's state on every exit (a throw included).
struct Session {
  Decoder d;
  ~Session() { jpeg_destroy_decompress(&d.cinfo); }  // safe after a failed create (cinfo.mem null)
};

Error jpeg_error(const std::string& path, const char* what, const char* reason, bool too_big = false) {
  return Error(ErrorKind::data, str("cannot decode ", what, " file (JPEG: ", reason, ")"))
      .file(path)
      .hint(too_big ? "downscale the image or save it as a baseline JPEG (training resizes to DATASET.imgMaxSize anyway), "
                      "or check that the file is not corrupt"
                    : "the file is corrupt or not a JPEG image; re-export it or remove it from the list");
}

JpegHeader header_of(const jpeg_decompress_struct& c) {
  return {static_cast<int>(c.image_width), static_cast<int>(c.image_height), c.num_components};
}

}  // namespace

bool looks_like_jpeg(const uint8_t* data, size_t size) {
  return size >= 3 && data[0] == 0xFF && data[1] == 0xD8 && data[2] == 0xFF;
}

JpegHeader read_jpeg_header(const uint8_t* data, size_t size, const std::string& path, const char* what) {
  Session s;
  if (!start(s.d, data, size, nullptr)) throw jpeg_error(path, what, s.d.guard.message);
  return header_of(s.d.cinfo);
}

JpegHeader read_jpeg_header(std::FILE* file, const std::string& path, const char* what) {
  Session s;
  if (!start(s.d, nullptr, 0, file)) throw jpeg_error(path, what, s.d.guard.message);
  return header_of(s.d.cinfo);
}

namespace {
// Pillow: R = 255 - K - C * (255 - K) / 255 with its rounding division by 255 (MULDIV255), the ink
// of C scaled by the paper K leaves; likewise G from M and B from Y. MULDIV255(a, b) <= b for a, b
// in 0..255, so the result lies in 0..255 without Pillow's clip. Unsigned arithmetic throughout.
inline uint8_t ink_to_rgb(uint32_t ink, uint32_t not_k) {
  const uint32_t t = ink * not_k + 128;
  return static_cast<uint8_t>(not_k - (((t >> 8) + t) >> 8));
}
}  // namespace

void cmyk_to_rgb(const uint8_t* cmyk, uint8_t* rgb, size_t pixels) {
  for (size_t i = 0; i < pixels; ++i, cmyk += 4, rgb += 3) {
    const uint32_t not_k = 255u - cmyk[3];
    for (int c = 0; c < 3; ++c) rgb[c] = ink_to_rgb(cmyk[c], not_k);
  }
}

void adobe_cmyk_to_rgb(const uint8_t* inverted, uint8_t* rgb, size_t pixels) {
  // Inverted inks: C = 255 - inverted[0] etc., and 255 - K = inverted[3].
  // The three inks written out: a loop over them made the fuzz build's coverage callbacks (one per
  // comparison with a constant) 54% of decoding a large CMYK file.
  for (size_t i = 0; i < pixels; ++i, inverted += 4, rgb += 3) {
    const uint32_t not_k = inverted[3];
    rgb[0] = ink_to_rgb(255u - inverted[0], not_k);
    rgb[1] = ink_to_rgb(255u - inverted[1], not_k);
    rgb[2] = ink_to_rgb(255u - inverted[2], not_k);
  }
}

Image decode_jpeg(const uint8_t* data, size_t size, int channels, const std::string& path, const char* what) {
  SEG_CHECK(channels == 1 || channels == 3, runtime, "decode_jpeg: channels must be 1 or 3, got ", channels);
  Session s;
  if (!start(s.d, data, size, nullptr)) throw jpeg_error(path, what, s.d.guard.message);
  const jpeg_decompress_struct& c = s.d.cinfo;
  const JpegHeader h = header_of(c);
  check_pixel_count(h.width, h.height, path, what);
  SEG_CHECK(channels == 3 || h.components == 1, runtime, "decode_jpeg: a ", h.components,
            "-component JPEG cannot be read as one grey channel (check_label_format first)");
  // libjpeg converts grey, YCbCr and RGB files to RGB itself, but not CMYK/YCCK: those come out as
  // CMYK and are converted as Pillow converts them.
  const bool cmyk = channels == 3 && (c.jpeg_color_space == JCS_CMYK || c.jpeg_color_space == JCS_YCCK);
  const J_COLOR_SPACE space = channels == 1 ? JCS_GRAYSCALE : cmyk ? JCS_CMYK : JCS_RGB;

  Image image(h.width, h.height, channels);
  // Adobe's CMYK JPEGs store inverted inks; Pillow reads every CMYK JPEG that way ("CMYK;I"). One row
  // of them at a time (a 134-megapixel CMYK file claimed by a 360-byte header took 8.3 s in the fuzz
  // build with a whole-image buffer and two passes over it).
  std::vector<uint8_t> cmyk_row(cmyk ? static_cast<size_t>(h.width) * 4 : 0);
  if (!read_pixels(s.d, space, channels, image.pixels.data(), cmyk ? cmyk_row.data() : nullptr))
    throw jpeg_error(path, what, s.d.guard.message, s.d.guard.too_big);
  if (s.d.guard.truncated) throw jpeg_error(path, what, "the data ends before the image does; the file is truncated");
  return image;
}

}  // namespace seg::data
