// The operations queued on simulated streams: kernels, copies, memsets, host functions, frees and
// markers (stream_ops.h).
#include "kernels/sim/stream_ops.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "kernels/sim/counter_hooks.h"
#include "kernels/sim/device_memory.h"
#include "kernels/sim/worker.h"

namespace seg::sim::detail {

namespace {

std::string pointer_text(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", p);
  return buf;
}

// cudaHostRegister'd ranges: begin -> bytes.
std::mutex g_host_ranges_mutex;
std::map<uintptr_t, size_t>& host_ranges() {
  static std::map<uintptr_t, size_t> m;
  return m;
}

bool in_registered_range(const void* p) {
  const auto x = reinterpret_cast<uintptr_t>(p);
  std::lock_guard<std::mutex> lock(g_host_ranges_mutex);
  auto it = host_ranges().upper_bound(x);
  if (it == host_ranges().begin()) return false;
  --it;
  return x < it->first + it->second;
}

const char* space_name(Space s) {
  switch (s) {
    case Space::pageable:
      return "host";
    case Space::pinned:
      return "pinned host";
    case Space::device:
      return "device";
    case Space::managed:
      return "managed";
    case Space::symbol:
      return "__device__ variable";
  }
  return "?";
}

bool tracked(Space s) { return s != Space::pageable && s != Space::symbol; }

// Whether [p, p + bytes) still lies in a live allocation, for memory a queued op was given.
bool still_live(const void* p, size_t bytes, Space s) {
  if (s == Space::pageable || s == Space::symbol || bytes == 0) return true;
  if (s == Space::pinned && in_registered_range(p)) return true;
  return inside_allocation(p, bytes);
}

class KernelOp final : public Op {
 public:
  explicit KernelOp(std::shared_ptr<const LaunchRequest> r, std::shared_ptr<LastCounted> report_to = nullptr)
      : request_(std::move(r)), report_to_(std::move(report_to)) {}
  // Graph replays are not a host thread's last launch: clones report nowhere.
  OpPtr clone() const override { return std::make_shared<KernelOp>(request_); }
  // Where kernel code is instrumented and checked (the default build) the launch records the global
  // bytes its threads touch, and the race detector checks exactly those, after the run; elsewhere
  // it takes the conservative sets below, before the run.
  bool conservative_accesses() const override { return !exact_accesses(); }
  bool accesses_known_after_run() const override { return exact_accesses(); }
  std::string describe() const override {
    return std::string("kernel ") + request_->kernel_name + " launched at " + relative_path(request_->file) + ":" +
           std::to_string(request_->line);
  }

  void accesses(std::vector<Access>& out) const override {
    if (ran_exact_) {
      out.insert(out.end(), touched_.begin(), touched_.end());
      return;
    }
    std::vector<PointerArgument> args;
    request_->invoker->pointer_arguments(args);
    std::map<uintptr_t, Access> ranges;  // by start: one access per buffer, a write if any argument writes
    for (const PointerArgument& a : args) {
      uintptr_t begin = 0, end = 0;
      if (!a.pointer || !conservative_range(a.pointer, &begin, &end)) continue;
      Access& acc = ranges[begin];
      acc.begin = begin;
      acc.end = std::max(acc.end, end);
      acc.write = acc.write || !a.read_only;
    }
    for (const auto& [begin, acc] : ranges) out.push_back(acc);
  }

  void execute(OpRun& run) override {
    LaunchContext context;
    context.device = device;
    context.accessible_devices = peer_mask(device);
    context.record_accesses = exact_accesses();
    // The per-access checks see exactly which bytes the kernel dereferences (a use after free, a
    // peer access); the argument checks below stand in for them where kernel code is not
    // instrumented (ASan and TSan builds, or SEG_SIM_CHECK_POINTERS=0).
    if (!pointer_checks()) {
      if (std::optional<KernelFault> f = check_freed_arguments()) {
        run.fault = f;
        return;
      }
      if (std::optional<KernelFault> f = check_peer_access(context)) {
        run.fault = f;
        return;
      }
    }
    LaunchResult result = run_launch(*request_, context);
    stats_ = result.stats;
    counters_ = std::move(result.counters);
    touched_ = std::move(result.touched);
    ran_exact_ = context.record_accesses;
    if (report_to_) {
      std::lock_guard<std::mutex> lock(report_to_->mutex);
      if (seq > report_to_->seq) {
        report_to_->seq = seq;
        report_to_->counters = counters_;
      }
    }
  }

