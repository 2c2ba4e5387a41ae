// safetensors files: read and write named tensors (DESIGN decision 9).
//
// The format (https://github.com/huggingface/safetensors), all integers little endian:
//
//   [8 bytes]  N, the length of the JSON header (u64)
//   [N bytes]  JSON: { "<name>": {"dtype": "F32", "shape": [64, 3, 3, 3], "data_offsets": [begin, end]},
//                      ..., "__metadata__": {"<key>": "<string value>", ...} }   (metadata optional)
//              padded with spaces so the data starts at a multiple of 8 bytes
//   [rest]     the tensors' bytes, C order; data_offsets are relative to the start of this block, and
//              the tensors tile it exactly (no gaps, no overlaps, nothing left over)
//
// Every segtrain dtype has a code: F32 F64 F16 BF16 I32 I64 U8. Tensors keep the shape and dtype of
// the file: layout conversions (PyTorch's OIHW conv weights to our [O, KH, KW, I/groups]) happen one
// level up, in models/checkpoint.h. Any malformed, truncated or inconsistent file is Error(data)
// naming the file (and the tensor, where one is at fault), never a crash.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/fileio.h"
#include "core/tensor.h"

namespace seg {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

struct SafetensorsFile {
  NamedTensors tensors;                          // in the order of their data in the file
  std::map<std::string, std::string> metadata;  // the "__metadata__" entry (string to string)
  const Tensor* find(const std::string& name) const;  // null when absent
};

const char* safetensors_dtype_code(DType dt);  // "F32", ...

// Serialises `tensors` (any device, any layout; written in the given order, names must be unique and
// non-empty) with optional metadata. serialize_* returns the bytes; write_* writes them atomically
// (temporary file, fsync, rename: core/fileio.h) and returns the size and hash of what it wrote.
std::vector<char> serialize_safetensors(const NamedTensors& tensors,
                                        const std::map<std::string, std::string>& metadata = {});
FileDigest write_safetensors(const std::string& path, const NamedTensors& tensors,
                             const std::map<std::string, std::string>& metadata = {});

// Parses a whole file; `path` only names the source in error messages.
SafetensorsFile parse_safetensors(const std::vector<char>& bytes, const std::string& path);
SafetensorsFile read_safetensors(const std::string& path);

}  // namespace seg
