#include "core/npy.h"

#include <charconv>
#include <cstdint>
#include <cstring>

#include "core/fileio.h"

namespace seg {

namespace {
struct NpyType {
  const char* code;
  DType dtype;
};
const NpyType kTypes[] = {{"<f4", DType::f32}, {"<f8", DType::f64}, {"<f2", DType::f16}, {"<i4", DType::i32},
                          {"<i8", DType::i64}, {"|u1", DType::u8},  {"|b1", DType::u8}};

[[noreturn]] void bad(const std::string& path, const std::string& what) {
  throw Error(ErrorKind::data, "not a valid .npy file: " + what).file(path);
}

// Value of `key` in the header dict text, e.g. 'descr': '<f4' -> <f4.
std::string header_value(const std::string& header, const std::string& key, const std::string& path) {
  const size_t k = header.find("'" + key + "'");
  if (k == std::string::npos) bad(path, "header has no '" + key + "'");
  size_t v = header.find(':', k);
  if (v == std::string::npos) bad(path, "malformed header");
  ++v;
  while (v < header.size() && header[v] == ' ') ++v;
  if (v < header.size() && header[v] == '\'') {
    const size_t end = header.find('\'', v + 1);
    return header.substr(v + 1, end - v - 1);
  }
  if (v < header.size() && header[v] == '(') return header.substr(v, header.find(')', v) - v + 1);
  return header.substr(v, header.find_first_of(",}", v) - v);
}
}  // namespace

Tensor parse_npy(const std::vector<char>& bytes, const std::string& path) {
  if (bytes.size() < 10 || std::memcmp(bytes.data(), "\x93NUMPY", 6) != 0) bad(path, "missing magic string");
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t header_len = 0, offset = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) bad(path, "truncated header");
    for (int i = 0; i < 4; ++i) header_len |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
    offset = 12;
  } else {
    bad(path, "unsupported version " + std::to_string(major));
  }
  if (header_len > bytes.size() - offset) bad(path, "truncated header");
  const std::string header(bytes.data() + offset, header_len);
  const std::string descr = header_value(header, "descr", path);
  if (header_value(header, "fortran_order", path).find("False") == std::string::npos)
    bad(path, "Fortran-order arrays are not supported (save with np.ascontiguousarray)");
  DType dtype = DType::f32;
  bool known = false;
  for (const auto& t : kTypes)
    if (descr == t.code) {
      dtype = t.dtype;
      known = true;
    }
  if (!known) bad(path, "unsupported dtype '" + descr + "'");
  // "(2, 3)", "(5,)" or "()": non-negative integers; the byte count is checked against the file
  // before anything is allocated.
  const std::string shape_text = header_value(header, "shape", path);
  if (shape_text.size() < 2 || shape_text.front() != '(' || shape_text.back() != ')')
    bad(path, "shape is not a tuple: '" + shape_text + "'");
  Shape shape;
  uint64_t nbytes = dtype_size(dtype);
  // Shape::numel multiplies the sizes in int64 in order, so the product of the non-zero sizes must
  // fit there too: a zero later in the tuple does not save the earlier products (fuzz_npy found it).
  uint64_t nonzero_product = 1;
  for (size_t i = 1; i + 1 < shape_text.size();) {
    while (i + 1 < shape_text.size() && (shape_text[i] == ' ' || shape_text[i] == ',')) ++i;
    if (i + 1 >= shape_text.size()) break;
    uint64_t dim = 0;
    const char* first = shape_text.data() + i;
    const auto [end, ec] = std::from_chars(first, shape_text.data() + shape_text.size() - 1, dim);
    if (ec != std::errc() || end == first) bad(path, "shape '" + shape_text + "' is not a tuple of sizes");
    if (shape.size() == Shape::kMaxDims) bad(path, str("rank above ", Shape::kMaxDims, " is not supported"));
    // (the second test also keeps every size within int64)
    if (dim != 0 && (nbytes > UINT64_MAX / dim || nonzero_product > static_cast<uint64_t>(INT64_MAX) / dim))
      bad(path, "shape is too large");
    if (dim != 0) nonzero_product *= dim;
    nbytes *= dim;
    shape.push_back(static_cast<int64_t>(dim));
    i = static_cast<size_t>(end - shape_text.data());
  }
  const size_t data_offset = offset + header_len;
  if (bytes.size() - data_offset != nbytes)
    bad(path, "data has " + std::to_string(bytes.size() - data_offset) + " bytes, shape " + shape.str() + " needs " +
                  std::to_string(nbytes));
  Tensor t = Tensor::empty(shape, dtype, Device::cpu());
  if (t.nbytes() > 0) std::memcpy(t.data_ptr(), bytes.data() + data_offset, t.nbytes());
  return t;
}

Tensor read_npy(const std::string& path) { return parse_npy(read_file(path), path); }

std::vector<char> serialize_npy(const Tensor& t_in) {
  const Tensor t = t_in.to(Device::cpu()).contiguous();
  const char* code = nullptr;
  for (const auto& k : kTypes)
    if (k.dtype == t.dtype() && !code) code = k.code;
  SEG_CHECK(code != nullptr, runtime, "write_npy: dtype ", dtype_name(t.dtype()), " has no .npy code");
  std::string shape = "(";
  for (int d = 0; d < t.dim(); ++d) shape += std::to_string(t.size(d)) + (t.dim() == 1 ? "," : (d + 1 < t.dim() ? ", " : ""));
  shape += ")";
  std::string header = std::string("{'descr': '") + code + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad with spaces so that magic + version + length + header is a multiple of 64, ending in '\n'.
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::vector<char> out(10 + header.size() + t.nbytes());
  std::memcpy(out.data(), "\x93NUMPY\x01\x00", 8);
  out[8] = static_cast<char>(header.size() & 0xFF);
  out[9] = static_cast<char>(header.size() >> 8);
  std::memcpy(out.data() + 10, header.data(), header.size());
  if (t.nbytes() > 0) std::memcpy(out.data() + 10 + header.size(), t.data_ptr(), t.nbytes());
  return out;
}

void write_npy(const std::string& path, const Tensor& t) {
  const std::vector<char> out = serialize_npy(t);
  write_file_atomic(path, out.data(), out.size());
}

}  // namespace seg
