// Small file helpers shared by every writer and reader in segtrain.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace seg {

// Reads a whole file; Error(data) naming the path when it is missing or unreadable.
std::vector<char> read_file(const std::string& path);

// Writes `bytes` to `path` atomically: a temporary file in the same folder, fsync, then rename, so a
// crash or Ctrl-C leaves either the old file or the new one, never half a file. Error(runtime) on
// failure, naming the path.
void write_file_atomic(const std::string& path, const void* data, size_t size);

// Creates a folder and its parents (like mkdir -p); Error(runtime) naming it on failure.
void make_dirs(const std::string& path);
bool file_exists(const std::string& path);

}  // namespace seg
