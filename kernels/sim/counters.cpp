// The performance counters (counters.h): grouping the accesses of one warp-level instruction,
// sectors, shared-memory wavefronts, tensor-core work, and the per-launch and per-kernel totals.
//
// Grouping. Kernel code reaches count_access once per lane and access (access_check.cpp), in
// whatever order the schedule runs the lanes. The k-th time lane l executes access site s since its
// warp last reconverged is request k of site s; when every live lane of the warp has contributed to
// the oldest pending request of a site, that request is complete and is counted. Barriers and
// full-warp collectives are reconvergence points: every lane of the warp is there, so everything
// pending is counted and the per-site execution counts start again from zero. Requests that some
// live lane never executes (divergent code) are counted there, or at the end of the block, with
// the lanes that did.
#include "kernels/sim/counters.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "kernels/sim/counter_hooks.h"
#include "kernels/sim/kernel_resources.h"
#include "kernels/sim/worker.h"

namespace seg::sim::detail {

namespace {

struct LaneAccess {
  uintptr_t address;
  uint32_t bytes;
  MemorySpace space;
  bool store;
};

struct Request {
  uint32_t lanes = 0;
  LaneAccess access[32];
};

struct SiteTrack {
  uint32_t next[32] = {};  // per lane: its next execution index since the warp reconverged
  uint32_t base = 0;       // execution index of pending.front()
  std::deque<Request> pending;
};

struct WarpTrack {
  std::unordered_map<uintptr_t, SiteTrack> sites;
};

}  // namespace

// The counts of one launch: per worker while blocks run, then summed into the launch's.
struct LaunchCounters {
  KernelCounters counts;
  std::unordered_set<uint64_t> sectors;  // distinct 32-byte sectors (address / 32)
};

namespace {

struct WorkerCounters {
  Worker* worker = nullptr;
  LaunchCounters local;
  std::vector<WarpTrack> warps;
};

thread_local WorkerCounters* tls_counters = nullptr;

// ---- counting one finished request -------------------------------------------------------------

void add_global(WorkerCounters& wc, const LaneAccess* acc, const uint32_t lanes, bool store) {
  MemoryCounters& m = store ? wc.local.counts.global_store : wc.local.counts.global_load;
  uint64_t sectors[1024];
  unsigned n = 0;
  for (unsigned l = 0; l < 32; ++l) {
    if (!(lanes >> l & 1u)) continue;
    const LaneAccess& a = acc[l];
    m.bytes += a.bytes;
    for (uint64_t s = a.address >> 5; s <= (a.address + a.bytes - 1) >> 5; ++s) {
      if (n < 1024) sectors[n++] = s;
      wc.local.sectors.insert(s);
    }
  }
  std::sort(sectors, sectors + n);
  m.sectors += static_cast<uint64_t>(std::unique(sectors, sectors + n) - sectors);
  ++m.requests;
}

// Wavefronts of one phase: the most distinct 4-byte words any bank must deliver (at least 1).
uint64_t phase_wavefronts(const uint64_t* words, unsigned n) {
  uint64_t sorted[512];
  const unsigned k = std::min(n, 512u);
  std::copy(words, words + k, sorted);
  std::sort(sorted, sorted + k);
  const unsigned distinct = static_cast<unsigned>(std::unique(sorted, sorted + k) - sorted);
  unsigned per_bank[32] = {};
  unsigned most = 0;
  for (unsigned i = 0; i < distinct; ++i) most = std::max(most, ++per_bank[sorted[i] & 31u]);
  return std::max(most, 1u);
}

// Lanes per phase by access size: 32 for 4 bytes or less, 16 for 8, 8 for 16 and more.
unsigned phase_lanes(uint32_t bytes) { return bytes <= 4 ? 32 : (bytes <= 8 ? 16 : 8); }

void add_shared(WorkerCounters& wc, const LaneAccess* acc, uint32_t lanes, bool store) {
  MemoryCounters& m = store ? wc.local.counts.shared_store : wc.local.counts.shared_load;
  uint32_t widest = 0;
  for (unsigned l = 0; l < 32; ++l)
    if (lanes >> l & 1u) widest = std::max(widest, acc[l].bytes);
  const unsigned per_phase = phase_lanes(widest);
  for (unsigned first = 0; first < 32; first += per_phase) {
    uint64_t words[512];
    unsigned n = 0;
    bool active = false;
    for (unsigned l = first; l < first + per_phase; ++l) {
      if (!(lanes >> l & 1u)) continue;
      active = true;
      const LaneAccess& a = acc[l];
      m.bytes += a.bytes;
      for (uint64_t w = a.address >> 2; w <= (a.address + a.bytes - 1) >> 2 && n < 512; ++w) words[n++] = w;
    }
    if (!active) continue;
    const uint64_t wavefronts = phase_wavefronts(words, n);
    m.sectors += wavefronts;
    m.bank_conflicts += wavefronts - 1;
  }
  ++m.requests;
}

void finish_request(WorkerCounters& wc, const Request& r) {
  // Lanes normally agree on the space and direction; a generic pointer can make them differ, and
  // then each group counts as its own request.
  uint32_t left = r.lanes;
  while (left) {
    const unsigned first = static_cast<unsigned>(__builtin_ctz(left));
    const MemorySpace space = r.access[first].space;
    const bool store = r.access[first].store;
    uint32_t group = 0;
    for (unsigned l = first; l < 32; ++l)
      if ((left >> l & 1u) && r.access[l].space == space && r.access[l].store == store) group |= 1u << l;
    left &= ~group;
    if (space == MemorySpace::global)
      add_global(wc, r.access, group, store);
    else
      add_shared(wc, r.access, group, store);
    ++wc.local.counts.warp_instructions;
    wc.local.counts.active_lanes += static_cast<uint64_t>(__builtin_popcount(group));
  }
}

void flush_warp(WorkerCounters& wc, unsigned warp) {
  WarpTrack& t = wc.warps[warp];
  for (auto& [site, st] : t.sites)
    for (const Request& r : st.pending)
      if (r.lanes) finish_request(wc, r);
  t.sites.clear();
}

void flush_all(WorkerCounters& wc) {
  for (unsigned w = 0; w < wc.warps.size(); ++w) flush_warp(wc, w);
}

void add_counts(KernelCounters& into, const KernelCounters& c) {
  auto add_memory = [](MemoryCounters& a, const MemoryCounters& b) {
    a.requests += b.requests;
    a.sectors += b.sectors;
    a.bytes += b.bytes;
    a.bank_conflicts += b.bank_conflicts;
  };
  add_memory(into.global_load, c.global_load);
  add_memory(into.global_store, c.global_store);
  add_memory(into.shared_load, c.shared_load);
  add_memory(into.shared_store, c.shared_store);
  into.global_unique_sectors += c.global_unique_sectors;
  into.mma_instructions += c.mma_instructions;
  into.tensor_f16_flops += c.tensor_f16_flops;
  into.tensor_tf32_flops += c.tensor_tf32_flops;
  into.fp32_fma += c.fp32_fma;
  into.barriers += c.barriers;
  into.warp_collectives += c.warp_collectives;
  into.warp_instructions += c.warp_instructions;
  into.active_lanes += c.active_lanes;
  into.blocks += c.blocks;
  into.threads += c.threads;
  into.warps += c.warps;
  into.launches += c.launches;
  into.estimated_us_sum += c.estimated_us_sum;
}

RooflineEstimate estimate_for(const KernelCounters& c, uint64_t launches) {
  const uint64_t n = std::max<uint64_t>(launches, 1);
  RooflineInput in;
  in.blocks = c.blocks / n;
  in.threads_per_block = c.block.x * c.block.y * c.block.z;
  in.shared_bytes_per_block = c.static_smem_bytes + c.dynamic_smem_bytes;
  in.registers_per_thread = c.registers_per_thread;
  in.unique_sector_bytes = 32 * c.global_unique_sectors / n;
  in.request_sector_bytes = 32 * (c.global_load.sectors + c.global_store.sectors) / n;
  in.tensor_f16_flops = c.tensor_f16_flops / n;
  in.tensor_tf32_flops = c.tensor_tf32_flops / n;
  in.fp32_fma = c.fp32_fma / n;
  in.shared_wavefronts = (c.shared_load.sectors + c.shared_store.sectors) / n;
  return estimate_h200(in);
}

// ---- process-wide results ------------------------------------------------------------------------

struct Results {
  std::mutex mutex;
  std::vector<KernelCounters> totals;  // one per (kernel, symbol), first-launch order
  bool summary_at_exit = false;
};
Results& results() {
  static Results* r = new Results();  // never freed: the summary is printed at exit
  return *r;
}

void print_summary_at_exit() {
  const std::vector<KernelCounters> totals = seg::sim::kernel_counter_totals();
  if (totals.empty()) return;
  std::fprintf(stderr, "seg::sim profile: totals per kernel (H200 time: an estimate from a model, not a measurement)\n");
  std::fprintf(stderr,
               "| kernel | launches | global ld sectors/req | global st sectors/req | shared bank conflicts/req | "
               "MMAs | barriers | active lanes | est. H200 us (sum) | bound |\n|---|---|---|---|---|---|---|---|---|---|\n");
  for (const KernelCounters& c : totals) {
    const uint64_t shared_requests = c.shared_load.requests + c.shared_store.requests;
    const double conflicts =
        shared_requests ? static_cast<double>(c.shared_load.bank_conflicts + c.shared_store.bank_conflicts) /
                              static_cast<double>(shared_requests)
                        : 0.0;
    std::fprintf(stderr, "| %s | %llu | %.2f | %.2f | %.2f | %llu | %llu | %.1f%% | %.1f | %s |\n",
                 seg::sim::kernel_display_name(c).c_str(),
                 static_cast<unsigned long long>(c.launches), c.global_load.per_request(), c.global_store.per_request(),
                 conflicts, static_cast<unsigned long long>(c.mma_instructions),
                 static_cast<unsigned long long>(c.barriers), 100.0 * c.active_lane_share(), c.estimated_us_sum,
                 c.estimate.bound);
  }
}

}  // namespace

bool counting() { return tls_counters != nullptr; }

void counters_begin_launch(LaunchState& launch) {
  if (!launch.options.counters && launch.options.profile == ProfileOutput::none) return;
  if (!kernel_code_instrumented()) return;
  launch.counters = new LaunchCounters();
}

void counters_prepare_worker(Worker& w) {
  LaunchState& launch = *w.launch;
  if (!launch.counters) return;
  auto* wc = new WorkerCounters();
  wc->worker = &w;
  wc->warps.resize((launch.block_threads + 31) / 32);
  tls_counters = wc;
}

void counters_release_worker(Worker& w) {
  WorkerCounters* wc = tls_counters;
  if (!wc) return;
  tls_counters = nullptr;
  LaunchState& launch = *w.launch;
  {
    std::lock_guard<std::mutex> lock(launch.mutex);
    add_counts(launch.counters->counts, wc->local.counts);
    if (launch.counters->sectors.empty())
      launch.counters->sectors.swap(wc->local.sectors);
    else
      launch.counters->sectors.insert(wc->local.sectors.begin(), wc->local.sectors.end());
  }
  delete wc;
}

void counters_end_block(Worker& w) {
  if (WorkerCounters* wc = tls_counters) flush_all(*wc);
  (void)w;
}

std::shared_ptr<const KernelCounters> counters_end_launch(LaunchState& launch, bool faulted) {
  std::unique_ptr<LaunchCounters> owned(launch.counters);
  launch.counters = nullptr;
  if (!owned || faulted) return nullptr;
  const LaunchRequest& r = *launch.request;
  KernelCounters c = owned->counts;
  c.kernel = r.kernel_name;
  c.launch_site = std::string(relative_path(r.file)) + ":" + std::to_string(r.line);
  c.grid = r.grid;
  c.block = r.block;
  c.dynamic_smem_bytes = r.dynamic_smem;
  c.launches = 1;
  c.blocks = launch.stats.blocks;
  c.threads = launch.stats.threads;
  c.warps = launch.stats.blocks * ((launch.block_threads + 31) / 32);
  c.barriers = launch.stats.barriers;
  c.global_unique_sectors = owned->sectors.size();
  const KernelResources res = kernel_resources(r.kernel);
  c.symbol = res.name;
  c.registers_per_thread = res.registers;
  c.static_smem_bytes = res.static_smem_bytes;
  c.static_smem_known = res.static_smem_known;
  c.estimate = estimate_for(c, 1);
  c.estimated_us_sum = c.estimate.estimate_us;

  Results& out = results();
  {
    std::lock_guard<std::mutex> lock(out.mutex);
    auto it = std::find_if(out.totals.begin(), out.totals.end(),
                           [&](const KernelCounters& t) { return t.kernel == c.kernel && t.symbol == c.symbol; });
    if (it == out.totals.end()) {
      out.totals.push_back(c);
    } else {
      add_counts(*it, c);
      it->estimate = estimate_for(*it, it->launches);
    }
    if (launch.options.profile != ProfileOutput::none && !out.summary_at_exit) {
      out.summary_at_exit = true;
      std::atexit(&print_summary_at_exit);
    }
  }
  if (launch.options.profile == ProfileOutput::each_launch)
    std::fprintf(stderr, "%s", seg::sim::format_counters(c).c_str());
  return std::make_shared<const KernelCounters>(std::move(c));
}

// ---- hooks ------------------------------------------------------------------------------------------

void count_access(Worker& w, const SimThread& t, MemorySpace space, uintptr_t address, uint32_t bytes, bool store,
                  uintptr_t site) {
  WorkerCounters* wc = tls_counters;
  if (!wc || bytes == 0 || (space != MemorySpace::global && space != MemorySpace::shared)) return;
  SiteTrack& st = wc->warps[t.warp].sites[site];
  const uint32_t k = st.next[t.lane]++;
  if (k < st.base) {  // cannot happen (a request completes only when every live lane reached it)
    Request single;
    single.lanes = 1u << t.lane;
    single.access[t.lane] = {address, bytes, space, store};
    finish_request(*wc, single);
    return;
  }
  const size_t index = k - st.base;
  while (st.pending.size() <= index) st.pending.emplace_back();
  Request& r = st.pending[index];
  r.lanes |= 1u << t.lane;
  r.access[t.lane] = {address, bytes, space, store};
  // Count the oldest requests once every live lane of the warp has contributed to them.
  const WarpState& ws = w.block.warps[t.warp];
  const uint32_t live = ws.exists & ~ws.exited;
  while (!st.pending.empty() && (st.pending.front().lanes & live) == live) {
    finish_request(*wc, st.pending.front());
    st.pending.pop_front();
    ++st.base;
  }
}

void count_tile(MemorySpace space, const void* base, unsigned lines, unsigned line_bytes, size_t stride, bool store) {
  WorkerCounters* wc = tls_counters;
  if (!wc || (space != MemorySpace::global && space != MemorySpace::shared)) return;
  // The tile moves as 16-byte chunks, 32 per request; an ldmatrix-like phase is 8 lines of the same
  // 16-byte column segment.
  const unsigned segments = (line_bytes + 15) / 16;
  Request r;
  unsigned in_request = 0;
  auto flush = [&] {
    if (!r.lanes) return;
    finish_request(*wc, r);
    r.lanes = 0;
    in_request = 0;
  };
  const auto p = reinterpret_cast<uintptr_t>(base);
  for (unsigned s = 0; s < segments; ++s)
    for (unsigned line = 0; line < lines; ++line) {
      const uint32_t bytes = std::min(16u, line_bytes - 16 * s);
      r.access[in_request] = {p + line * stride + 16 * s, bytes, space, store};
      r.lanes |= 1u << in_request;
      if (++in_request == 32) flush();
    }
  flush();
}

void count_mma(int m, int n, int k, bool tf32) {
  WorkerCounters* wc = tls_counters;
  if (!wc) return;
  ++wc->local.counts.mma_instructions;
  const uint64_t flops = 2ull * static_cast<uint64_t>(m) * static_cast<uint64_t>(n) * static_cast<uint64_t>(k);
  (tf32 ? wc->local.counts.tensor_tf32_flops : wc->local.counts.tensor_f16_flops) += flops;
}

void count_fp32_fma() {
  if (WorkerCounters* wc = tls_counters) ++wc->local.counts.fp32_fma;
}

void count_barrier(Worker& w) {
  (void)w;
  if (WorkerCounters* wc = tls_counters) flush_all(*wc);
}

void count_collective(Worker& w, unsigned warp, uint32_t participants, uint32_t live_lanes) {
  (void)w;
  WorkerCounters* wc = tls_counters;
  if (!wc) return;
  ++wc->local.counts.warp_collectives;
  ++wc->local.counts.warp_instructions;
  wc->local.counts.active_lanes += static_cast<uint64_t>(__builtin_popcount(participants));
  if ((participants & live_lanes) == live_lanes) flush_warp(*wc, warp);
}

}  // namespace seg::sim::detail

