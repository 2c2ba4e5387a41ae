#include "data/odgt.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "data/file_io.h"

namespace seg::data {

namespace {

using json = nlohmann::json;

const char* kFormatHint =
    "each line must be one JSON object like {\"fpath_img\": \"images/a.jpg\", \"fpath_segm\": "
    "\"annotations/a.png\", \"width\": 640, \"height\": 480}";

// A value as it appears in a message: scalars as JSON, arrays and objects only named (their text
// could be a whole line, and dumping a deeply nested one recurses as deep as it goes).
std::string shown(const json& v) {
  if (v.is_array()) return "an array";
  if (v.is_object()) return "an object";
  return v.dump();
}

Error line_error(const std::string& path, int line, const std::string& message) {
  return Error(ErrorKind::data, message).file(path, line).hint(kFormatHint);
}

std::string get_path(const json& obj, const char* key, bool required, const std::string& path, int line) {
  const auto it = obj.find(key);
  if (it == obj.end()) {
    if (required) throw line_error(path, line, str("dataset list entry has no \"", key, "\"")).key(key);
    return "";
  }
  if (!it->is_string() || it->get_ref<const std::string&>().empty())
    throw line_error(path, line, str("\"", key, "\" must be a non-empty string, got ", shown(*it))).key(key);
  return it->get<std::string>();
}

int get_size(const json& obj, const char* key, bool required, const std::string& path, int line) {
  const auto it = obj.find(key);
  if (it == obj.end()) {
    if (required)
      throw line_error(path, line, str("dataset list entry has no \"", key, "\" (training needs the image size)"))
          .key(key);
    return 0;
  }
  if (!it->is_number_integer() || it->get<int64_t>() <= 0 || it->get<int64_t>() > 1000000)
    throw line_error(path, line, str("\"", key, "\" must be a positive integer, got ", shown(*it))).key(key);
  return static_cast<int>(it->get<int64_t>());
}

}  // namespace

OdgtList parse_odgt(const std::string& text, const std::string& path, const OdgtReadOptions& options) {
  OdgtList list;
  list.path = path;
  size_t pos = 0;
  int line_no = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;  // blank line
    json obj;
    try {
      obj = json::parse(line);
    } catch (const json::exception& e) {
      // nlohmann's message starts with "[json.exception.parse_error.101] parse error at ..." (or
      // out_of_range.406 for a number like 1e999, which is no parse_error); keep the part
      // after the id, which says where and why.
      std::string why = e.what();
      const size_t bracket = why.find("] ");
      if (bracket != std::string::npos) why = why.substr(bracket + 2);
      throw line_error(path, line_no, "malformed JSON in dataset list: " + why);
    }
    if (!obj.is_object()) throw line_error(path, line_no, "dataset list line is not a JSON object");
    OdgtRecord r;
    r.fpath_img = join_path(options.root, get_path(obj, "fpath_img", true, path, line_no));
    const std::string segm = get_path(obj, "fpath_segm", options.require_segm, path, line_no);
    r.fpath_segm = segm.empty() ? "" : join_path(options.root, segm);
    r.width = get_size(obj, "width", options.require_size, path, line_no);
    r.height = get_size(obj, "height", options.require_size, path, line_no);
    r.line = line_no;
    list.records.push_back(std::move(r));
  }
  // upstream's parse_input_list: first max_sample, then the slice [start_idx, end_idx).
  auto& v = list.records;
  if (options.max_sample > 0 && static_cast<size_t>(options.max_sample) < v.size()) v.resize(options.max_sample);
  if (options.start_idx >= 0 && options.end_idx >= 0) {
    const size_t lo = std::min(static_cast<size_t>(options.start_idx), v.size());
    const size_t hi = std::max(lo, std::min(static_cast<size_t>(options.end_idx), v.size()));
    v = std::vector<OdgtRecord>(v.begin() + lo, v.begin() + hi);
  }
  return list;
}

OdgtList read_odgt(const std::string& path, const OdgtReadOptions& options) {
  return parse_odgt(read_file_text(path, "dataset list"), path, options);
}

std::string odgt_line(const std::string& fpath_img, const std::string& fpath_segm, int width, int height) {
  // Python's json.dumps layout (", " and ": " separators) and upstream's key order, so generated
  // lists look like upstream's; json(...).dump() escapes the strings.
  std::string line = "{\"fpath_img\": " + json(fpath_img).dump();
  if (!fpath_segm.empty()) line += ", \"fpath_segm\": " + json(fpath_segm).dump();
  return line + str(", \"width\": ", width, ", \"height\": ", height, "}");
}

}  // namespace seg::data
