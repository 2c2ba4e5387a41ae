// segtrain entry point: runs a command and maps errors to the exit codes of DESIGN
// (0 ok, 1 runtime, 2 usage/config, 3 data, 4 device/out of memory). No stack traces.
#include <csignal>
#include <cstdio>
#include <exception>
#include <new>

#include "core/comm.h"
#include "core/error.h"
#include "tools/cli.h"

namespace {
// Under mpirun a failing rank stops the whole job (after its message), so no rank is left waiting.
int failed(int code) {
  seg::abort_all_ranks_on_error(code);
  return code;
}
}  // namespace

int main(int argc, char** argv) {
  // Past a file-size limit (ulimit -f) the kernel's default is to kill the process with SIGXFSZ,
  // mid-write and without a word. Ignored, the write fails with EFBIG instead, and segtrain reports
  // it like a full disk: which file, that the last checkpoint is intact, what to do.
  std::signal(SIGXFSZ, SIG_IGN);
  try {
    return seg::cli::run(seg::cli::Args(argv + 1, argv + argc));
  } catch (const seg::Error& e) {
    std::fprintf(stderr, "segtrain: %s\n", e.what());
    return failed(e.exit_code());
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "segtrain: device error: out of host memory\n");
    return failed(4);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "segtrain: error: %s\n", e.what());
    return failed(1);
  }
}
