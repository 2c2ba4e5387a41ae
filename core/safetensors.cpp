#include "core/safetensors.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "core/fileio.h"

namespace seg {

static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes a little-endian host");

namespace {

struct DTypeCode {
  const char* code;
  DType dtype;
};
constexpr DTypeCode kCodes[] = {{"F32", DType::f32}, {"F64", DType::f64}, {"F16", DType::f16}, {"BF16", DType::bf16},
                                {"I32", DType::i32}, {"I64", DType::i64}, {"U8", DType::u8}};

// The official implementation refuses headers above 100 MB; so do we (a corrupt length would
// otherwise make us try to allocate terabytes).
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

[[noreturn]] void bad(const std::string& path, const std::string& what, const std::string& tensor = "") {
  Error e(ErrorKind::data, "not a valid safetensors file: " + what);
  e.file(path);
  if (!tensor.empty()) e.with("tensor", tensor);
  e.hint("the file is truncated or corrupt; write it again (or convert it again with tools/convert_pth.py)");
  throw e;
}

struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin, end;
};

uint64_t read_u64_le(const char* p) {
  uint64_t v = 0;
  std::memcpy(&v, p, 8);
  return v;
}

Entry parse_entry(const std::string& name, const nlohmann::json& j, const std::string& path) {
  if (!j.is_object()) bad(path, "header entry is not an object", name);
  const auto dt = j.find("dtype");
  const auto shape = j.find("shape");
  const auto offsets = j.find("data_offsets");
  if (dt == j.end() || !dt->is_string()) bad(path, "entry has no string 'dtype'", name);
  if (shape == j.end() || !shape->is_array()) bad(path, "entry has no 'shape' array", name);
  if (offsets == j.end() || !offsets->is_array() || offsets->size() != 2) bad(path, "entry has no 'data_offsets' pair", name);
  Entry e{name, DType::f32, Shape{}, 0, 0};
  const std::string code = dt->get<std::string>();
  bool known = false;
  for (const auto& c : kCodes)
    if (code == c.code) e.dtype = c.dtype, known = true;
  if (!known) {
    Error err(ErrorKind::data, "tensor '" + name + "' has dtype " + code + ", which segtrain does not read");
    err.file(path).with("tensor", name).hint("supported dtypes: F32 F64 F16 BF16 I32 I64 U8");
    throw err;
  }
  if (static_cast<int>(shape->size()) > Shape::kMaxDims)
    bad(path, str("rank ", shape->size(), " is above the supported ", Shape::kMaxDims), name);
  uint64_t bytes = dtype_size(e.dtype);
  for (const auto& d : *shape) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0) bad(path, "shape has a negative or non-integer size", name);
    const auto v = static_cast<uint64_t>(d.get<int64_t>());
    if (v != 0 && bytes > UINT64_MAX / v) bad(path, "shape is too large", name);
    bytes *= v;
    e.shape.push_back(static_cast<int64_t>(v));
  }
  for (const auto& o : *offsets)
    if (!o.is_number_integer() || o.get<int64_t>() < 0) bad(path, "data_offsets are not non-negative integers", name);
  e.begin = (*offsets)[0].get<uint64_t>();
  e.end = (*offsets)[1].get<uint64_t>();
  if (e.end < e.begin || e.end - e.begin != bytes)
    bad(path, str("data_offsets [", e.begin, ", ", e.end, ") hold ", e.end - e.begin, " bytes, but ", code, " ",
                  e.shape.str(), " needs ", bytes),
        name);
  return e;
}

}  // namespace

const Tensor* SafetensorsFile::find(const std::string& name) const {
  for (const auto& [n, t] : tensors)
    if (n == name) return &t;
  return nullptr;
}

const char* safetensors_dtype_code(DType dt) {
  for (const auto& c : kCodes)
    if (c.dtype == dt) return c.code;
  SEG_FAIL(runtime, "safetensors: dtype ", dtype_name(dt), " has no code");
}

