#include "data/sample.h"

#include <algorithm>

#include "core/error.h"
#include "data/image_codec.h"

namespace seg::data {

Error& add_list_context(Error& e, const std::string& list, int line) {
  return list.empty() ? e : e.with("list entry", str(list, ":", line));
}

void check_label_range(const Image& label, int num_class, const std::string& path) {
  const uint8_t highest = label.pixels.empty() ? 0 : *std::max_element(label.pixels.begin(), label.pixels.end());
  if (highest > num_class)
    throw Error(ErrorKind::data, str("label value ", int(highest), " is above DATASET.num_class ", num_class))
        .file(path)
        .hint("labels must be 0 (unlabeled) or 1..num_class; check DATASET.num_class or the label file");
}

LoadedSample load_sample(const OdgtRecord& record, const std::string& list, int num_class, bool check_list_size) {
  try {
    LoadedSample s;
    s.image = load_image_rgb(record.fpath_img);
    s.label = load_label(record.fpath_segm);
    if (!s.image.same_size(s.label))
      throw Error(ErrorKind::data, str("image is ", s.image.width, "x", s.image.height, " but its label is ",
                                       s.label.width, "x", s.label.height))
          .file(record.fpath_segm)
          .with("image", record.fpath_img)
          .hint("every label must have its image's size; check that the list pairs the right files");
    if (check_list_size && (record.width != s.image.width || record.height != s.image.height))
      throw Error(ErrorKind::data, str("image is ", s.image.width, "x", s.image.height, " but the list says ",
                                       record.width, "x", record.height))
          .file(record.fpath_img)
          .hint("fix width/height in the list (training computes its scale from them)");
    check_label_range(s.label, num_class, record.fpath_segm);
    return s;
  } catch (Error& e) {
    throw add_list_context(e, list, record.line);
  }
}

}  // namespace seg::data
