// Where the loader puts the tensors it hands to the training loop.
//
// Hook for CUDA builds: batches should live in pinned (page-locked) host memory so the copy to the
// GPU can run asynchronously and at full PCIe speed. core/ has no pinned allocator yet, so this
// returns ordinary CPU memory everywhere; when core gains one (e.g. a Device::cuda_host allocator
// backed by cudaHostAlloc), only new_batch_tensor() changes. Every batch tensor of the data pipeline
// is created here, nowhere else.
#pragma once

#include "core/tensor.h"

namespace seg::data {

// Whether new_batch_tensor() returns pinned memory in this build (false until core supports it).
bool batch_memory_is_pinned();

// An uninitialised CPU tensor for a batch (pinned when the build supports it).
Tensor new_batch_tensor(const Shape& shape, DType dtype);

}  // namespace seg::data
