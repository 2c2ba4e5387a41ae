// Launchers of the small kernels of tests/sim/streams.cu, each on a given stream. Pointers are
// device pointers (or pinned host memory, which kernels may use directly).
#pragma once

#include <cuda_runtime.h>

namespace simtest::streams {

void fill(float* y, int n, float value, cudaStream_t stream);                         // y[i] = value
void affine(const float* x, float* y, int n, float a, float b, cudaStream_t stream);  // y[i] = a x[i] + b
void add_one(float* y, int n, cudaStream_t stream);                                   // y[i] += 1
void append_tag(int* log, int* count, int tag, cudaStream_t stream);                  // log[(*count)++] = tag
void sum_first(const float* a, const float* b, float* out, cudaStream_t stream);      // *out = a[0] + b[0]
void trap(float* y, cudaStream_t stream);                                             // thread 0 calls __trap()

}  // namespace simtest::streams
