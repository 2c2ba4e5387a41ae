// Shared main() of every doctest executable.
//
// A suite that cannot run here (no GPU for label `gpu`, no MPI launcher for `mpi`) defines
// seg_test_skip_reason() returning a non-empty reason; main then prints it and exits 77, which
// CTest reports as "skipped" (SKIP_RETURN_CODE 77), never as passed.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <string>

std::string seg_test_skip_reason() __attribute__((weak));

int main(int argc, char** argv) {
  if (seg_test_skip_reason) {
    const std::string reason = seg_test_skip_reason();
    if (!reason.empty()) {
      std::printf("SKIPPED (%s suite): %s\n", SEG_TEST_LABEL, reason.c_str());
      return 77;
    }
  }
  doctest::Context context;
  context.applyCommandLine(argc, argv);
  return context.run();
}
