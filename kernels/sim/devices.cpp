// The simulated devices: how many there are (SEG_SIM_DEVICES, seg::sim::set_device_count), each
// one's legacy default stream, peer-access set and fault state.
//
// Every device is the same simulated sm_90 GPU with its own 80 GiB of memory accounting. Every
// pair of distinct devices can access each other (as NVLink-connected GPUs can), once the
// accessing device enables it with cudaDeviceEnablePeerAccess.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "kernels/sim/device_memory.h"
#include "kernels/sim/stream_executor.h"

namespace seg::sim::detail {

namespace {

DeviceState g_devices[kMaxDevices];
std::atomic<uint64_t> g_peers[kMaxDevices];  // mirror of DeviceState::peers, readable without the lock
std::atomic<int> g_count{0};

int count_from_environment() {
  const char* v = std::getenv("SEG_SIM_DEVICES");
  if (!v || !*v) return 1;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (*end != '\0' || n < 1 || n > kMaxDevices)
    throw std::invalid_argument(std::string("seg::sim: environment variable SEG_SIM_DEVICES='") + v +
                                "' is not valid; expected an integer in [1, 64]");
  return static_cast<int>(n);
}

}  // namespace

int current_device_count() {
  int n = g_count.load();
  if (n == 0) {
    int expected = 0;
    g_count.compare_exchange_strong(expected, count_from_environment());
    n = g_count.load();
  }
  return n;
}

bool valid_device(int device) { return device >= 0 && device < current_device_count(); }

DeviceState& device_state(int device) {
  DeviceState& d = g_devices[device];
  if (!d.legacy) {
    d.legacy = std::make_unique<CUstream_st>();
    d.legacy->kind = CUstream_st::Kind::legacy;
    d.legacy->device = device;
    d.legacy->component = new_component();
  }
  return d;
}

uint64_t peer_mask(int device) { return g_peers[device].load() | (uint64_t{1} << device); }

void set_peer_access(int device, int peer, bool enabled) {
  DeviceState& d = device_state(device);
  if (enabled)
    d.peers |= uint64_t{1} << peer;
  else
    d.peers &= ~(uint64_t{1} << peer);
  g_peers[device].store(d.peers);
}

}  // namespace seg::sim::detail

namespace seg::sim {

int device_count() { return detail::current_device_count(); }

void set_device_count(int devices) {
  using namespace detail;
  if (devices < 1 || devices > kMaxDevices)
    throw std::invalid_argument("seg::sim::set_device_count: " + std::to_string(devices) + " is not in [1, 64]");
  Lock lock = runtime_lock();
  for (int d = devices; d < current_device_count(); ++d) {
    if (allocation_count(d) != 0 || user_stream_count(d) != 0 || !pending_ops(d).empty())
      throw std::logic_error("seg::sim::set_device_count(" + std::to_string(devices) + "): device " +
                             std::to_string(d) + " still holds memory, streams or queued work");
  }
  for (int d = 0; d < kMaxDevices; ++d) {
    if (d >= devices) {
      device_state(d).peers = 0;
      g_peers[d].store(0);
    }
    for (int p = devices; p < kMaxDevices; ++p) set_peer_access(d, p, false);
  }
  g_count.store(devices);
  if (host_thread().device >= devices) host_thread().device = 0;
}

ScopedDeviceCount::~ScopedDeviceCount() {
  try {
    set_device_count(saved_);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
  }
}

}  // namespace seg::sim
