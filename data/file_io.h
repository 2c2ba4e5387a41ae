// Small file helpers for the data pipeline: read a whole file, write one atomically, join paths.
//
// Every output of segtrain's data tools (images, labels, lists, CSVs) is written through
// write_file_atomic(): the bytes go to a temporary file next to the target, which is then renamed
// over it. A crash or Ctrl-C therefore leaves either the old file or the complete new one, never a
// half-written file that a later run would trip over.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace seg {
class Error;
}

namespace seg::data {

// The whole file. Error(data) naming the file when it is missing or unreadable; `what` says what the
// file is for the message ("image", "label", "dataset list").
std::vector<uint8_t> read_file_bytes(const std::string& path, const char* what);
std::string read_file_text(const std::string& path, const char* what);
// The error read_file_bytes throws when fopen fails with `err` (errno): "missing image file" etc.
Error file_open_error(const std::string& path, const char* what, int err);

// Creates missing parent directories, then writes through seg::write_file_atomic (core/fileio.h:
// temporary file and rename; Durability::atomic_only, no fsync: these outputs can be regenerated).
// Error(runtime) naming the file and the cause on failure.
void write_file_atomic(const std::string& path, const void* bytes, size_t size);
inline void write_file_atomic(const std::string& path, std::string_view text) {
  write_file_atomic(path, text.data(), text.size());
}

// Python's os.path.join(root, path) for the two-argument case that upstream uses: an absolute `path`
// is returned as is, an empty root adds nothing, and exactly one '/' separates the parts.
std::string join_path(const std::string& root, const std::string& path);

bool file_exists(const std::string& path);

}  // namespace seg::data
