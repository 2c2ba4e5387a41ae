// Fuzz target: dataset lists (data/odgt.h). The first byte picks the read options (segm and size
// required or not, max_sample / start_idx / end_idx slicing); the rest is the list text. Accepted
// lists must hold only the promises odgt.h makes: non-empty image paths, segm paths when
// required, positive sizes when required, lines in increasing order.
#include "data/odgt.h"

#include "core/error.h"
#include "tests/fuzz/fuzz_targets.h"

namespace seg::fuzz {

int odgt(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  data::OdgtReadOptions o;
  o.root = (mode & 1) ? "root/dir" : "";
  o.require_segm = (mode & 2) != 0;
  o.require_size = (mode & 4) != 0;
  if (mode & 8) o.max_sample = mode >> 4;
  if (mode & 16) o.start_idx = mode >> 6, o.end_idx = (mode >> 5) & 3;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    const data::OdgtList list = data::parse_odgt(text, "fuzz.odgt", o);
    int last_line = 0;
    for (const data::OdgtRecord& r : list.records) {
      if (r.fpath_img.empty()) property_failed("odgt", "empty fpath_img accepted");
      if (o.require_segm && r.fpath_segm.empty()) property_failed("odgt", "missing fpath_segm accepted");
      if (o.require_size && (r.width <= 0 || r.height <= 0)) property_failed("odgt", "missing size accepted");
      if (r.width < 0 || r.height < 0) property_failed("odgt", "negative size");
      if (r.line <= last_line) property_failed("odgt", "lines out of order");
      last_line = r.line;
    }
  } catch (const Error&) {
  }
  return 0;
}

}  // namespace seg::fuzz

SEG_FUZZ_ENTRY(odgt)
