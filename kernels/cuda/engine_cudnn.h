// Convolutions through cuDNN: the `cudnn` engine (engine.h), the baseline of the kernel lab and
// the oracle of the GPU tests of conv2d_tc. Same shapes, layouts and arguments as conv2d_tc.h
// (NHWC activations with pixel strides ldx/ldy, [O, KH, KW, Cg] filters as CUDNN_TENSOR_NHWC);
// the forward's activation must be none (cuDNN's fused conv-bias-activation is another API).
// f16/bf16 run with CUDNN_TENSOR_OP_MATH and f32 accumulation; f32 with TF32 allowed while
// seg::cuda::allow_tf32() (CUDNN_DEFAULT_MATH), else CUDNN_FMA_MATH (strict f32).
// Algorithms (CudnnAlgoSearch below), decided once per direction, dtype, shape, strides, TF32 and
// determinism setting and device, then cached. By default cuDNN times its algorithms
// (cudnnFind*AlgorithmEx, PyTorch's cudnn.benchmark) and the fastest that fits runs; under
// seg::cuda::deterministic() the heuristic's ranking decides instead (a timed search can choose
// differently from run to run) and only CUDNN_DETERMINISTIC algorithms qualify. The search considers
// algorithms needing up to max(args.workspace.bytes, 256 MiB) of workspace; a call uses
// args.workspace when it is large enough and otherwise allocates stream-ordered (cudaMallocAsync).
// The bias gradient is our own column-sum kernel (conv2d_backward_weight_tc with dw null):
// cudnnConvolutionBackwardBias returned NOT_SUPPORTED for bf16 (cuDNN 9, H200).
//
// The library is not linked: it is loaded on first use with dlopen, so the binary runs where cuDNN
// is absent (and says so). Search order: $SEG_CUDNN_LIBRARY (a file), the directory CMake found at
// configure time, the nvidia-cudnn-cu13 Python package (nvidia/cudnn/lib in site-/dist-packages of
// $VIRTUAL_ENV, $CONDA_PREFIX, ~/.local, /usr/local and /usr), then the loader's own search path.
// Present only in the nvcc build with cudnn.h found (SEG_WITH_CUDNN); elsewhere EngineUnavailable.
#pragma once

#include <cstddef>
#include <string>

#include "kernels/common/conv_shape.h"
#include "kernels/cuda/conv2d_tc.h"
#include "kernels/cuda/stream.h"

namespace seg::cuda {

bool cudnn_available(std::string* why_not = nullptr);

enum class CudnnAlgoSearch : int {
  measured,   // the default: cudnnFind*AlgorithmEx, the fastest algorithm that fits
  heuristic,  // cudnnGet*Algorithm_v7's first that fits (PyTorch's default without cudnn.benchmark)
  sums_only,  // measured, but only algorithms that sum products (implicit/explicit GEMM, direct):
              // no FFT or Winograd, whose transforms add error that a sum's bound does not cover.
              // The oracle setting of the GPU tests.
};
void set_cudnn_algo_search(CudnnAlgoSearch search);
CudnnAlgoSearch cudnn_algo_search();
// What this thread's last cuDNN convolution ran, e.g. "cuDNN forward: IMPLICIT_PRECOMP_GEMM, 3.1 MiB
// workspace, 0.215 ms in cuDNN's own search" ("" before any, and always in builds without cuDNN);
// clear = true empties it after reading.
std::string cudnn_last_choice(bool clear = false);
// The file cuDNN was loaded from and its version ("" before a successful load).
std::string cudnn_description();

template <class T>
void conv2d_forward_cudnn(const ConvShape& s, const T* x, const T* w, const T* b, T* y, Stream stream,
                          const ConvTcArgs& args = {});
template <class T>
void conv2d_backward_data_cudnn(const ConvShape& s, const T* w, const T* dy, T* dx, Stream stream,
                                const ConvTcArgs& args = {});
template <class T>
void conv2d_backward_weight_cudnn(const ConvShape& s, const T* x, const T* dy, T* dw, T* db, Stream stream,
                                  const ConvTcArgs& args = {});

}  // namespace seg::cuda
