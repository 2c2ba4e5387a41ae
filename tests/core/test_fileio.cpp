// core/fileio.h: the one atomic writer every output goes through (docs/reliability.md). What a
// failed write leaves (the old file, no temporary) and what it says (the file, the cause, what to do).
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/fileio.h"
#include "tests/common/scratch.h"

using namespace seg;
namespace fs = std::filesystem;

namespace {
std::string text_of(const std::string& path) {
  const std::vector<char> b = read_file(path);
  return std::string(b.begin(), b.end());
}

int entries(const std::string& dir) {
  int n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
  return n;
}

Error write_error_of(const std::string& path, const std::string& text) {
  try {
    write_file_atomic(path, text.data(), text.size());
  } catch (const Error& e) {
    return e;
  }
  FAIL("expected an error");
  return Error(ErrorKind::runtime, "");
}
}  // namespace

TEST_CASE("write_file_atomic replaces a file whole, with or without the fsyncs, and leaves no temporary") {
  seg::test::ScratchDir dir;
  const std::string path = dir / "a.txt";
  write_file_atomic(path, "first", 5);
  CHECK(text_of(path) == "first");
  write_file_atomic(path, "second, longer", 14, Durability::atomic_only);
  CHECK(text_of(path) == "second, longer");
  write_file_atomic(path, "", 0);
  CHECK(text_of(path).empty());
  CHECK(entries(dir.path()) == 1);
}

TEST_CASE("a failed write names the file and the cause, keeps the old file and removes its temporary") {
  seg::test::ScratchDir dir;
  // No such folder.
  const Error missing = write_error_of(dir / "no/such/a.txt", "x");
  CHECK(missing.kind() == ErrorKind::runtime);
  CHECK(missing.exit_code() == 1);
  CHECK(std::string(missing.what()).find("cannot write '" + dir / "no/such/a.txt" + "': No such file or directory") !=
        std::string::npos);
  CHECK(missing.context("file") == dir / "no/such/a.txt");

  // A folder where the file goes: the rename fails; the folder stays, no temporary is left.
  fs::create_directory(dir / "taken");
  const Error taken = write_error_of(dir / "taken", "x");
  CHECK(std::string(taken.what()).find("writing '" + dir / "taken" + "' failed: Is a directory") != std::string::npos);
  CHECK(fs::is_directory(dir / "taken"));
  CHECK(entries(dir.path()) == 1);

  // A folder that cannot be made because a part of the path is a file.
  write_file_atomic(dir / "file", "keep", 4);
  try {
    make_dirs(dir / "file/sub");
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("cannot create folder '" + dir / "file/sub" + "': Not a directory") != std::string::npos);
    CHECK(e.context("what to do").find("a part of the path is a file") != std::string::npos);
  }
  CHECK(text_of(dir / "file") == "keep");
}

TEST_CASE("past a file-size limit the write fails with EFBIG and the disk-space hint; the old file is intact") {
  seg::test::ScratchDir dir;
  const std::string path = dir / "big.bin";
  write_file_atomic(path, "old", 3);
  std::fflush(stdout);
  std::fflush(stderr);
  // In a child, so the limit does not reach this process. Exit code: 0 = every check held.
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::signal(SIGXFSZ, SIG_IGN);  // as segtrain does (tools/main.cpp); else the kernel kills the writer
    rlimit r{4096, 4096};
    ::setrlimit(RLIMIT_FSIZE, &r);
    const std::vector<char> bytes(8192, 'x');
    try {
      write_file_atomic(path, bytes.data(), bytes.size());
    } catch (const Error& e) {
      const std::string what = e.what();
      const bool ok = what.find("writing '" + path + "' failed: File too large") != std::string::npos &&
                      e.context("what to do").find("free disk space") != std::string::npos;
      std::_Exit(ok ? 0 : 2);
    }
    std::_Exit(3);  // no error at all
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(text_of(path) == "old");
  CHECK(entries(dir.path()) == 1);  // the temporary is gone
}
