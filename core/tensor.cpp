#include "core/tensor.h"

#include <cstring>

#include "core/allocator.h"
#include "core/cuda_copy.h"
#include "kernels/cpu/copy.h"

namespace seg {

namespace {


Shape normalized_strides(const Shape& shape) { return contiguous_strides(shape); }

cpu::CopyLayout make_layout(const Tensor& dst, const Tensor& src) {
  cpu::CopyLayout L;
  L.ndim = dst.dim();
  for (int d = 0; d < L.ndim; ++d) {
    L.shape[d] = dst.size(d);
    L.src_stride[d] = src.stride(d);
    L.dst_stride[d] = dst.stride(d);
  }
  return L;
}

// Copies between two CPU tensors of equal shape, any dtypes.
void cpu_copy(const Tensor& dst, const Tensor& src) {
  if (dst.numel() == 0) return;
  const cpu::CopyLayout layout = make_layout(dst, src);
#define SEG_ALL_DTYPES (DType::f32, DType::f64, DType::f16, DType::bf16, DType::i32, DType::i64, DType::u8)
  SEG_DISPATCH("copy", src.dtype(), Device::cpu(), SEG_ALL_DTYPES, [&](auto s_tag) {
    using S = SEG_TYPE(s_tag);
    SEG_DISPATCH("copy", dst.dtype(), Device::cpu(), SEG_ALL_DTYPES, [&](auto d_tag) {
      using D = SEG_TYPE(d_tag);
      cpu::copy_strided<S, D>(static_cast<const S*>(src.data_ptr()), static_cast<D*>(dst.data_ptr()), layout);
    });
  });
}

}  // namespace

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  for (int64_t s : shape) SEG_CHECK(s >= 0, runtime, "negative size in shape ", shape.str());
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(static_cast<size_t>(shape.numel()) * dtype_size(dtype), device);
  impl->shape = shape;
  impl->strides = normalized_strides(shape);
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

Tensor Tensor::empty_pinned(const Shape& shape, DType dtype) {
  for (int64_t s : shape) SEG_CHECK(s >= 0, runtime, "negative size in shape ", shape.str());
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(static_cast<size_t>(shape.numel()) * dtype_size(dtype), Device::cpu(),
                                            pinned_host_allocator());
  impl->shape = shape;
  impl->strides = normalized_strides(shape);
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  t.zero_();
  return t;
}

Tensor Tensor::full(const Shape& shape, double value, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  t.fill_(value);
  return t;
}

void Tensor::check_defined(const char* what) const {
  SEG_CHECK(impl_ != nullptr, runtime, what, "() called on an undefined tensor");
}

int64_t Tensor::size(int d) const {
  const int n = dim();
  if (d < 0) d += n;
  SEG_CHECK(d >= 0 && d < n, runtime, "dimension ", d, " out of range for tensor ", str());
  return impl_->shape[d];
}

int64_t Tensor::stride(int d) const {
  const int n = dim();
  if (d < 0) d += n;
  SEG_CHECK(d >= 0 && d < n, runtime, "dimension ", d, " out of range for tensor ", str());
  return impl_->strides[d];
}

bool Tensor::is_contiguous() const {
  int64_t expected = 1;
  for (int d = dim() - 1; d >= 0; --d) {
    if (impl_->shape[d] != 1 && impl_->strides[d] != expected) return false;
    expected *= impl_->shape[d];
  }
  return true;
}

std::string Tensor::str() const {
  if (!impl_) return "undefined";
  return std::string(dtype_name(dtype())) + shape().str() + " " + device().str();
}

void* Tensor::data_ptr() const {
  check_defined("data_ptr");
  return static_cast<char*>(impl_->storage->data()) + impl_->offset * static_cast<int64_t>(element_size());
}

double Tensor::item() const {
  SEG_CHECK(numel() == 1, runtime, "item() needs a tensor with one element, got ", str());
  Tensor c = to(Device::cpu()).to(DType::f64);
  return *c.data<double>();
}

Tensor Tensor::slice(int d, int64_t start, int64_t end) const {
  check_defined("slice");
  const int n = dim();
  if (d < 0) d += n;
  SEG_CHECK(d >= 0 && d < n, runtime, "slice: dimension out of range for ", str());
  SEG_CHECK(0 <= start && start <= end && end <= impl_->shape[d], runtime, "slice [", start, ", ", end,
            ") out of range for dimension ", d, " of ", str());
  auto impl = std::make_shared<TensorImpl>(*impl_);
  impl->autograd = nullptr;  // a view is a new tensor for autograd
  impl->offset += start * impl_->strides[d];
  impl->shape[d] = end - start;
  return Tensor(std::move(impl));
}

Tensor Tensor::view(const Shape& shape) const {
  check_defined("view");
  SEG_CHECK(shape.numel() == numel(), runtime, "view: shape ", shape.str(), " has ", shape.numel(),
            " elements, tensor ", str(), " has ", numel());
  SEG_CHECK(is_contiguous(), runtime, "view needs a contiguous tensor, got strides ", strides().str(),
            " for ", str(), "; use reshape()");
  auto impl = std::make_shared<TensorImpl>(*impl_);
  impl->autograd = nullptr;
  impl->shape = shape;
  impl->strides = normalized_strides(shape);
  return Tensor(std::move(impl));
}

Tensor Tensor::permute(const std::vector<int>& dims) const {
  check_defined("permute");
  SEG_CHECK(static_cast<int>(dims.size()) == dim(), runtime, "permute: ", dims.size(), " dims for ", str());
  std::vector<bool> seen(dims.size(), false);
  auto impl = std::make_shared<TensorImpl>(*impl_);
  impl->autograd = nullptr;
  for (size_t d = 0; d < dims.size(); ++d) {
    SEG_CHECK(dims[d] >= 0 && dims[d] < dim() && !seen[static_cast<size_t>(dims[d])], runtime,
              "permute: bad dimension order for ", str());
    seen[static_cast<size_t>(dims[d])] = true;
    impl->shape[static_cast<int>(d)] = impl_->shape[dims[d]];
    impl->strides[static_cast<int>(d)] = impl_->strides[dims[d]];
  }
  return Tensor(std::move(impl));
}

Tensor Tensor::reshape(const Shape& shape) const { return is_contiguous() ? view(shape) : contiguous().view(shape); }

Tensor Tensor::contiguous() const {
  check_defined("contiguous");
  return is_contiguous() ? *this : clone();
}

Tensor Tensor::clone() const {
  check_defined("clone");
  Tensor out = empty(shape(), dtype(), device());
  out.copy_(*this);
  return out;
}

Tensor Tensor::to(Device target) const {
  check_defined("to");
  if (target == device()) return *this;
  Tensor out = empty(shape(), dtype(), target);
  out.copy_(*this);
  return out;
}

Tensor Tensor::to(DType target) const {
  check_defined("to");
  if (target == dtype()) return *this;
  Tensor out = empty(shape(), target, device());
  out.copy_(*this);
  return out;
}

Tensor& Tensor::copy_(const Tensor& src) {
  check_defined("copy_");
  SEG_CHECK(src.defined(), runtime, "copy_ from an undefined tensor");
  SEG_CHECK(src.shape() == shape(), runtime, "copy_: shape ", src.shape().str(), " into ", shape().str());
  if (device().is_cpu() && src.device().is_cpu()) {
    cpu_copy(*this, src);
  } else {
    cuda_copy(*this, src);
  }
  return *this;
}

Tensor& Tensor::move_to_(Device target) {
  check_defined("move_to_");
  if (target == device()) return *this;
  Tensor moved = empty(shape(), dtype(), target);
  moved.copy_(*this);
  impl_->storage = moved.impl_->storage;
  impl_->offset = 0;
  impl_->strides = moved.impl_->strides;
  if (requires_grad() && grad().defined()) {
    Tensor g = grad();
    g.move_to_(target);
  }
  return *this;
}

Tensor& Tensor::fill_(double value) {
  check_defined("fill_");
  if (numel() == 0) return *this;
  if (!device().is_cpu()) {
    cuda_fill(*this, value);
    return *this;
  }
  // Make one element of the right dtype, then broadcast it with a zero-stride copy.
  Tensor one = empty(Shape{}, DType::f64, Device::cpu());
  *one.data<double>() = value;
  Tensor scalar = one.to(dtype());
  auto impl = std::make_shared<TensorImpl>(*scalar.impl());
  impl->shape = shape();
  impl->strides = shape();
  for (int d = 0; d < dim(); ++d) impl->strides[d] = 0;
  Tensor broadcast(std::move(impl));
  cpu_copy(*this, broadcast);
  return *this;
}

void check_dtype(const Tensor& t, DType expected, const char* op, const char* arg) {
  if (t.dtype() != expected)
    throw Error(ErrorKind::runtime, str(op, ": ", arg, " must be ", dtype_name(expected), ", got ", t.str())).op(op);
}

void check_same_device(const char* op, std::initializer_list<const Tensor*> tensors) {
  const Tensor* first = nullptr;
  for (const Tensor* t : tensors) {
    if (!t || !t->defined()) continue;
    if (!first) {
      first = t;
      continue;
    }
    if (t->device() != first->device())
      throw Error(ErrorKind::device, str(op, ": tensors on different devices, ", first->device().str(), " and ",
                                         t->device().str(), " (", first->str(), " and ", t->str(), ")"))
          .op(op)
          .with("devices", first->device().str() + ", " + t->device().str())
          .hint("move every input to one device first (Tensor::to, Module::to)");
  }
}

void check_same_device(const Tensor& a, const Tensor& b, const char* op) { check_same_device(op, {&a, &b}); }

}  // namespace seg
