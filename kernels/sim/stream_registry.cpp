// Stream and event handles: which are live, and what 0, cudaStreamLegacy and cudaStreamPerThread
// mean for the calling thread. All functions expect the runtime lock held.
#include <algorithm>
#include <set>

#include "kernels/sim/stream_executor.h"

namespace seg::sim::detail {

namespace {

std::map<cudaStream_t, std::unique_ptr<CUstream_st>>& user_streams() {
  static auto* m = new std::map<cudaStream_t, std::unique_ptr<CUstream_st>>();  // never freed: used at exit
  return *m;
}
// Per-thread default streams outlive their threads (work queued on them may still run).
std::vector<std::unique_ptr<CUstream_st>>& per_thread_streams() {
  static auto* v = new std::vector<std::unique_ptr<CUstream_st>>();
  return *v;
}
std::set<cudaEvent_t>& events() {
  static auto* s = new std::set<cudaEvent_t>();
  return *s;
}
uint64_t g_next_stream_id = 1;

}  // namespace

CUstream_st* resolve_stream(cudaStream_t handle) {
  HostThread& h = host_thread();
  if (handle == nullptr || handle == cudaStreamLegacy) return device_state(h.device).legacy.get();
  if (handle == cudaStreamPerThread) {
    CUstream_st*& s = h.per_thread[h.device];
    if (!s) {
      per_thread_streams().push_back(std::make_unique<CUstream_st>());
      s = per_thread_streams().back().get();
      s->kind = CUstream_st::Kind::per_thread;
      s->device = h.device;
      s->id = g_next_stream_id++;
      s->component = new_component();
      device_state(h.device).blocking.push_back(s);
    }
    return s;
  }
  auto it = user_streams().find(handle);
  return it == user_streams().end() ? nullptr : it->second.get();
}

CUstream_st* create_stream(int device, unsigned flags, int priority) {
  auto s = std::make_unique<CUstream_st>();
  s->device = device;
  s->flags = flags;
  s->priority = priority;
  s->id = g_next_stream_id++;
  s->component = new_component();
  CUstream_st* raw = s.get();
  if (raw->blocking()) device_state(device).blocking.push_back(raw);
  user_streams().emplace(raw, std::move(s));
  return raw;
}

bool destroy_stream(cudaStream_t handle) {
  auto it = user_streams().find(handle);
  if (it == user_streams().end()) return false;
  CUstream_st* s = it->second.get();
  // Work still queued on it runs anyway (as the runtime promises); ops only keep its id.
  auto& blocking = device_state(s->device).blocking;
  blocking.erase(std::remove(blocking.begin(), blocking.end(), s), blocking.end());
  if (s->capture) {
    invalidate(*s->capture, cudaErrorStreamCaptureInvalidated);
    auto& members = s->capture->streams;
    members.erase(std::remove(members.begin(), members.end(), s), members.end());
  }
  user_streams().erase(it);
  return true;
}

size_t user_stream_count(int device) {
  size_t n = 0;
  for (const auto& [handle, s] : user_streams()) n += s->device == device;
  return n;
}

bool valid_event(cudaEvent_t e) { return e && events().count(e) != 0; }
void register_event(cudaEvent_t e) { events().insert(e); }
bool unregister_event(cudaEvent_t e) { return events().erase(e) != 0; }

}  // namespace seg::sim::detail