  const LaunchStats& stats() const { return stats_; }

 private:
  // SEG_SIM_CHECK_POINTERS=0 turns the per-access machinery off (except for the counters): no
  // checks, no recorded accesses; the argument checks and conservative sets stand in.
  static bool exact_accesses() { return pointer_checks() && options().race_check; }
  static bool pointer_checks() { return kernel_code_instrumented() && options().check_pointers; }

  // Memory released by cudaFreeAsync before the kernel ran: the kernel would touch unmapped memory.
  std::optional<KernelFault> check_freed_arguments() const {
    std::vector<PointerArgument> args;
    request_->invoker->pointer_arguments(args);
    for (const PointerArgument& a : args) {
      uintptr_t begin = 0;
      size_t bytes = 0;
      if (!a.pointer || inside_allocation(a.pointer, 1) || !freed_by_stream_order(a.pointer, &begin, &bytes)) continue;
      return KernelFault(FaultKind::bad_address,
                         "seg::sim: use after a stream-ordered free: " + describe() + ": argument " +
                             std::to_string(a.index + 1) + " (" + pointer_text(a.pointer) + ") points into a " +
                             std::to_string(bytes) +
                             "-byte allocation that cudaFreeAsync released before the kernel ran");
    }
    return std::nullopt;
  }

  // Conservative: a pointer argument into another device's memory is a fault even if the kernel
  // never dereferences it (the per-access checks can do it exactly with the LaunchContext).
  std::optional<KernelFault> check_peer_access(const LaunchContext& context) const {
    std::vector<PointerArgument> args;
    request_->invoker->pointer_arguments(args);
    for (const PointerArgument& a : args) {
      AllocationInfo info;
      if (!a.pointer || !find_allocation(a.pointer, &info) || info.kind != MemoryKind::device) continue;
      if (info.device == context.device || (context.accessible_devices >> info.device & 1u)) continue;
      const std::string d = std::to_string(context.device), p = std::to_string(info.device);
      return KernelFault(
          FaultKind::peer_access,
          "seg::sim: peer access not enabled: " + describe() + " on device " + d + " was given a pointer into device " +
              p + "'s memory (argument " + std::to_string(a.index + 1) + ", " + pointer_text(a.pointer) + ", in a " +
              std::to_string(info.bytes) + "-byte allocation), but device " + d + " has no peer access to device " + p +
              "; call cudaDeviceEnablePeerAccess(" + p + ", 0) while device " + d +
              " is current (cudaDeviceCanAccessPeer says whether it can), or copy the data with "
              "cudaMemcpyPeerAsync\n  (checked at launch, for every pointer argument)");
    }
    return std::nullopt;
  }

  std::shared_ptr<const LaunchRequest> request_;
  std::shared_ptr<LastCounted> report_to_;
  LaunchStats stats_;
  std::shared_ptr<const KernelCounters> counters_;
  std::vector<Access> touched_;  // the global bytes it touched (exact_accesses)
  bool ran_exact_ = false;
};

class CopyOp final : public Op {
 public:
  explicit CopyOp(const CopySpec& s) : s_(s) {}
  OpPtr clone() const override { return std::make_shared<CopyOp>(s_); }
  std::string describe() const override {
    const size_t bytes = s_.width * s_.height;
    return std::string(s_.api) + " (" + space_name(s_.src_space) + " to " + space_name(s_.dst_space) + ", " +
           std::to_string(bytes) + " bytes) called from " + describe_code_address(s_.caller);
  }

