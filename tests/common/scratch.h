// Where tests write files. Every test process gets one folder under the system temp dir
// (segtrain_test_<pid>), created on first use and removed with everything in it when the process
// exits normally, so a test run leaves nothing behind in /tmp. A test that crashes leaves its
// folder for inspection; the pid in the name tells the runs apart.
#pragma once

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string>
#include <system_error>

namespace seg::test {

namespace detail {
class ProcessScratch {
 public:
  ProcessScratch()
      : pid_(::getpid()),
        root_((std::filesystem::temp_directory_path() / ("segtrain_test_" + std::to_string(pid_))).string()) {
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_);
  }
  ~ProcessScratch() {
    // A forked child that exits through exit() would run this destructor too: only the owner cleans up.
    if (::getpid() != pid_) return;
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  ProcessScratch(const ProcessScratch&) = delete;
  ProcessScratch& operator=(const ProcessScratch&) = delete;
  const std::string& root() const { return root_; }

 private:
  pid_t pid_;
  std::string root_;
};
}  // namespace detail

// The process's scratch folder.
inline const std::string& scratch_root() {
  static const detail::ProcessScratch scratch;
  return scratch.root();
}

// A path inside the scratch folder (the file or folder itself is not created).
inline std::string scratch_path(const std::string& name) { return scratch_root() + "/" + name; }

// A fresh, empty folder inside the scratch folder, removed with its contents at scope exit.
class ScratchDir {
 public:
  ScratchDir() {
    static std::atomic<int> counter{0};
    path_ = scratch_path("dir_" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace seg::test
