// ReadBack: the one device-to-host transfer of a training step (DESIGN decision 13).
//
// A step on a GPU produces a few small results the host needs: the loss (for the log), the pixel
// accuracy counts, the loss scaler's found-inf flag (to decide whether the optimizer steps). Each
// item() would be a device-to-host copy and a stream synchronisation; ReadBack gathers them instead:
//
//   ReadBack rb(device);
//   const size_t loss = rb.add(out.loss), stats = rb.add(out.stats);
//   ... rb.add(found_inf) ...
//   rb.fetch();                          // one copy into pinned (or pageable) host memory
//   double l = rb.item(loss); Tensor s = rb.host(stats);
//
// add() queues a device-side copy of the tensor's bytes into one staging buffer (so the tensor may be
// freed or overwritten afterwards); fetch() copies the buffer to the host once. On the CPU nothing is
// copied: host() returns the tensors themselves (cloned at add, for the same semantics).
#pragma once

#include <cstddef>
#include <vector>

#include "core/tensor.h"

namespace seg {

class ReadBack {
 public:
  explicit ReadBack(Device device);
  Device device() const { return device_; }
  // Queues t (on device(), any dtype, a few bytes) and returns its slot.
  size_t add(const Tensor& t);
  // The one device-to-host copy; host()/item() are valid afterwards. Later add()s need another fetch().
  void fetch();
  const Tensor& host(size_t slot) const;  // a CPU tensor of the queued shape and dtype
  double item(size_t slot) const;         // host(slot).item()
  size_t size() const { return items_.size(); }

 private:
  struct Item {
    Tensor queued;  // CPU: the clone; GPU: its bytes' place in the staging buffer (offset)
    size_t offset = 0;
    Shape shape;
    DType dtype = DType::u8;
    Tensor host;
  };
  Device device_;
  std::vector<Item> items_;
  bool fetched_ = false;
};

}  // namespace seg
