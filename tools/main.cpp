// segtrain entry point: runs a command and maps errors to the exit codes of DESIGN
// (0 ok, 1 runtime, 2 usage/config, 3 data, 4 device/out of memory). No stack traces.
#include <cstdio>
#include <exception>
#include <new>

#include "core/error.h"
#include "tools/cli.h"

int main(int argc, char** argv) {
  try {
    return seg::cli::run(seg::cli::Args(argv + 1, argv + argc));
  } catch (const seg::Error& e) {
    std::fprintf(stderr, "segtrain: %s\n", e.what());
    return e.exit_code();
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "segtrain: device error: out of host memory\n");
    return 4;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "segtrain: error: %s\n", e.what());
    return 1;
  }
}
