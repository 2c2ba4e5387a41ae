// Out-of-line parts of the WMMA emulation (wmma.h): argument checks and the mismatch report.
#include "kernels/sim/wmma.h"

#include <cstdint>
#include <cstdio>

#include "kernels/sim/access_check.h"
#include "kernels/sim/counter_hooks.h"
#include "kernels/sim/qualifiers.h"

namespace nvcuda::wmma::sim {

void check_memory_args(const char* op, const void* ptr, unsigned ldm, size_t element_bytes,
                       const seg::sim::detail::Where& where) {
  const auto address = reinterpret_cast<uintptr_t>(ptr);
  if (address % 32 != 0) {
    char text[200];
    std::snprintf(text, sizeof text, "%s: pointer %p is not 256-bit (32-byte) aligned, as the hardware requires", op,
                  ptr);
    seg::sim::detail::fault(seg::sim::FaultKind::misaligned, text, where);
  }
  if ((static_cast<size_t>(ldm) * element_bytes) % 16 != 0) {
    char text[200];
    std::snprintf(text, sizeof text, "%s: ldm %u is not a multiple of 16 bytes (%zu elements of %zu bytes)", op, ldm,
                  16 / element_bytes, element_bytes);
    seg::sim::detail::fault(seg::sim::FaultKind::misaligned, text, where);
  }
}

void no_op_complete(seg::sim::detail::WarpOpView&) {}

void account_tile(const char* op, const void* ptr, int rows, int cols, unsigned ldm, size_t element_bytes,
                  bool col_major, bool store, const seg::sim::detail::Where& where) {
  using namespace seg::sim::detail;
  // In memory the tile is `lines` runs of contiguous elements, ldm elements apart.
  const auto lines = static_cast<unsigned>(col_major ? cols : rows);
  const auto line_bytes = static_cast<unsigned>((col_major ? rows : cols) * element_bytes);
  const size_t stride = static_cast<size_t>(ldm) * element_bytes;
  // The first and last byte in one valid region means every line in between is in it too.
  const size_t span = (lines - 1) * stride + line_bytes;
  const MemorySpace space = check_runtime_access(ptr, span, store, op, where, /*record=*/false);
  note_tile_access(space, ptr, lines, line_bytes, stride, store);
  count_tile(space, ptr, lines, line_bytes, stride, store);
}

void count_mma(int m, int n, int k, bool tf32) { seg::sim::detail::count_mma(m, n, k, tf32); }

void fragment_mismatch(const seg::sim::detail::WarpOpView& view, const char* role, unsigned lane, int row, int col) {
  seg::sim::detail::fault(
      seg::sim::FaultKind::fragment_mismatch,
      std::string(view.name) + ": lanes 0 and " + std::to_string(lane) + " of warp " + std::to_string(view.warp) +
          " hold different " + role + " fragments (first difference at row " + std::to_string(row) + ", column " +
          std::to_string(col) +
          "). The element-to-lane mapping of WMMA fragments is unspecified; code that changes fragment "
          "elements per lane (a bias by column, `if (lane == 0)`) only works on the GPU it was tuned for. "
          "Move element-wise work that needs positions through shared memory (DESIGN decision 3)",
      view.where);
}

}  // namespace nvcuda::wmma::sim
