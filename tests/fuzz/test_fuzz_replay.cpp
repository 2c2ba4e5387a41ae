// Every fuzz target's body on its seed corpus (tests/fuzz/corpus/<target>/) and on every input that
// ever made it fail (tests/fuzz/regressions/<target>/), in the normal build: the bugs the fuzzers
// found stay fixed without clang or libFuzzer. Under ASan+UBSan (CI) this also checks the inputs
// for memory errors. See docs/reliability.md.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "tests/fuzz/fuzz_targets.h"

namespace {
namespace fs = std::filesystem;

std::vector<uint8_t> bytes_of(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Runs the target on every file of `folder`; returns how many there were.
int replay(const seg::fuzz::Target& t, const fs::path& folder) {
  if (!fs::is_directory(folder)) return 0;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(folder))
    if (e.is_regular_file() && e.path().filename() != "README.md") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const fs::path& f : files) {
    CAPTURE(f.string());
    const std::vector<uint8_t> b = bytes_of(f);
    CHECK_NOTHROW(t.run(b.data(), b.size()));  // only seg::Error may come out, and it is caught inside
  }
  return static_cast<int>(files.size());
}
}  // namespace

TEST_CASE("fuzz targets replay their seed corpora and every regression input") {
  const fs::path root = fs::path(SEG_SOURCE_DIR) / "tests" / "fuzz";
  int regressions = 0;
  for (const seg::fuzz::Target& t : seg::fuzz::targets()) {
    CAPTURE(t.name);
    const int seeds = replay(t, root / "corpus" / t.name);
    CHECK(seeds >= 3);  // every target has a seed corpus from the fixtures
    regressions += replay(t, root / "regressions" / t.name);
    // The empty input and a single byte, always.
    const uint8_t one = 0;
    CHECK_NOTHROW(t.run(&one, 0));
    CHECK_NOTHROW(t.run(&one, 1));
  }
  MESSAGE("replayed ", regressions, " regression inputs");
}
