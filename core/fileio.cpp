#include "core/fileio.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.h"

namespace seg {

std::vector<char> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error(ErrorKind::data, str("cannot open '", path, "': ", std::strerror(errno))).file(path);
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  in.seekg(0, std::ios::beg);
  std::vector<char> bytes(static_cast<size_t>(size));
  if (size > 0 && !in.read(bytes.data(), size))
    throw Error(ErrorKind::data, str("cannot read '", path, "'")).file(path);
  return bytes;
}

namespace {
// The hint for an errno a user can act on.
void add_hint(Error& e, int err) {
  if (err == ENOSPC || err == EFBIG || err == EDQUOT)
    e.hint("free disk space (or raise the file-size limit, ulimit -f)");
  else if (err == EACCES || err == EPERM || err == EROFS)
    e.hint("the folder is not writable by this user (or is on a read-only file system): write somewhere else, or "
           "fix its permissions");
}

Error write_error(const std::string& path, int err) {
  Error e(ErrorKind::runtime, str("writing '", path, "' failed: ", std::strerror(err)));
  e.file(path);
  add_hint(e, err);
  return e;
}

// The folder holding `path`, for the fsync that makes a rename durable.
std::string folder_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}
}  // namespace

void write_file_atomic(const std::string& path, const void* data, size_t size, Durability durability) {
  // The pid tells processes apart (and lets a later run see that the writer is gone), the counter
  // threads of one process (the synthetic-dataset generator writes from several).
  static std::atomic<uint64_t> counter{0};
  const std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    Error e(ErrorKind::runtime, str("cannot write '", path, "': ", std::strerror(err)));
    e.file(path);
    add_hint(e, err);
    throw e;
  }
  const char* p = static_cast<const char*>(data);
  size_t left = size;
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw write_error(path, err);
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  // fsync before rename: the new name must never point at data still in the page cache only.
  if (durability == Durability::synced && ::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    throw write_error(path, err);
  }
  if (::close(fd) != 0 || std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw write_error(path, err);
  }
  if (durability != Durability::synced) return;
  const int dir = ::open(folder_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {  // best effort: some file systems refuse fsync on a folder
    ::fsync(dir);
    ::close(dir);
  }
}

FileDigest digest_of(const void* data, size_t size) {
  constexpr uint64_t kOffset = 14695981039346656037ull, kPrime = 1099511628211ull;
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t h = kOffset;
  size_t i = 0;
  for (; i + 8 <= size; i += 8) {
    uint64_t word;
    std::memcpy(&word, p + i, 8);
    h = (h ^ word) * kPrime;
  }
  for (; i < size; ++i) h = (h ^ p[i]) * kPrime;
  return FileDigest{static_cast<uint64_t>(size), h};
}

FileDigest file_digest(const std::string& path) {
  const std::vector<char> bytes = read_file(path);
  return digest_of(bytes.data(), bytes.size());
}

void make_dirs(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) {
    Error e(ErrorKind::runtime, str("cannot create folder '", path, "': ", ec.message()));
    e.file(path);
    if (ec == std::errc::not_a_directory || ec == std::errc::file_exists)
      e.hint("a part of the path is a file, not a folder: choose another path");
    else
      add_hint(e, ec.value());
    throw e;
  }
}

bool file_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace seg