  void accesses(std::vector<Access>& out) const override {
    auto rows = [&](const void* base, size_t pitch, bool write) {
      const auto b = reinterpret_cast<uintptr_t>(base);
      if (pitch == s_.width || s_.height == 1) {
        out.push_back({b, b + pitch * (s_.height - 1) + s_.width, write});
        return;
      }
      for (size_t r = 0; r < s_.height; ++r) out.push_back({b + r * pitch, b + r * pitch + s_.width, write});
    };
    if (tracked(s_.dst_space)) rows(s_.dst, s_.dpitch, true);
    if (tracked(s_.src_space) && !s_.staged) rows(s_.src, s_.spitch, false);
  }

  void execute(OpRun& run) override {
    const size_t dspan = s_.dpitch * (s_.height - 1) + s_.width, sspan = s_.spitch * (s_.height - 1) + s_.width;
    const bool dst_ok = still_live(s_.dst, dspan, s_.dst_space);
    if (!dst_ok || (!s_.staged && !still_live(s_.src, sspan, s_.src_space))) {
      run.fault.emplace(FaultKind::bad_address,
                        "seg::sim: " + describe() + ": its " +
                            (dst_ok ? "source " + pointer_text(s_.src) : "destination " + pointer_text(s_.dst)) +
                            " was freed before the queued copy ran");
      return;
    }
    const auto* src = s_.staged ? s_.staged->data() : static_cast<const unsigned char*>(s_.src);
    const size_t spitch = s_.staged ? s_.width : s_.spitch;
    auto* dst = static_cast<unsigned char*>(s_.dst);
    if (s_.height == 1 || (s_.dpitch == s_.width && spitch == s_.width)) {
      std::memmove(dst, src, s_.width * s_.height);
      return;
    }
    for (size_t r = 0; r < s_.height; ++r) std::memmove(dst + r * s_.dpitch, src + r * spitch, s_.width);
  }

 private:
  CopySpec s_;
};

class MemsetOp final : public Op {
 public:
  MemsetOp(void* dst, size_t pitch, int value, size_t width, size_t height, const char* api, const void* caller)
      : dst_(dst), pitch_(pitch), value_(value), width_(width), height_(height), api_(api), caller_(caller) {}
  OpPtr clone() const override {
    return std::make_shared<MemsetOp>(dst_, pitch_, value_, width_, height_, api_, caller_);
  }
  std::string describe() const override {
    return std::string(api_) + " (" + std::to_string(width_ * height_) + " bytes) called from " +
           describe_code_address(caller_);
  }
  void accesses(std::vector<Access>& out) const override {
    const auto b = reinterpret_cast<uintptr_t>(dst_);
    if (pitch_ == width_ || height_ == 1) {
      out.push_back({b, b + pitch_ * (height_ - 1) + width_, true});
      return;
    }
    for (size_t r = 0; r < height_; ++r) out.push_back({b + r * pitch_, b + r * pitch_ + width_, true});
  }
  void execute(OpRun& run) override {
    if (!inside_allocation(dst_, pitch_ * (height_ - 1) + width_)) {
      run.fault.emplace(FaultKind::bad_address, "seg::sim: " + describe() + ": its destination " + pointer_text(dst_) +
                                                    " was freed before the queued memset ran");
      return;
    }
    auto* d = static_cast<unsigned char*>(dst_);
    for (size_t r = 0; r < height_; ++r) std::memset(d + r * pitch_, value_, width_);
  }

 private:
  void* dst_;
  size_t pitch_;
  int value_;
  size_t width_, height_;
  const char* api_;
  const void* caller_;
};

class HostFunctionOp final : public Op {
 public:
  HostFunctionOp(cudaHostFn_t fn, cudaStreamCallback_t callback, cudaStream_t stream, void* data, const void* caller)
      : fn_(fn), callback_(callback), stream_(stream), data_(data), caller_(caller) {}
  Class op_class() const override { return Class::host; }
  OpPtr clone() const override { return std::make_shared<HostFunctionOp>(fn_, callback_, stream_, data_, caller_); }
  std::string describe() const override {
    return std::string(fn_ ? "host function" : "stream callback") + " queued from " + describe_code_address(caller_);
  }
  void execute(OpRun&) override {
    HostThread& h = host_thread();
    h.in_host_function = true;
    struct Reset {
      HostThread& h;
      ~Reset() { h.in_host_function = false; }
    } reset{h};
    if (fn_)
      fn_(data_);
    else
      callback_(stream_, cudaSuccess, data_);
  }

