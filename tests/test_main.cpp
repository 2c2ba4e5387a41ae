// Shared main() of every doctest executable.
//
// Two ways a test that cannot run here is reported as skipped (exit 77, which CTest reports as
// "Skipped" through SKIP_RETURN_CODE 77), never as passed:
//  * a whole suite (no GPU for label `gpu`, no MPI launcher for `mpi`) defines
//    seg_test_skip_reason() returning a non-empty reason;
//  * a CTest test made of the cases marked SEG_REQUIRES(name) (tests/common/requirement.h) runs with
//    --seg-require=name, and main evaluates that requirement before running anything.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "tests/common/requirement.h"

std::string seg_test_skip_reason() __attribute__((weak));

namespace seg::test {
namespace {
std::map<std::string, RequirementCheck>& requirements() {
  static std::map<std::string, RequirementCheck> map;
  return map;
}
}  // namespace
bool register_requirement(const char* name, RequirementCheck check) {
  requirements().emplace(name, check);  // several sources may register the same one
  return true;
}
}  // namespace seg::test

int main(int argc, char** argv) {
  if (seg_test_skip_reason) {
    const std::string reason = seg_test_skip_reason();
    if (!reason.empty()) {
      std::printf("SKIPPED (%s suite): %s\n", SEG_TEST_LABEL, reason.c_str());
      return 77;
    }
  }
  // --seg-require=NAME: ours, so it is taken out before doctest parses the rest.
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    constexpr const char* kFlag = "--seg-require=";
    if (std::strncmp(argv[i], kFlag, std::strlen(kFlag)) != 0) {
      args.push_back(argv[i]);
      continue;
    }
    const std::string name = argv[i] + std::strlen(kFlag);
    const auto it = seg::test::requirements().find(name);
    if (it == seg::test::requirements().end()) {
      std::fprintf(stderr, "error: no test requirement named '%s' in this executable (SEG_TEST_REQUIREMENT)\n",
                   name.c_str());
      return 2;
    }
    const std::string reason = it->second();
    if (!reason.empty()) {
      std::printf("SKIPPED (%s): %s\n", name.c_str(), reason.c_str());
      return 77;
    }
  }
  doctest::Context context;
  context.applyCommandLine(static_cast<int>(args.size()), args.data());
  return context.run();
}
