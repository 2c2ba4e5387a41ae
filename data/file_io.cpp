#include "data/file_io.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "core/error.h"
#include "core/fileio.h"

namespace seg::data {

namespace fs = std::filesystem;

Error file_open_error(const std::string& path, const char* what, int err) {
  const bool missing = err == ENOENT;
  Error e(ErrorKind::data, str(missing ? "missing " : "cannot open ", what, " file", missing ? "" : str(" (", std::strerror(err), ")")));
  e.file(path).hint("check the path (for dataset lists: DATASET.root_dataset and the fpath_* entries)");
  return e;
}

std::vector<uint8_t> read_file_bytes(const std::string& path, const char* what) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw file_open_error(path, what, errno);
  std::vector<uint8_t> bytes;
  uint8_t buffer[1 << 16];
  size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0) bytes.insert(bytes.end(), buffer, buffer + n);
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) throw Error(ErrorKind::data, str("cannot read ", what, " file")).file(path);
  return bytes;
}

std::string read_file_text(const std::string& path, const char* what) {
  const std::vector<uint8_t> bytes = read_file_bytes(path, what);
  return std::string(bytes.begin(), bytes.end());
}

void write_file_atomic(const std::string& path, const void* bytes, size_t size) {
  const fs::path target(path);
  if (target.has_parent_path()) make_dirs(target.parent_path().string());
  // core/fileio.h: the same temporary naming and errors, without the fsyncs (regenerable outputs).
  seg::write_file_atomic(path, bytes, size, Durability::atomic_only);
}

std::string join_path(const std::string& root, const std::string& path) {
  if (!path.empty() && path.front() == '/') return path;
  if (root.empty()) return path;
  if (root.back() == '/') return root + path;
  return root + "/" + path;
}

bool file_exists(const std::string& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec);
}

}  // namespace seg::data
