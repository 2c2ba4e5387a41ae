// cudaProfilerStart / cudaProfilerStop (cuda_profiler_api.h) in the simulator. On a GPU they open and
// close a profiler's capture range (`nsys profile --capture-range=cudaProfilerApi`,
// `ncu --profile-from-start off`) and do nothing when no profiler is attached. The simulator has no
// profiler; it records each call (sim.h, "the profiler API") so that a test can check which work a
// capture would hold: whether a range was open, and how much queued work was still unfinished when
// it closed (a stop before the device finished would cut the last kernels out of an Nsight capture).
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>

#include <functional>
#include <mutex>
#include <utility>
#include <vector>

#include "kernels/sim/sim.h"
#include "kernels/sim/stream_executor.h"

namespace seg::sim {

namespace {
std::mutex g_mutex;
std::vector<ProfilerCall> g_calls;
bool g_capturing = false;
std::function<void(const ProfilerCall&)> g_listener;

cudaError_t record(bool start) {
  ProfilerCall call;
  call.start = start;
  {
    detail::Lock lock = detail::runtime_lock();
    call.unfinished_ops = detail::pending_ops(-1).size();
  }
  std::function<void(const ProfilerCall&)> listener;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    call.was_capturing = g_capturing;
    g_capturing = start;  // a second start (or stop) has no effect, as on a GPU
    g_calls.push_back(call);
    listener = g_listener;
  }
  if (listener) listener(call);  // outside the lock: the listener may read the simulator's state
  return cudaSuccess;
}
}  // namespace

std::vector<ProfilerCall> profiler_calls() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_calls;
}

void reset_profiler_calls() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_calls.clear();
  g_capturing = false;
}

bool profiler_capturing() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_capturing;
}

void set_profiler_listener(std::function<void(const ProfilerCall&)> listener) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_listener = std::move(listener);
}

}  // namespace seg::sim

cudaError_t cudaProfilerStart(void) { return seg::sim::record(true); }
cudaError_t cudaProfilerStop(void) { return seg::sim::record(false); }
