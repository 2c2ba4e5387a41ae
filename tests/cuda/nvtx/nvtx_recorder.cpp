// An NVTX injection library for tests (the mechanism Nsight Systems uses): NVTX3's header-only
// client, on the first NVTX call in a process, dlopen()s the library named by NVTX_INJECTION64_PATH
// and calls its InitializeInjectionNvtx2, which may replace entries of NVTX's function tables. This
// one replaces nvtxRangePushA and nvtxRangePop and records every push with its nesting depth, so a
// test can check which ranges an op, a training step or the loader emit, and how they nest.
#include <nvtx3/nvToolsExt.h>

#include <mutex>
#include <string>
#include <vector>

#include "tests/cuda/nvtx/nvtx_recorder.h"

namespace {
std::mutex g_mutex;
std::vector<seg::test::NvtxRange> g_ranges;
thread_local int t_depth = 0;
int g_unbalanced_pops = 0;

int NVTX_API push_a(const char* message) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_ranges.push_back({t_depth, message ? message : ""});
  return t_depth++;
}

int NVTX_API pop() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (t_depth == 0) {
    ++g_unbalanced_pops;
    return -1;
  }
  return --t_depth;
}
}  // namespace

extern "C" {

__attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table) {
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (!callbacks) return 0;
  NvtxFunctionTable table = nullptr;
  unsigned int size = 0;
  if (!callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &table, &size) || size <= NVTX_CBID_CORE_RangePop) return 0;
  *table[NVTX_CBID_CORE_RangePushA] = reinterpret_cast<NvtxFunctionPointer>(&push_a);
  *table[NVTX_CBID_CORE_RangePop] = reinterpret_cast<NvtxFunctionPointer>(&pop);
  return 1;
}

__attribute__((visibility("default"))) void seg_nvtx_take(std::vector<seg::test::NvtxRange>* out, int* open,
                                                          int* unbalanced_pops) {
  std::lock_guard<std::mutex> lock(g_mutex);
  *out = std::move(g_ranges);
  g_ranges.clear();
  *open = t_depth;
  *unbalanced_pops = g_unbalanced_pops;
}

}  // extern "C"