namespace seg::sim {

bool counters_available() { return detail::kernel_code_instrumented(); }

std::vector<KernelCounters> kernel_counter_totals() {
  detail::Results& r = detail::results();
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.totals;
}

void reset_kernel_counter_totals() {
  detail::Results& r = detail::results();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.totals.clear();
}

std::string kernel_display_name(const KernelCounters& c) {
  if (c.symbol.empty()) return c.kernel;
  // Namespaces first ("(anonymous namespace)::" would read as a parameter list): every
  // "identifier::" and "(anonymous namespace)::".
  static const std::string anon = "(anonymous namespace)::";
  std::string name;
  for (size_t i = 0; i < c.symbol.size();) {
    if (c.symbol.compare(i, anon.size(), anon) == 0) {
      i += anon.size();
      continue;
    }
    size_t j = i;
    while (j < c.symbol.size() && (std::isalnum(static_cast<unsigned char>(c.symbol[j])) || c.symbol[j] == '_')) ++j;
    if (j > i && c.symbol.compare(j, 2, "::") == 0) {
      i = j + 2;
    } else if (j > i) {
      name.append(c.symbol, i, j - i);
      i = j;
    } else {
      name += c.symbol[i++];
    }
  }
  if (name.rfind("void ", 0) == 0) name.erase(0, 5);  // a function template's demangled return type
  // The parameter list: the first '(' outside template arguments (a cast such as "(Major)1" is inside).
  int depth = 0;
  for (size_t i = 0; i < name.size(); ++i) {
    if (name[i] == '<') ++depth;
    if (name[i] == '>') --depth;
    if (name[i] == '(' && depth == 0) {
      name.resize(i);
      break;
    }
  }
  return name;
}

std::string format_counters(const KernelCounters& c) {
  std::string out;
  char line[512];
  auto add = [&](const char* fmt, auto... args) {
    std::snprintf(line, sizeof line, fmt, args...);
    out += line;
  };
  auto ull = [](uint64_t v) { return static_cast<unsigned long long>(v); };
  out = "seg::sim profile: " + kernel_display_name(c);  // a template instance's name can outgrow `line`
  add(" <<<grid (%u,%u,%u), block (%u,%u,%u), %zu B dynamic shared>>> launched at %s", c.grid.x, c.grid.y, c.grid.z,
      c.block.x, c.block.y, c.block.z, c.dynamic_smem_bytes, c.launch_site.c_str());
  if (c.launches > 1) add(" (%llu launches)", ull(c.launches));
  add("\n  %-24s %llu blocks, %llu warps, %llu threads\n", "grid", ull(c.blocks), ull(c.warps), ull(c.threads));
  auto global = [&](const char* what, const MemoryCounters& m) {
    const double used = m.sectors ? 100.0 * static_cast<double>(m.bytes) / (32.0 * static_cast<double>(m.sectors)) : 0;
    add("  %-24s %llu requests, %llu sectors (%.2f per request), %llu B requested, %.1f%% of the sectors' bytes used\n",
        what, ull(m.requests), ull(m.sectors), m.per_request(), ull(m.bytes), used);
  };
  global("global loads", c.global_load);
  global("global stores", c.global_store);
  add("  %-24s %llu distinct 32-byte sectors (%llu B)\n", "global footprint", ull(c.global_unique_sectors),
      ull(32 * c.global_unique_sectors));
  auto shared = [&](const char* what, const MemoryCounters& m) {
    const double per = m.requests ? static_cast<double>(m.bank_conflicts) / static_cast<double>(m.requests) : 0;
    add("  %-24s %llu requests, %llu wavefronts, %llu bank conflicts (%.2f per request)\n", what, ull(m.requests),
        ull(m.sectors), ull(m.bank_conflicts), per);
  };
  shared("shared loads", c.shared_load);
  shared("shared stores", c.shared_store);
  add("  %-24s %llu MMA operations, %llu f16/bf16 FLOPs, %llu tf32 FLOPs\n", "tensor cores", ull(c.mma_instructions),
      ull(c.tensor_f16_flops), ull(c.tensor_tf32_flops));
  add("  %-24s %llu (__fmaf_rn calls only; `a * b + c` is not seen)\n", "FP32 FMA", ull(c.fp32_fma));
  add("  %-24s %llu __syncthreads, %llu warp collectives\n", "synchronisation", ull(c.barriers),
      ull(c.warp_collectives));
  add("  %-24s %.1f of 32 lanes active per warp-level instruction (%.1f%%, %llu instructions)\n", "divergence",
      32.0 * c.active_lane_share(), 100.0 * c.active_lane_share(), ull(c.warp_instructions));
  std::string regs = c.registers_per_thread >= 0 ? std::to_string(c.registers_per_thread) + " registers/thread (nvcc sm_90)"
                                                 : std::string("registers unknown (no nvcc table)");
  std::string smem = c.static_smem_known ? std::to_string(c.static_smem_bytes) + " B static shared" : "static shared unknown";
  add("  %-24s %s, %s, %zu B dynamic shared\n", "resources per block", regs.c_str(), smem.c_str(), c.dynamic_smem_bytes);
  const RooflineEstimate& e = c.estimate;
  add("  H200 ESTIMATE (a roofline model, not a measurement)%s:\n", c.launches > 1 ? ", average launch" : "");
  const uint64_t blocks = c.blocks / std::max<uint64_t>(c.launches, 1);
  add("    occupancy              %d blocks/SM (limited by %s%s), %.0f%% of 64 warps; %llu block(s) in %llu wave(s)\n",
      e.blocks_per_sm, e.occupancy_limit, c.registers_per_thread < 0 ? "; registers not counted" : "",
      100.0 * e.occupancy, ull(blocks), ull(e.waves));
  add("    grid factor            x%.2f (%s)\n", e.grid_factor,
      blocks < static_cast<uint64_t>(H200::sms) ? "fewer blocks than the 132 SMs"
                                                 : (e.grid_factor > 1.0 ? "the last wave is partly empty" : "the grid fills the GPU"));
  add("    DRAM                   %.0f B (%s) -> %.3f us at 4.8 TB/s\n", e.dram_bytes,
      e.dram_from_unique ? "distinct sectors" : "all requested sectors: footprint > 50 MB L2", e.memory_us);
  add("    shared memory          %.3f us (%llu wavefronts, one per SM and clock at 1.98 GHz)\n", e.shared_us,
      ull((c.shared_load.sectors + c.shared_store.sectors) / std::max<uint64_t>(c.launches, 1)));
  add("    tensor cores / FP32    %.3f us at 989 (f16) / 494 (tf32) TFLOP/s, %.3f us at 67 TFLOP/s\n", e.tensor_us,
      e.fp32_us);
  add("    estimate               %.2f us (%s bound)\n", e.estimate_us, e.bound);
  if (c.launches > 1) add("    all launches           %.2f us\n", c.estimated_us_sum);
  return out;
}

}  // namespace seg::sim
