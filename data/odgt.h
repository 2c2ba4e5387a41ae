// Dataset lists in upstream's .odgt format: one JSON object per line,
//
//   {"fpath_img": "ADEChallengeData2016/images/training/ADE_train_00000001.jpg",
//    "fpath_segm": "ADEChallengeData2016/annotations/training/ADE_train_00000001.png",
//    "width": 683, "height": 512}
//
// Paths are joined to DATASET.root_dataset (os.path.join semantics: absolute paths stay as they are).
// width/height are what the training scale is computed from (upstream never looks at the real image
// size there), so a training list must have them; evaluation lists use the decoded image's size.
// Blank lines are skipped; anything else that is not such an object is an Error(data) naming the
// list file and line.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace seg::data {

struct OdgtRecord {
  std::string fpath_img;   // joined with the root
  std::string fpath_segm;  // joined with the root; empty when the list has none (test lists)
  int width = 0;           // from the list; 0 when the list has none
  int height = 0;
  int line = 0;            // 1-based line in the list file, for error messages
};

struct OdgtList {
  std::string path;  // the list file, for error messages
  std::vector<OdgtRecord> records;
  size_t size() const { return records.size(); }
  const OdgtRecord& operator[](size_t i) const { return records[i]; }
};

struct OdgtReadOptions {
  std::string root;            // DATASET.root_dataset ("" = paths as written)
  bool require_segm = true;    // train/val lists need fpath_segm
  bool require_size = false;   // train lists need width and height
  // upstream's parse_input_list: keep the first max_sample records, then [start_idx, end_idx)
  int64_t max_sample = -1;
  int64_t start_idx = -1;
  int64_t end_idx = -1;
};

OdgtList read_odgt(const std::string& path, const OdgtReadOptions& options);
// Parses list text already in memory; `path` only names it in error messages.
OdgtList parse_odgt(const std::string& text, const std::string& path, const OdgtReadOptions& options);

// One line of a list (paths as given, not joined), without the trailing newline.
std::string odgt_line(const std::string& fpath_img, const std::string& fpath_segm, int width, int height);

}  // namespace seg::data
