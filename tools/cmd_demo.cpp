// segtrain demo: the README's main command.
#include <cstdio>

#include "core/error.h"
#include "tools/cli.h"

namespace seg::cli {

int cmd_demo(const Args& args) {
  if (wants_help(args)) {
    std::printf("usage: segtrain demo\n\nTrains a small model on generated data (not implemented yet).\n");
    return 0;
  }
  throw Error(ErrorKind::runtime, "segtrain demo is not implemented yet (Foundation II brings a first toy run)");
}

}  // namespace seg::cli
