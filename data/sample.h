// Loading one (image, label) pair of a dataset list, with the checks that make a sample "bad":
// a missing or undecodable file, image and label of different sizes, a list entry whose
// width/height disagree with the image, a label value above num_class. Every failure is an
// Error(data) naming the file and the list line it came from.
#pragma once

#include <string>

#include "data/image.h"
#include "data/odgt.h"

namespace seg::data {

struct LoadedSample {
  Image image;  // RGB
  Image label;  // 1 channel, 0 = unlabeled, 1..num_class
};

// `list` names the list in error messages; `check_list_size` also compares the image with the
// list's width/height (training computes its scale from them).
LoadedSample load_sample(const OdgtRecord& record, const std::string& list, int num_class, bool check_list_size);

// The checks of load_sample that need only the files' headers (data/image_codec.h): both files
// exist and parse, the label is 8-bit single-channel, image and label have the same size, and with
// `check_list_size` the list's width/height are the image's. Same Error(data) messages as
// load_sample; label values and corrupt pixel data are found only by decoding.
void check_sample_files(const OdgtRecord& record, const std::string& list, bool check_list_size);

// Error(data) naming `path` when a label value exceeds num_class.
void check_label_range(const Image& label, int num_class, const std::string& path);

// The same context every per-sample error carries: the list file and line of the entry.
Error& add_list_context(Error& e, const std::string& list, int line);

}  // namespace seg::data
