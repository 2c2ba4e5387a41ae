#include "core/shape.h"

#include "core/error.h"

namespace seg {

Shape::Shape(std::initializer_list<int64_t> dims) {
  for (int64_t v : dims) push_back(v);
}

Shape::Shape(const std::vector<int64_t>& dims) {
  for (int64_t v : dims) push_back(v);
}

void Shape::push_back(int64_t v) {
  SEG_CHECK(n_ < kMaxDims, usage, "tensor rank above ", kMaxDims, " is not supported");
  d_[n_++] = v;
}

int64_t Shape::numel() const {
  // A checked product: a shape read from a file or computed from a config must not wrap around to a
  // small element count (and then a small allocation that later loops overrun). A zero size makes
  // the product 0 whatever the others are, so look for one before multiplying.
  for (int i = 0; i < n_; ++i)
    if (d_[i] == 0) return 0;
  int64_t n = 1;
  for (int i = 0; i < n_; ++i)
    SEG_CHECK(!__builtin_mul_overflow(n, d_[i], &n), usage, "tensor shape ", str(),
              " has more elements than a 64-bit count holds; check the sizes that produced it");
  return n;
}

std::string Shape::str() const {
  std::string s = "[";
  for (int i = 0; i < n_; ++i) s += (i ? ", " : "") + std::to_string(d_[i]);
  return s + "]";
}

bool Shape::operator==(const Shape& o) const {
  if (n_ != o.n_) return false;
  for (int i = 0; i < n_; ++i)
    if (d_[i] != o.d_[i]) return false;
  return true;
}

Shape contiguous_strides(const Shape& shape) {
  Shape strides = shape;
  int64_t s = 1;
  for (int i = shape.size() - 1; i >= 0; --i) {
    strides[i] = s;
    s *= shape[i];
  }
  return strides;
}

}  // namespace seg
