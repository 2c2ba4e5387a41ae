// segtrain demo: the README's main command.
//
// Until the data pipeline and the real models land (issues 6, 5 and 7), the demo trains the toy
// three-layer net of models/toy_net.h on its toy task: the end-to-end proof that tensors, autograd,
// ops and SGD work together. It prints the loss as it falls and the final pixel accuracy.
#include <chrono>
#include <cstdio>

#include "core/error.h"
#include "kernels/cpu/thread_pool.h"
#include "models/toy_net.h"
#include "tools/cli.h"

namespace seg::cli {

int cmd_demo(const Args& args) {
  if (wants_help(args)) {
    std::printf(
        "usage: segtrain demo\n\n"
        "Trains a small conv net on a generated toy segmentation task on the CPU and prints the loss\n"
        "and the pixel accuracy it reaches (a stand-in until the full demo on the synthetic ADE-format\n"
        "dataset lands).\n\nexample:\n  segtrain demo\n");
    return 0;
  }
  if (!args.empty()) throw Error(ErrorKind::usage, "segtrain demo takes no arguments yet, got '" + args[0] + "'");
  ToyTrainOptions opt;
  std::printf("segtrain demo: toy segmentation task, 3-layer conv net, %lld steps of SGD, batch %lld, %lldx%lld, %d threads\n",
              static_cast<long long>(opt.steps), static_cast<long long>(opt.batch), static_cast<long long>(opt.size),
              static_cast<long long>(opt.size), num_threads());
  const auto t0 = std::chrono::steady_clock::now();
  const ToyTrainResult r = train_toy_net(opt, [](int64_t step, double loss) {
    if (step % 50 == 0 || step == 299) std::printf("  step %4lld  loss %.4f\n", static_cast<long long>(step), loss);
  });
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("loss %.4f -> %.4f (%.0fx lower), pixel accuracy on unseen images %.3f, %.1f s\n", r.first_loss,
              r.last_loss, r.first_loss / r.last_loss, r.pixel_accuracy, secs);
  return r.first_loss > 10 * r.last_loss ? 0 : 1;
}

}  // namespace seg::cli
