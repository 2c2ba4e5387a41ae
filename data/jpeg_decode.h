// JPEG decoding with libjpeg-turbo (Debian's libjpeg62-turbo, linked statically), the library and
// the settings Pillow uses, so a decoded photo is Pillow's bit for bit.
//
// Why not stb_image (which still decodes PNG and BMP, data/stb_impl.cpp): its IDCT and chroma
// upsampling differ from libjpeg's (a real ADE photo differed from Pillow's by up to 3 grey levels),
// and fuzzing found two faults in its JPEG decoder that a walk of the file ahead of it can only
// partly guard against (docs/reliability.md).
//
// What matches Pillow 9.4 (`Image.open(path).convert('RGB')` for photos, `Image.open(path)` for labels):
//   - libjpeg's defaults: the accurate integer IDCT (JDCT_ISLOW), "fancy" (triangle) chroma upsampling;
//   - grey JPEGs become RGB by replication; YCbCr and RGB JPEGs are converted by libjpeg;
//   - CMYK and YCCK JPEGs are read as Adobe-inverted CMYK (Pillow's "CMYK;I") and converted to RGB
//     with Pillow's cmyk2rgb formula (cmyk_to_rgb below);
//   - corrupt-data warnings (extraneous bytes, a bad entropy segment) are not errors: libjpeg goes on,
//     as it does inside Pillow. A file that ends early is an error ("truncated"), as Pillow's
//     "image file is truncated" is.
// Refused with Error(data) naming the file: anything libjpeg cannot decode (its own message is
// quoted), more than kMaxJpegScans scans (a tiny progressive file can otherwise ask for thousands of
// passes over a big coefficient buffer), and images above the pixel limit (data/image_limits.h),
// checked from the frame header before any pixel memory is allocated. libjpeg's own memory (above
// all a progressive file's coefficient buffers, 2 bytes per pixel per full-resolution component) is
// capped at kMaxJpegDecoderMemory: a 700-byte progressive CMYK file claiming 11584 x 11584 pixels,
// within the pixel limit, made it fill 1 GiB of coefficients and took 11.5 s (2 GB RSS under the
// fuzz build) before the truncation was seen. 512 MiB decodes every progressive 4:2:0 photo within
// the pixel limit, 4:4:4 colour ones up to 89 megapixels and CMYK ones up to 67.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "data/image.h"

namespace seg::data {

constexpr int kMaxJpegScans = 1000;
constexpr long kMaxJpegDecoderMemory = 512L << 20;

// True when the bytes start as a JPEG does (FF D8 FF: start-of-image, then a marker), Pillow's test.
bool looks_like_jpeg(const uint8_t* data, size_t size);

struct JpegHeader {
  int width = 0, height = 0;
  int components = 0;  // in the file: 1 grey, 3 YCbCr/RGB, 4 CMYK/YCCK
};

// The frame header, from memory or from an open file (read up to the first scan: the markers and
// tables, a few KB; the pixel data is not read). `what` is "image" or "label" for messages.
JpegHeader read_jpeg_header(const uint8_t* data, size_t size, const std::string& path, const char* what);
JpegHeader read_jpeg_header(std::FILE* file, const std::string& path, const char* what);

// Decodes to `channels` channels: 3 (RGB, as convert('RGB')) or 1 (grey; only for grey files, which
// the label rule has already checked).
Image decode_jpeg(const uint8_t* data, size_t size, int channels, const std::string& path, const char* what);

// Pillow 9.4's CMYK -> RGB (Convert.c cmyk2rgb) on Pillow's CMYK values (already un-inverted).
void cmyk_to_rgb(const uint8_t* cmyk, uint8_t* rgb, size_t pixels);
// The same on Adobe's inverted inks as libjpeg returns them (Pillow's "CMYK;I" then cmyk2rgb).
void adobe_cmyk_to_rgb(const uint8_t* inverted, uint8_t* rgb, size_t pixels);

}  // namespace seg::data
