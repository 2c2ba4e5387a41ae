#include "core/readback.h"

#include <cstring>

namespace seg {

namespace {
// The bytes of a contiguous tensor as a u8 view of the same storage.
Tensor bytes_of(const Tensor& t) {
  const Tensor c = t.contiguous();
  auto impl = std::make_shared<TensorImpl>(*c.impl());
  impl->autograd = nullptr;
  impl->offset = c.impl()->offset * static_cast<int64_t>(c.element_size());
  impl->shape = Shape{static_cast<int64_t>(c.nbytes())};
  impl->strides = Shape{1};
  impl->dtype = DType::u8;
  return Tensor(std::move(impl));
}
}  // namespace

ReadBack::ReadBack(Device device) : device_(device) {}

size_t ReadBack::add(const Tensor& t) {
  SEG_CHECK(t.defined() && t.device() == device_, runtime, "ReadBack on ", device_.str(), ": cannot queue ", t.str());
  Item it;
  it.shape = t.shape();
  it.dtype = t.dtype();
  if (device_.is_cpu()) {
    it.host = t.detach().clone();
  } else {
    // Copy the bytes now (a device-to-device copy on the stream): the tensor may change later.
    it.queued = bytes_of(t).clone();
  }
  items_.push_back(std::move(it));
  fetched_ = false;
  return items_.size() - 1;
}

void ReadBack::fetch() {
  fetched_ = true;
  if (device_.is_cpu()) return;
  size_t total = 0;
  for (Item& it : items_) {
    if (!it.queued.defined()) continue;
    it.offset = total;
    total += (static_cast<size_t>(it.queued.numel()) + 7) / 8 * 8;
  }
  if (total == 0) return;
  Tensor staging = Tensor::empty({static_cast<int64_t>(total)}, DType::u8, device_);
  for (Item& it : items_)
    if (it.queued.defined()) staging.slice(0, static_cast<int64_t>(it.offset), static_cast<int64_t>(it.offset) + it.queued.numel()).copy_(it.queued);
  const Tensor host = staging.to(Device::cpu());  // the one device-to-host copy
  for (Item& it : items_) {
    if (!it.queued.defined()) continue;
    it.host = Tensor::empty(it.shape, it.dtype, Device::cpu());
    std::memcpy(it.host.data_ptr(), host.data<uint8_t>() + it.offset, it.host.nbytes());
    it.queued = Tensor();
  }
}

const Tensor& ReadBack::host(size_t slot) const {
  SEG_CHECK(slot < items_.size(), runtime, "ReadBack: no slot ", slot);
  SEG_CHECK(fetched_ && items_[slot].host.defined(), runtime, "ReadBack: fetch() before reading slot ", slot);
  return items_[slot].host;
}

double ReadBack::item(size_t slot) const { return host(slot).item(); }

}  // namespace seg