std::vector<char> serialize_safetensors(const NamedTensors& tensors, const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<Tensor> cpu;
  std::set<std::string> seen;
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    SEG_CHECK(!name.empty() && name != "__metadata__", runtime, "safetensors: invalid tensor name '", name, "'");
    SEG_CHECK(seen.insert(name).second, runtime, "safetensors: tensor name '", name, "' appears twice");
    SEG_CHECK(t.defined(), runtime, "safetensors: tensor '", name, "' is undefined");
    cpu.push_back(t.detach().to(Device::cpu()).contiguous());
    const uint64_t n = cpu.back().nbytes();
    header[name] = {{"dtype", safetensors_dtype_code(t.dtype())}, {"shape", t.shape().vec()}, {"data_offsets", {offset, offset + n}}};
    offset += n;
  }
  std::string text = header.dump();
  while ((8 + text.size()) % 8 != 0) text += ' ';  // the data block starts 8-byte aligned
  std::vector<char> out(8 + text.size() + offset);
  const uint64_t n = text.size();
  std::memcpy(out.data(), &n, 8);
  std::memcpy(out.data() + 8, text.data(), text.size());
  char* data = out.data() + 8 + text.size();
  for (const Tensor& t : cpu) {
    if (t.nbytes() > 0) std::memcpy(data, t.data_ptr(), t.nbytes());
    data += t.nbytes();
  }
  return out;
}

FileDigest write_safetensors(const std::string& path, const NamedTensors& tensors,
                             const std::map<std::string, std::string>& metadata) {
  const std::vector<char> bytes = serialize_safetensors(tensors, metadata);
  write_file_atomic(path, bytes.data(), bytes.size());
  return digest_of(bytes.data(), bytes.size());
}

SafetensorsFile parse_safetensors(const std::vector<char>& bytes, const std::string& path) {
  if (bytes.size() < 8) bad(path, str("the file has ", bytes.size(), " bytes, fewer than the 8-byte header length"));
  const uint64_t n = read_u64_le(bytes.data());
  if (n > kMaxHeaderBytes) bad(path, str("header length ", n, " is implausible (above 100 MB)"));
  if (n > bytes.size() - 8) bad(path, str("truncated: the header needs ", n, " bytes, the file has ", bytes.size() - 8, " after the length"));
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(bytes.begin() + 8, bytes.begin() + 8 + static_cast<std::ptrdiff_t>(n));
  } catch (const nlohmann::json::exception& e) {
    bad(path, std::string("header is not valid JSON (") + e.what() + ")");
  }
  if (!header.is_object()) bad(path, "header is not a JSON object");

  SafetensorsFile file;
  std::vector<Entry> entries;
  for (const auto& [name, value] : header.items()) {
    if (name == "__metadata__") {
      if (!value.is_object()) bad(path, "__metadata__ is not an object");
      for (const auto& [k, v] : value.items()) {
        if (!v.is_string()) bad(path, "__metadata__ value of '" + k + "' is not a string");
        file.metadata[k] = v.get<std::string>();
      }
      continue;
    }
    entries.push_back(parse_entry(name, value, path));
  }
  // The tensors must tile the data block exactly: sorted by offset, each starts where the last ended.
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  const uint64_t data_size = bytes.size() - 8 - n;
  uint64_t expected = 0;
  for (const Entry& e : entries) {
    if (e.begin != expected)
      bad(path, str("tensor data at [", e.begin, ", ", e.end, ") ", e.begin < expected ? "overlaps" : "leaves a gap after",
                    " the previous tensor"),
          e.name);
    if (e.end > data_size)
      bad(path, str("truncated: the tensor's data ends at byte ", e.end, " of the data block, which has only ", data_size),
          e.name);
    expected = e.end;
  }
  if (expected != data_size) bad(path, str("the data block has ", data_size - expected, " bytes after the last tensor"));

  const char* data = bytes.data() + 8 + n;
  for (const Entry& e : entries) {
    Tensor t = Tensor::empty(e.shape, e.dtype, Device::cpu());
    if (t.nbytes() > 0) std::memcpy(t.data_ptr(), data + e.begin, t.nbytes());
    file.tensors.emplace_back(e.name, std::move(t));
  }
  return file;
}

SafetensorsFile read_safetensors(const std::string& path) { return parse_safetensors(read_file(path), path); }

}  // namespace seg
