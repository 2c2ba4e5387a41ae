#include "data/file_io.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <unistd.h>

#include "core/error.h"

namespace seg::data {

namespace fs = std::filesystem;

namespace {

// A unique temporary name next to `path`: the pid tells concurrent processes apart, the counter
// concurrent threads (the generator writes files from several threads).
std::string temp_name_for(const std::string& path) {
  static std::atomic<uint64_t> counter{0};
  return str(path, ".tmp.", static_cast<long>(::getpid()), ".", counter.fetch_add(1));
}

}  // namespace

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
  if (target.has_parent_path()) {
    std::error_code ec;
    fs::create_directories(target.parent_path(), ec);
    if (ec)
      throw Error(ErrorKind::runtime, str("cannot create directory: ", ec.message()))
          .file(target.parent_path().string());
  }
  const std::string temp = temp_name_for(path);
  std::FILE* f = std::fopen(temp.c_str(), "wb");
  if (!f) throw Error(ErrorKind::runtime, str("cannot write file (", std::strerror(errno), ")")).file(path);
  const bool written = size == 0 || std::fwrite(bytes, 1, size, f) == size;
  const bool closed = std::fclose(f) == 0;
  if (!written || !closed) {
    std::remove(temp.c_str());
    throw Error(ErrorKind::runtime, "cannot write file (disk full?)").file(path);
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(temp.c_str());
    throw Error(ErrorKind::runtime, str("cannot move file into place (", std::strerror(err), ")")).file(path);
  }
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