 private:
  cudaHostFn_t fn_;
  cudaStreamCallback_t callback_;
  cudaStream_t stream_;
  void* data_;
  const void* caller_;
};

class FreeOp final : public Op {
 public:
  FreeOp(void* p, const void* caller) : p_(p), caller_(caller) {}
  OpPtr clone() const override { return std::make_shared<FreeOp>(p_, caller_); }
  std::string describe() const override {
    return "cudaFreeAsync(" + pointer_text(p_) + ") called from " + describe_code_address(caller_);
  }
  void accesses(std::vector<Access>& out) const override {
    AllocationInfo info;
    if (find_allocation(p_, &info)) out.push_back({info.begin, info.begin + std::max<size_t>(info.bytes, 1), true});
  }
  void execute(OpRun& run) override {
    AllocationInfo info;
    const bool found = find_allocation(p_, &info) && info.begin == reinterpret_cast<uintptr_t>(p_);
    if (!found || !free_memory(p_, info.kind)) {
      run.fault.emplace(FaultKind::bad_address,
                        "seg::sim: " + describe() + ": the pointer is no longer a live allocation (freed twice?)");
      return;
    }
    forget_allocation(info.begin, info.bytes, true);
  }

 private:
  void* p_;
  const void* caller_;
};

class MarkerOp final : public Op {
 public:
  explicit MarkerOp(const char* what) : what_(what) {}
  Class op_class() const override { return Class::marker; }
  OpPtr clone() const override { return std::make_shared<MarkerOp>(what_); }
  std::string describe() const override { return what_; }
  void execute(OpRun&) override {}

 private:
  const char* what_;
};

}  // namespace

Space space_of(const void* p) {
  AllocationInfo info;
  if (find_allocation(p, &info)) {
    switch (info.kind) {
      case MemoryKind::device:
        return Space::device;
      case MemoryKind::managed:
        return Space::managed;
      case MemoryKind::pinned_host:
        return Space::pinned;
    }
  }
  return in_registered_range(p) ? Space::pinned : Space::pageable;
}

void register_host_range(const void* p, size_t bytes) {
  std::lock_guard<std::mutex> lock(g_host_ranges_mutex);
  host_ranges()[reinterpret_cast<uintptr_t>(p)] = bytes;
}

bool unregister_host_range(const void* p) {
  std::lock_guard<std::mutex> lock(g_host_ranges_mutex);
  return host_ranges().erase(reinterpret_cast<uintptr_t>(p)) != 0;
}

OpPtr make_kernel_op(std::shared_ptr<const LaunchRequest> request, std::shared_ptr<LastCounted> report_to) {
  return std::make_shared<KernelOp>(std::move(request), std::move(report_to));
}
OpPtr make_copy_op(const CopySpec& spec) { return std::make_shared<CopyOp>(spec); }
OpPtr make_memset_op(void* dst, size_t pitch, int value, size_t width, size_t height, const char* api,
                     const void* caller) {
  return std::make_shared<MemsetOp>(dst, pitch, value, width, height, api, caller);
}
OpPtr make_host_function_op(cudaHostFn_t fn, void* user_data, const void* caller) {
  return std::make_shared<HostFunctionOp>(fn, nullptr, nullptr, user_data, caller);
}
OpPtr make_stream_callback_op(cudaStreamCallback_t fn, cudaStream_t stream, void* user_data, const void* caller) {
  return std::make_shared<HostFunctionOp>(nullptr, fn, stream, user_data, caller);
}
OpPtr make_free_op(void* p, const void* caller) { return std::make_shared<FreeOp>(p, caller); }
OpPtr make_marker_op(const char* what) { return std::make_shared<MarkerOp>(what); }

const LaunchStats* kernel_op_stats(const Op& op) {
  const auto* k = dynamic_cast<const KernelOp*>(&op);
  return k ? &k->stats() : nullptr;
}


}  // namespace seg::sim::detail
