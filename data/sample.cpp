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

namespace {
// The size rules shared by load_sample and check_sample_files (one wording for both).
void check_sizes(const OdgtRecord& record, int image_w, int image_h, int label_w, int label_h, bool check_list_size) {
  if (image_w != label_w || image_h != label_h)
    throw Error(ErrorKind::data, str("image is ", image_w, "x", image_h, " but its label is ", label_w, "x", label_h))
        .file(record.fpath_segm)
        .with("image", record.fpath_img)
        .hint("every label must have its image's size; check that the list pairs the right files");
  if (check_list_size && (record.width != image_w || record.height != image_h))
    throw Error(ErrorKind::data, str("image is ", image_w, "x", image_h, " but the list says ", record.width, "x",
                                     record.height))
        .file(record.fpath_img)
        .hint("fix width/height in the list (training computes its scale from them)");
}
}  // namespace

LoadedSample load_sample(const OdgtRecord& record, const std::string& list, int num_class, bool check_list_size) {
  try {
    LoadedSample s;
    s.image = load_image_rgb(record.fpath_img);
    s.label = load_label(record.fpath_segm);
    check_sizes(record, s.image.width, s.image.height, s.label.width, s.label.height, check_list_size);
    check_label_range(s.label, num_class, record.fpath_segm);
    return s;
  } catch (Error& e) {
    throw add_list_context(e, list, record.line);
  }
}

void check_sample_files(const OdgtRecord& record, const std::string& list, bool check_list_size) {
  try {
    // In load_sample's order, so the first problem reported is the one training would hit.
    const ImageHeader image = read_image_header(record.fpath_img, "image");
    const ImageHeader label = read_image_header(record.fpath_segm, "label");
    check_label_format(label, record.fpath_segm);
    check_sizes(record, image.width, image.height, label.width, label.height, check_list_size);
  } catch (Error& e) {
    throw add_list_context(e, list, record.line);
  }
}

}  // namespace seg::data
