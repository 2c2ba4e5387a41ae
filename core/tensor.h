// Tensor: a typed, strided view of a Storage on one device.
//
// Layout (DESIGN decision 1): 4-D activations are [N, H, W, C] (channels-last) and contiguous,
// except that a tensor may be a channel slice of a wider one (W stride > C), which is how concat
// along channels stays zero-copy. Conv weights are [O, KH, KW, I/groups].
//
// A Tensor is a cheap handle (a shared_ptr): copying it shares data, like PyTorch. clone() copies.
// The autograd fields (requires_grad, grad, grad_fn) are added by core/autograd.h.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/dtype.h"
#include "core/shape.h"
#include "core/storage.h"

namespace seg {

struct AutogradMeta;  // core/autograd.h
class Node;          // core/autograd.h

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  int64_t offset = 0;  // in elements
  Shape shape;
  Shape strides;  // in elements
  DType dtype = DType::f32;
  std::shared_ptr<AutogradMeta> autograd;  // null until autograd touches the tensor
};

class Tensor {
 public:
  Tensor() = default;  // an undefined tensor (defined() == false)
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // ---- factories ----
  // The device is always named (DESIGN decision 13: a tensor is created on the device of the tensors
  // it derives from, never on a default device); inside ops use x.new_empty(...) and friends.
  static Tensor empty(const Shape& shape, DType dtype, Device device);
  // A CPU tensor in pinned host memory (pinned_host_allocator(); Error(device) where unavailable).
  static Tensor empty_pinned(const Shape& shape, DType dtype = DType::f32);
  static Tensor zeros(const Shape& shape, DType dtype, Device device);
  static Tensor full(const Shape& shape, double value, DType dtype, Device device);
  // New tensors on this tensor's device (and dtype, unless given).
  Tensor new_empty(const Shape& shape) const { return empty(shape, dtype(), device()); }
  Tensor new_empty(const Shape& shape, DType dt) const { return empty(shape, dt, device()); }
  Tensor new_zeros(const Shape& shape) const { return zeros(shape, dtype(), device()); }
  Tensor new_zeros(const Shape& shape, DType dt) const { return zeros(shape, dt, device()); }
  Tensor new_full(const Shape& shape, double value) const { return full(shape, value, dtype(), device()); }
  Tensor new_full(const Shape& shape, double value, DType dt) const { return full(shape, value, dt, device()); }
  // A CPU tensor holding a copy of `values` (values.size() must equal shape.numel()).
  template <class T>
  static Tensor from_vector(const Shape& shape, const std::vector<T>& values);

  // ---- metadata ----
  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const { return impl_->shape; }
  const Shape& strides() const { return impl_->strides; }
  int dim() const { return impl_->shape.size(); }
  int64_t size(int d) const;  // negative d counts from the end
  int64_t stride(int d) const;
  int64_t numel() const { return impl_->shape.numel(); }
  DType dtype() const { return impl_->dtype; }
  Device device() const { return impl_->storage->device(); }
  size_t element_size() const { return dtype_size(impl_->dtype); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * element_size(); }
  bool is_contiguous() const;
  std::string str() const;  // "f32[2, 3] cpu"

  // ---- data access ----
  void* data_ptr() const;
  template <class T>
  T* data() const;  // checks that T matches dtype()
  template <class T>
  std::vector<T> to_vector() const;  // copies to a CPU vector of T (dtype must match T)
  double item() const;               // the single element, as double

  // ---- views (share storage) ----
  Tensor slice(int d, int64_t start, int64_t end) const;  // [start, end) along d
  Tensor channels(int64_t start, int64_t end) const { return slice(-1, start, end); }
  Tensor view(const Shape& shape) const;     // same elements, new shape; needs contiguous
  Tensor reshape(const Shape& shape) const;  // view if contiguous, else a contiguous copy
  Tensor permute(const std::vector<int>& dims) const;  // view with dimension d of the result = dims[d]

  // ---- copies ----
  Tensor contiguous() const;  // this if already contiguous
  Tensor clone() const;       // always a new contiguous tensor
  Tensor to(Device device) const;
  Tensor to(DType dtype) const;
  Tensor& copy_(const Tensor& src);  // same shape; converts dtype, crosses devices
  // Moves this tensor's data to `device` in place: every handle of it (an optimizer's, an autograd
  // leaf's) sees the moved data; its gradient moves too. The result is contiguous.
  Tensor& move_to_(Device device);
  Tensor& fill_(double value);
  Tensor& zero_() { return fill_(0.0); }

  // ---- autograd (implemented in core/autograd.cpp) ----
  bool requires_grad() const;
  Tensor& set_requires_grad(bool on);  // only on leaves (tensors without grad_fn)
  bool is_leaf() const;                // true unless produced by a recorded op
  const Tensor& grad() const;          // accumulated gradient of a leaf; undefined if none yet
  void set_grad(const Tensor& g);
  void zero_grad();                    // drops the gradient (the next backward writes a fresh one)
  std::shared_ptr<Node> grad_fn() const;
  // Backward from this tensor: `grad` defaults to 1 for a one-element tensor.
  void backward(const Tensor& grad = Tensor()) const;
  Tensor detach() const;               // same data, no history, requires_grad false
  // Called once per backward, right after this leaf's gradient is complete.
  void add_grad_ready_hook(std::function<void(const Tensor&)> hook);
  const std::string& name() const;     // parameter name ("" if unnamed)
  Tensor& set_name(const std::string& n);

  // ---- identity ----
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  bool same(const Tensor& o) const { return impl_ == o.impl_; }
  // Work queued on `stream` (other than the device's current one) uses this tensor's memory: the
  // caching allocator reuses it only after that work (core/storage.h).
  void record_stream(cuda::Stream stream) const { impl_->storage->record_stream(stream); }
  bool shares_storage(const Tensor& o) const { return impl_ && o.impl_ && impl_->storage == o.impl_->storage; }

 private:
  void check_defined(const char* what) const;
  std::shared_ptr<TensorImpl> impl_;
};

// Throws Error(runtime) naming `op` unless t has the expected dtype/device/rank.
void check_dtype(const Tensor& t, DType expected, const char* op, const char* arg);
// Throws Error(device) naming `op` and both devices unless every defined tensor is on one device.
void check_same_device(const Tensor& a, const Tensor& b, const char* op);
void check_same_device(const char* op, std::initializer_list<const Tensor*> tensors);

// ---- template definitions ----
template <class T>
T* Tensor::data() const {
  check_defined("data");
  if (dtype_v<T> != impl_->dtype)
    throw Error(ErrorKind::runtime, seg::str("tensor of dtype ", dtype_name(impl_->dtype), " accessed as ",
                                        dtype_name(dtype_v<T>)))
        .with("shape", impl_->shape.str());
  return static_cast<T*>(data_ptr());
}

template <class T>
Tensor Tensor::from_vector(const Shape& shape, const std::vector<T>& values) {
  SEG_CHECK(static_cast<int64_t>(values.size()) == shape.numel(), runtime, "from_vector: ", values.size(),
            " values for shape ", shape.str());
  Tensor t = empty(shape, dtype_v<T>, Device::cpu());
  T* dst = t.data<T>();
  for (size_t i = 0; i < values.size(); ++i) dst[i] = values[i];
  return t;
}

template <class T>
std::vector<T> Tensor::to_vector() const {
  Tensor c = to(Device::cpu()).contiguous();
  const T* p = c.data<T>();
  return std::vector<T>(p, p + c.numel());
}

}  // namespace seg
