// Docs are checked against the code: every link of the form [`symbol`](../path#L12) in docs/*.md
// must point at an existing file whose line 12 contains `symbol`.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {
std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}
}  // namespace

TEST_CASE("code links in docs/ point at lines that contain the linked symbol") {
  const std::string root = SEG_SOURCE_DIR;
  const std::regex link(R"(\[`([^`]+)`\]\(\.\./([^#)]+)#L(\d+)\))");
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(root + "/docs")) {
    if (entry.path().extension() != ".md") continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    const std::string s = text.str();
    for (auto it = std::sregex_iterator(s.begin(), s.end(), link); it != std::sregex_iterator(); ++it) {
      const std::string symbol = (*it)[1], file = (*it)[2];
      const int line = std::stoi((*it)[3]);
      CAPTURE(entry.path().filename().string());
      CAPTURE(symbol);
      CAPTURE(file);
      CAPTURE(line);
      const auto lines = lines_of(root + "/" + file);
      REQUIRE(!lines.empty());
      REQUIRE(line >= 1);
      REQUIRE(line <= static_cast<int>(lines.size()));
      // Strip a trailing "()" of method links like SGD::step -> look for the last name component.
      std::string needle = symbol;
      if (needle.size() > 2 && needle.substr(needle.size() - 2) == "()") needle = needle.substr(0, needle.size() - 2);
      CHECK(lines[static_cast<size_t>(line - 1)].find(needle) != std::string::npos);
      ++checked;
    }
  }
  CHECK(checked >= 10);
}
