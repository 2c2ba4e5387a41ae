#include "tools/ranks.h"

#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "core/numbers.h"
#include "core/stream.h"

namespace seg::cli {

namespace {

void run_gpu_threads(const Config& cfg, const CommonFlags& flags, const std::vector<int>& gpus,
                     const std::function<void(const RankContext&)>& body) {
  for (size_t a = 0; a < gpus.size(); ++a)
    for (size_t b = a + 1; b < gpus.size(); ++b)
      if (gpus[a] == gpus[b])
        throw Error(ErrorKind::usage, str("GPU ", gpus[a], " is listed twice in --gpus ", flags.gpus)).key("--gpus");
  for (int g : gpus) require_device(Device::cuda(g));
  std::vector<std::unique_ptr<Communicator>> comms = make_nccl_communicators(gpus);
  std::vector<std::exception_ptr> errors(gpus.size());
  std::mutex failed_mutex;
  std::optional<size_t> first_failed;  // its error is the rank's own, the others' may be the abort
  std::vector<std::thread> threads;
  for (size_t r = 0; r < gpus.size(); ++r) {
    threads.emplace_back([&, r] {
      try {
        // Everything this thread creates (streams, events, allocations) belongs to its GPU.
        set_current_cuda_device(gpus[r]);
        if (flags.comm_timeout > 0) comms[r]->set_timeout_seconds(flags.comm_timeout);
        CommonFlags mine = flags;
        mine.gpus = std::to_string(gpus[r]);
        mine.quiet_engine_line = r != 0;  // the engine settings are the process's: one line says them
        const Device device = resolve_device(mine, &cfg);  // the TF32 setting, the engine line
        body(RankContext{*comms[r], mine, device, r});
        synchronize(device);
      } catch (...) {
        errors[r] = std::current_exception();
        std::lock_guard<std::mutex> lock(failed_mutex);
        if (!first_failed) {
          first_failed = r;
          for (auto& c : comms) c->abort(1);
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  if (first_failed) std::rethrow_exception(errors[*first_failed]);
}

void run_process_per_gpu(const Config& cfg, const CommonFlags& flags, const std::vector<int>& gpus,
                         const std::function<void(const RankContext&)>& body) {
  Communicator& processes = world();
  const char* local_env = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  if (local_env == nullptr) local_env = std::getenv("MPI_LOCALRANKID");
  if (local_env == nullptr)
    throw Error(ErrorKind::usage, "mpirun with --gpus: the launcher did not say which process is which on its machine")
        .key("--gpus")
        .hint("use Open MPI's mpirun (it sets OMPI_COMM_WORLD_LOCAL_RANK)");
  const int local = std::atoi(local_env);
  if (local < 0 || local >= static_cast<int>(gpus.size()))
    throw Error(ErrorKind::usage, str("rank ", processes.rank(), " is process ", local, " of its machine, but --gpus ",
                                      flags.gpus, " names ", gpus.size(), " GPU(s)"))
        .key("--gpus")
        .hint("start at most as many processes per machine as --gpus lists (mpirun -npernode N)");
  CommonFlags mine = flags;
  mine.gpus = std::to_string(gpus[static_cast<size_t>(local)]);
  mine.quiet_engine_line = processes.rank() != 0;  // every process has the same flags: rank 0 says them
  const Device device = resolve_device(mine, &cfg);
  set_current_cuda_device(device.index);
  std::unique_ptr<Communicator> nccl = make_nccl_communicator(processes, device.index);
  if (flags.comm_timeout > 0) nccl->set_timeout_seconds(flags.comm_timeout);
  body(RankContext{*nccl, mine, device, 0});
}

}  // namespace

void run_ranks(const Config& cfg, const CommonFlags& flags, const std::function<void(const RankContext&)>& body) {
  const std::vector<int> gpus = flags.gpus.empty() ? std::vector<int>{} : parse_gpu_list(flags.gpus);
  if (launched_by_mpi() && world().size() > 1 && !gpus.empty()) return run_process_per_gpu(cfg, flags, gpus, body);
  if (gpus.size() > 1) return run_gpu_threads(cfg, flags, gpus, body);
  body(RankContext{world(), flags, resolve_device(flags, &cfg), 0});
}

}  // namespace seg::cli
