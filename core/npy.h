// NumPy .npy files: read and write one array (format versions 1.0-3.0, C order, little endian).
//
// Used for golden files made with PyTorch (tests read them, never needing Python) and for the
// probability maps `segtrain predict` writes for other tools. The array keeps the file's shape and
// dtype (f4, f8, f2, i4, i8, u1, b1 -> u8). Writes are atomic (temp file, fsync, rename).
#pragma once

#include <string>
#include <vector>

#include "core/tensor.h"

namespace seg {

Tensor read_npy(const std::string& path);            // Error(data) naming the file on any problem
void write_npy(const std::string& path, const Tensor& t);  // CPU or GPU tensor, any supported dtype

// The same on bytes in memory (`path` only names the source in messages).
Tensor parse_npy(const std::vector<char>& bytes, const std::string& path);
std::vector<char> serialize_npy(const Tensor& t);

}  // namespace seg
