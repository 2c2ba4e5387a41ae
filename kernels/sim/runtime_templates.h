// The C++ overloads of the runtime API that CUDA's cuda_runtime.h declares only under nvcc
// (inside `#if defined(__CUDACC__)`): symbol copies by reference and function attributes by
// kernel pointer. With them, host code in .cu files compiles unchanged in the simulator build:
//   cudaMemcpyToSymbol(device_counter, &value, sizeof value);
//   cudaFuncSetAttribute(my_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
// Each forwards to the C function (runtime_api.cpp), as CUDA's own templates do.
#pragma once

#include <cuda_runtime.h>

template <class T>
inline cudaError_t cudaMemcpyToSymbol(const T& symbol, const void* src, size_t count, size_t offset = 0,
                                      cudaMemcpyKind kind = cudaMemcpyHostToDevice) {
  return ::cudaMemcpyToSymbol(static_cast<const void*>(&symbol), src, count, offset, kind);
}
template <class T>
inline cudaError_t cudaMemcpyFromSymbol(void* dst, const T& symbol, size_t count, size_t offset = 0,
                                        cudaMemcpyKind kind = cudaMemcpyDeviceToHost) {
  return ::cudaMemcpyFromSymbol(dst, static_cast<const void*>(&symbol), count, offset, kind);
}
template <class T>
inline cudaError_t cudaMemcpyToSymbolAsync(const T& symbol, const void* src, size_t count, size_t offset = 0,
                                           cudaMemcpyKind kind = cudaMemcpyHostToDevice, cudaStream_t stream = 0) {
  return ::cudaMemcpyToSymbolAsync(static_cast<const void*>(&symbol), src, count, offset, kind, stream);
}
template <class T>
inline cudaError_t cudaMemcpyFromSymbolAsync(void* dst, const T& symbol, size_t count, size_t offset = 0,
                                             cudaMemcpyKind kind = cudaMemcpyDeviceToHost, cudaStream_t stream = 0) {
  return ::cudaMemcpyFromSymbolAsync(dst, static_cast<const void*>(&symbol), count, offset, kind, stream);
}
template <class T>
inline cudaError_t cudaGetSymbolAddress(void** dev_ptr, const T& symbol) {
  return ::cudaGetSymbolAddress(dev_ptr, static_cast<const void*>(&symbol));
}
template <class T>
inline cudaError_t cudaFuncSetAttribute(T* entry, cudaFuncAttribute attr, int value) {
  return ::cudaFuncSetAttribute(reinterpret_cast<const void*>(entry), attr, value);
}
template <class T>
inline cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attr, T* entry) {
  return ::cudaFuncGetAttributes(attr, reinterpret_cast<const void*>(entry));
}
