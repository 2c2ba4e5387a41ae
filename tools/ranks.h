// Where a command's ranks run and how they talk: one place that reads --gpus and the launcher, so
// train, eval and predict lay out their ranks the same way (docs/distributed.md).
//
//   --gpus with 2+ GPUs, no mpirun   one process, a host thread per GPU, NCCL between them
//                                    (ncclCommInitAll); the body runs once per GPU, concurrently
//   mpirun + --gpus LIST             one process per GPU: the process of local rank i drives LIST[i],
//                                    NCCL's unique id travels over MPI (ncclCommInitRank). Written
//                                    against NCCL's API, never run: the simulator's NCCL lives in
//                                    one process
//   anything else                    world(): one process, or mpirun's CPU ranks over MPI; the
//                                    device from --gpus N / --device
#pragma once

#include <cstddef>
#include <functional>

#include "core/comm.h"
#include "core/device.h"
#include "tools/config.h"
#include "tools/run_setup.h"

namespace seg::cli {

struct RankContext {
  Communicator& comm;        // this rank's communicator (rank() 0 prints and writes shared files)
  const CommonFlags& flags;  // the command's flags, --gpus narrowed to this rank's GPU
  Device device;             // resolved (resolve_device: the TF32/engine choice and its line are set)
  size_t local;              // index of this body among the process's threads (0 without threads)
};

// Runs `body` once per rank of this process, as the table above says. With threads, a rank that
// throws aborts the others' communicators, so none waits in a collective for it; the exception
// rethrown is the first rank's own, not another's abort. Each thread's device is idle when its body
// returns. A GPU listed twice in --gpus is a usage error.
void run_ranks(const Config& cfg, const CommonFlags& flags, const std::function<void(const RankContext&)>& body);

}  // namespace seg::cli
