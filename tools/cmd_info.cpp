// segtrain info: what this binary was built with and what it can run on.
#include <cstdio>

#include "core/amp_policy.h"
#include "core/comm.h"
#include "core/device.h"
#include "core/error.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/thread_pool.h"
#include "models/registry.h"
#include "tools/cli.h"
#include "tools/config.h"
#include "tools/model_setup.h"

namespace seg::cli {

int cmd_info(const Args& args) {
  if (wants_help(args)) {
    std::printf("usage: segtrain info [--amp | --keys]\n\nPrints the build configuration (CUDA, simulator, cuDNN, NCCL, MPI),\n"
                "the CPU features in use, the thread count and the CUDA devices found.\n"
                "--amp prints the mixed-precision policy table of all four levels.\n"
                "--keys lists every config key with its type, default and meaning (as segtrain train --help-keys).\n\n"
                "examples:\n  segtrain info\n  segtrain info --amp\n  segtrain info --keys\n");
    return 0;
  }
  for (const auto& a : args) {
    if (a == "--amp") {
      std::printf("mixed-precision policy (what each op computes in, per level; see docs/mixed-precision.md)\n\n%s",
                  amp_policy_overview().c_str());
      return 0;
    }
    if (a == "--keys") {
      std::printf("%s", format_config_keys().c_str());
      return 0;
    }
    throw Error(ErrorKind::usage, "segtrain info: unknown option '" + a + "'").hint("see segtrain info --help");
  }
  auto yes = [](bool b) { return b ? "yes" : "no"; };
  std::printf("segtrain %s (%s build)\n", SEG_VERSION, SEG_BUILD_TYPE);
  std::printf("build:\n");
  std::printf("  CUDA backend     %s\n", yes(SEG_BUILD_CUDA));
  std::printf("  CUDA simulator   %s (tests only)\n", yes(SEG_BUILD_SIM));
  std::printf("  cuDNN            %s\n", cuda_compiled() ? "engine built (kernels/cuda/engine.h; library loaded at run time)"
                                                       : "no (CUDA builds only: the cuDNN convolution engine)");
  std::printf("  NCCL             %s\n", built_with_nccl() ? "yes (segtrain train --gpus 0-1: a thread per GPU; docs/distributed.md)"
                                                      : "no (CUDA builds with libnccl only)");
  std::printf("  MPI              %s\n", built_with_mpi() ? "yes (mpirun -np N segtrain train ...: docs/distributed.md)"
                                                     : "no (install libopenmpi-dev and rebuild)");
  std::printf("  sanitizers       %s\n", SEG_BUILD_SANITIZE[0] ? SEG_BUILD_SANITIZE : "none");
  std::printf("cpu:\n");
  std::printf("  SIMD             %s (detected %s)\n", cpu_isa_name(cpu_isa()), cpu_isa_name(cpu_isa_detected()));
  std::printf("  threads          %d\n", num_threads());
  const CudaProbe cuda = probe_cuda();
  if (!cuda.compiled) {
    std::printf("cuda devices:      0 (built without CUDA)\n");
  } else {
    std::printf("cuda devices:      %d%s (runtime %s, driver %s)%s\n", cuda.devices,
                cuda.simulated ? " simulated (a test build on kernels/sim)" : "",
                cuda_version_string(cuda.runtime_version).c_str(),
                cuda.driver_version ? cuda_version_string(cuda.driver_version).c_str() : "none",
                cuda.error.empty() ? "" : (": " + cuda.error).c_str());
    for (size_t i = 0; i < cuda.names.size(); ++i) std::printf("  cuda:%zu           %s\n", i, cuda.names[i].c_str());
  }
  // Built without initialisation (zeros), so the listing costs allocations only.
  std::printf("models (upstream's configs, 150 classes; every encoder and decoder name: docs/models.md):\n");
  std::printf("  %-33s %13s %13s %13s\n", "encoder-decoder", "encoder", "decoder", "total");
  for (const auto& [enc, dec] : upstream_model_pairs()) {
    ModelConfig mc;
    mc.arch_encoder = enc;
    mc.arch_decoder = dec;
    mc.fc_dim = fc_dim_for(enc);
    const auto m = build_segmentation_module(mc, false);
    const int64_t e = m->encoder->num_parameters(), d = m->decoder->num_parameters();
    std::printf("  %-33s %13lld %13lld %13lld\n", (enc + "-" + dec).c_str(), static_cast<long long>(e),
                static_cast<long long>(d), static_cast<long long>(e + d));
  }
  return 0;
}

}  // namespace seg::cli
