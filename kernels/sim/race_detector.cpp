// The stream race detector: vector clocks and the shadow of recorded accesses (race_detector.h).
#include "kernels/sim/race_detector.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <map>
#include <mutex>

#include "kernels/sim/device_memory.h"
#include "kernels/sim/sim.h"

namespace seg::sim::detail {

// ---- vector clocks ---------------------------------------------------------------------------------

uint64_t VectorClock::get(uint32_t c) const {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), c,
                             [](const std::pair<uint32_t, uint64_t>& e, uint32_t k) { return e.first < k; });
  return it != entries_.end() && it->first == c ? it->second : 0;
}

void VectorClock::set(uint32_t c, uint64_t v) {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), c,
                             [](const std::pair<uint32_t, uint64_t>& e, uint32_t k) { return e.first < k; });
  if (it != entries_.end() && it->first == c)
    it->second = v;
  else
    entries_.insert(it, {c, v});
}

void VectorClock::join(const VectorClock& o) {
  if (o.entries_.empty()) return;
  std::vector<std::pair<uint32_t, uint64_t>> merged;
  merged.reserve(entries_.size() + o.entries_.size());
  size_t i = 0, j = 0;
  while (i < entries_.size() || j < o.entries_.size()) {
    if (j == o.entries_.size() || (i < entries_.size() && entries_[i].first < o.entries_[j].first)) {
      merged.push_back(entries_[i++]);
    } else if (i == entries_.size() || o.entries_[j].first < entries_[i].first) {
      merged.push_back(o.entries_[j++]);
    } else {
      merged.push_back({entries_[i].first, std::max(entries_[i].second, o.entries_[j].second)});
      ++i, ++j;
    }
  }
  entries_ = std::move(merged);
}

namespace {

struct Record {
  uintptr_t begin, end;
  bool write;
  uint32_t component;
  uint64_t tick;
  std::shared_ptr<const AccessLabel> label;
};

std::mutex g_mutex;
std::map<uintptr_t, std::vector<Record>>* g_shadow = new std::map<uintptr_t, std::vector<Record>>();  // by allocation
std::map<uintptr_t, size_t>* g_buffers = new std::map<uintptr_t, size_t>();                           // annotate_buffer
uint64_t g_races = 0;
std::string g_last_report;

// Allocations released by cudaFreeAsync, with their records (race_detector.h, forget_allocation).
struct Freed {
  size_t bytes;
  std::vector<Record> records;
};
std::map<uintptr_t, Freed>* g_freed = new std::map<uintptr_t, Freed>();
constexpr size_t kMaxFreed = 4096;  // the oldest are dropped beyond that

// The freed allocation that contains x (g_mutex held), or end().
std::map<uintptr_t, Freed>::iterator freed_containing(uintptr_t x) {
  auto it = g_freed->upper_bound(x);
  if (it == g_freed->begin()) return g_freed->end();
  --it;
  return x < it->first + std::max<size_t>(it->second.bytes, 1) ? it : g_freed->end();
}

std::string hex(uintptr_t p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", reinterpret_cast<void*>(p));
  return buf;
}

const char* kind_text(MemoryKind k) {
  switch (k) {
    case MemoryKind::device:
      return "device";
    case MemoryKind::managed:
      return "managed";
    case MemoryKind::pinned_host:
      return "pinned host";
  }
  return "?";
}

std::string report(const Record& first, const AccessOwner& second, bool second_writes, const AllocationInfo& alloc,
                   uintptr_t begin, uintptr_t end, bool conservative, bool freed) {
  std::string device = alloc.device >= 0 ? ", device " + std::to_string(alloc.device) : "";
  if (freed) device += ", freed by cudaFreeAsync";
  std::string r =
      "seg::sim: stream race: two operations on different streams touch the same bytes, at least one of them "
      "writes, and no event or synchronisation orders them\n";
  r += "  memory: bytes [" + std::to_string(begin - alloc.begin) + ", " + std::to_string(end - alloc.begin) +
       ") of the " + std::to_string(alloc.bytes) + "-byte " + kind_text(alloc.kind) + " allocation at " +
       hex(alloc.begin) + device + "\n";
  r += "  first:  " + first.label->what + (first.write ? " (writes)" : " (reads)") + ", on " + first.label->stream +
       "\n";
  r += "  second: " + second.label->what + (second_writes ? " (writes)" : " (reads)") + ", on " + second.label->stream +
       "\n";
  if (conservative)
    r += "  (a kernel's accesses are taken conservatively: the whole allocation behind each pointer argument, "
         "written unless the parameter points to const)\n";
  r += "  order them: cudaEventRecord(event, <first stream>) after the first and cudaStreamWaitEvent(<second "
       "stream>, event) before the second, or synchronise the host in between";
  return r;
}

}  // namespace

