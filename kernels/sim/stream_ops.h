// The operations that can be queued on a simulated stream (internal header; stream_executor.h
// describes how they are ordered and run).
#pragma once

#include <cuda_runtime.h>

#include <memory>
#include <vector>

#include <memory>
#include <mutex>

#include "kernels/sim/stream_executor.h"

namespace seg::sim {
struct KernelCounters;  // counters.h
}  // namespace seg::sim

namespace seg::sim::detail {

// Where the bytes of one side of a copy live. Pageable host memory is ordinary host memory (not
// from cudaMallocHost/cudaHostAlloc/cudaHostRegister): the runtime stages or synchronises copies
// from and to it, so those bytes are not tracked by the race detector.
// A __device__ variable (symbol copies) is an ordinary global of the simulator build: `symbol`.
enum class Space : uint8_t { pageable, pinned, device, managed, symbol };
Space space_of(const void* p);
// Marks [p, p + bytes) as page-locked (cudaHostRegister) / forgets it.
void register_host_range(const void* p, size_t bytes);
bool unregister_host_range(const void* p);

struct CopySpec {
  void* dst = nullptr;
  const void* src = nullptr;
  size_t dpitch = 0, spitch = 0, width = 0, height = 1;
  Space dst_space = Space::device, src_space = Space::device;
  // Pageable sources are copied into `staged` at the call (the runtime's staging buffer).
  std::shared_ptr<const std::vector<unsigned char>> staged;
  const char* api = "cudaMemcpyAsync";
  const void* caller = nullptr;
};

// The latest launch of one host thread that ran without a fault: its counters (null when it was
// not counted), for last_launch_counters(). Written by whichever thread runs the launch.
struct LastCounted {
  std::mutex mutex;
  uint64_t seq = 0;  // the op's enqueue number
  std::shared_ptr<const KernelCounters> counters;
};
// `report_to`: where the launch, once it ran without a fault, leaves its counters (may be null).
OpPtr make_kernel_op(std::shared_ptr<const LaunchRequest> request, std::shared_ptr<LastCounted> report_to = nullptr);
OpPtr make_copy_op(const CopySpec& spec);
OpPtr make_memset_op(void* dst, size_t pitch, int value, size_t width, size_t height, const char* api,
                     const void* caller);
OpPtr make_host_function_op(cudaHostFn_t fn, void* user_data, const void* caller);
OpPtr make_stream_callback_op(cudaStreamCallback_t fn, cudaStream_t stream, void* user_data, const void* caller);
OpPtr make_free_op(void* p, const void* caller);
// Event records, event waits and graph joins: they only order other ops.
OpPtr make_marker_op(const char* what);

// The statistics of a kernel op that has run (null for other ops).
const LaunchStats* kernel_op_stats(const Op& op);

}  // namespace seg::sim::detail
