// Shape: up to kMaxDims sizes (or strides) stored inline, so tensors of every rank avoid a heap
// allocation for their metadata.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace seg {

class Shape {
 public:
  static constexpr int kMaxDims = 6;

  Shape() = default;
  Shape(std::initializer_list<int64_t> dims);
  explicit Shape(const std::vector<int64_t>& dims);

  int size() const { return n_; }
  int64_t operator[](int i) const { return d_[i]; }
  int64_t& operator[](int i) { return d_[i]; }
  const int64_t* begin() const { return d_; }
  const int64_t* end() const { return d_ + n_; }
  int64_t back() const { return d_[n_ - 1]; }
  void push_back(int64_t v);

  int64_t numel() const;  // product of the sizes (1 for a scalar); a usage error if it overflows
  std::vector<int64_t> vec() const { return std::vector<int64_t>(begin(), end()); }
  std::string str() const;  // "[2, 3, 4]"

  bool operator==(const Shape& o) const;
  bool operator!=(const Shape& o) const { return !(*this == o); }

 private:
  int64_t d_[kMaxDims] = {};
  int n_ = 0;
};

// Row-major (C order) strides of a shape, in elements.
Shape contiguous_strides(const Shape& shape);

}  // namespace seg