std::optional<std::string> check_accesses(const AccessOwner& owner, const std::vector<Access>& accesses,
                                          bool conservative_kernel) {
  std::optional<std::string> first_report;
  std::lock_guard<std::mutex> lock(g_mutex);
  std::vector<Access> work = accesses;  // grows by the parts that run on into the next allocation
  for (size_t i = 0; i < work.size(); ++i) {
    Access a = work[i];
    if (a.end <= a.begin) continue;
    AllocationInfo alloc;
    std::vector<Record>* shadow = nullptr;
    bool freed = false;
    if (find_allocation(reinterpret_cast<const void*>(a.begin), &alloc)) {
      shadow = &(*g_shadow)[alloc.begin];
    } else if (auto f = freed_containing(a.begin); f != g_freed->end()) {
      alloc.begin = f->first;
      alloc.bytes = f->second.bytes;
      shadow = &f->second.records;
      freed = true;
    } else {
      continue;
    }
    // A merged range of recorded kernel accesses may run on into the next allocation: each
    // allocation's part is checked against its own shadow.
    const uintptr_t alloc_end = alloc.begin + std::max<size_t>(alloc.bytes, 1);
    if (a.end > alloc_end) {
      work.push_back({alloc_end, a.end, a.write});
      a.end = alloc_end;
    }
    std::vector<Record>& records = *shadow;
    bool reported = false;
    for (const Record& r : records) {
      if (reported || r.component == owner.component) continue;
      if (r.end <= a.begin || a.end <= r.begin || !(r.write || a.write)) continue;
      if (r.tick <= owner.clock->get(r.component)) continue;  // r happens before this op
      ++g_races;
      reported = true;
      const std::string text = report(r, owner, a.write, alloc, std::max(r.begin, a.begin), std::min(r.end, a.end),
                                      conservative_kernel, freed);
      g_last_report = text;
      if (!first_report) first_report = text;
    }
    // Older accesses this one covers, and that happen before it, can no longer race with anything
    // a later op does without also racing with this one.
    std::erase_if(records, [&](const Record& r) {
      return r.tick <= owner.clock->get(r.component) && a.begin <= r.begin && r.end <= a.end && (a.write || !r.write);
    });
    records.push_back({a.begin, a.end, a.write, owner.component, owner.tick, owner.label});
  }
  return first_report;
}

void forget_allocation(uintptr_t begin, size_t bytes, bool stream_ordered_free) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (stream_ordered_free) {
    if (g_freed->size() >= kMaxFreed) g_freed->erase(g_freed->begin());
    Freed& f = (*g_freed)[begin];
    f.bytes = bytes;
    if (auto it = g_shadow->find(begin); it != g_shadow->end()) f.records = std::move(it->second);
  }
  g_shadow->erase(begin);
  // Buffers annotated inside the freed allocation go with it.
  g_buffers->erase(g_buffers->lower_bound(begin), g_buffers->lower_bound(begin + std::max<size_t>(bytes, 1)));
}

void forget_freed(uintptr_t begin, size_t bytes) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const uintptr_t end = begin + std::max<size_t>(bytes, 1);
  auto it = g_freed->lower_bound(begin);
  if (it != g_freed->begin()) {
    auto prev = std::prev(it);
    if (prev->first + std::max<size_t>(prev->second.bytes, 1) > begin) it = prev;
  }
  while (it != g_freed->end() && it->first < end) it = g_freed->erase(it);
}

bool freed_by_stream_order(const void* p, uintptr_t* begin, size_t* bytes) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto f = freed_containing(reinterpret_cast<uintptr_t>(p));
  if (f == g_freed->end()) return false;
  *begin = f->first;
  *bytes = f->second.bytes;
  return true;
}

bool conservative_range(const void* p, uintptr_t* begin, uintptr_t* end) {
  AllocationInfo alloc;
  if (!find_allocation(p, &alloc)) {
    size_t bytes = 0;
    if (!freed_by_stream_order(p, begin, &bytes)) return false;
    *end = *begin + std::max<size_t>(bytes, 1);
    return true;
  }
  *begin = alloc.begin;
  *end = alloc.begin + std::max<size_t>(alloc.bytes, 1);
  const auto x = reinterpret_cast<uintptr_t>(p);
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_buffers->upper_bound(x);
  if (it != g_buffers->begin()) {
    --it;
    if (x < it->first + std::max<size_t>(it->second, 1) && it->first >= alloc.begin) {
      *begin = it->first;
      *end = std::min(*end, it->first + std::max<size_t>(it->second, 1));
    }
  }
  return true;
}

// ---- merging recorded accesses -------------------------------------------------------------------

std::vector<Access> merge_accesses(std::vector<Access> accesses) {
  std::sort(accesses.begin(), accesses.end(), [](const Access& a, const Access& b) {
    return a.write != b.write ? a.write < b.write : a.begin < b.begin;
  });
  std::vector<Access> merged;
  for (const Access& a : accesses) {
    if (!merged.empty() && merged.back().write == a.write && a.begin <= merged.back().end)
      merged.back().end = std::max(merged.back().end, a.end);
    else
      merged.push_back(a);
  }
  return merged;
}

}  // namespace seg::sim::detail

namespace seg::sim {

uint64_t stream_race_count() {
  std::lock_guard<std::mutex> lock(detail::g_mutex);
  return detail::g_races;
}

std::string last_stream_race_report() {
  std::lock_guard<std::mutex> lock(detail::g_mutex);
  return detail::g_last_report;
}

void annotate_buffer(const void* begin, size_t bytes) {
  std::lock_guard<std::mutex> lock(detail::g_mutex);
  (*detail::g_buffers)[reinterpret_cast<uintptr_t>(begin)] = bytes;
}

void forget_buffer(const void* begin) {
  std::lock_guard<std::mutex> lock(detail::g_mutex);
  detail::g_buffers->erase(reinterpret_cast<uintptr_t>(begin));
}

}  // namespace seg::sim
