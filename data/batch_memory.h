// Where the loader puts the tensors it hands to the training loop.
//
// In CUDA builds with a device present, batches live in pinned (page-locked) host memory
// (core's pinned_host_allocator(), cudaHostAlloc behind a caching allocator), so the copy to the
// GPU can run asynchronously and at full PCIe speed; elsewhere they are ordinary CPU memory. Every
// batch tensor of the data pipeline is created here, nowhere else.
#pragma once

#include "core/tensor.h"

namespace seg::data {

// Whether new_batch_tensor() returns pinned memory (a CUDA build on a machine with a GPU).
bool batch_memory_is_pinned();

// An uninitialised CPU tensor for a batch (pinned when the build supports it).
Tensor new_batch_tensor(const Shape& shape, DType dtype);

}  // namespace seg::data
