// The CUDA kernel lab (kernels/lab/tc_lab.cpp): the versions of each kernel family, as the
// harness sees them. One file per family lists its versions with a one-line idea each:
//   gemm_tc_lab.cu   C[M,N] = A[M,K] * B[K,N], f16 in, f32 out (A, B row-major)
//   conv_tc_lab.cu   the three convolution GEMMs, f16 or f32 as TF32 (NHWC, [O,KH,KW,C] weights)
// Built twice: lab_tc_sim (g++ against the simulator: small sizes, every element checked, the
// simulator's counters and H200 roofline estimate) and lab_tc (nvcc, for a GPU: CUDA-event times,
// TFLOP/s, the share of cuBLASLt / cuDNN).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/common/conv_shape.h"
#include "kernels/common/half.h"
#include "kernels/cuda/gemm_tc.h"
#include "kernels/cuda/stream.h"

namespace seg::lab {

struct GemmProblem {
  int M, N, K;
  const seg::f16* A;  // M x K, row-major (device)
  const seg::f16* B;  // K x N, row-major (device)
  float* C;           // M x N, row-major (device)
  void* workspace;    // split-K partials, cuBLASLt's workspace
  size_t workspace_bytes;
};

struct Version {
  int id;
  const char* name;
  const char* idea;
  bool library;  // the baseline (cuBLASLt / cuDNN), not a version of ours
};

// GEMM family.
const std::vector<Version>& gemm_versions();
// Runs version `id` (launches only; nothing is synchronised). False if this build lacks it.
bool run_gemm_version(int id, const GemmProblem& p, seg::cuda::Stream stream);
size_t gemm_workspace_bytes(int M, int N, int K);

enum class ConvDir { forward, backward_data, backward_weight };
const char* conv_dir_name(ConvDir d);

// The convolution lab's element type (lab_tc conv --dtype): f16 (mixed precision's convolutions)
// or f32 (O0's, on TF32 tensor cores as the product runs them by default).
enum class ConvType { f16, f32 };
const char* conv_type_name(ConvType t);

struct ConvProblem {
  ConvShape s;
  ConvDir dir;
  ConvType type;
  const void* x;   // forward, backward weight: [N,H,W,C] of `type`
  const void* w;   // forward, backward data: [O,KH,KW,Cg]
  const void* dy;  // backward: [N,Ho,Wo,O]
  void* out;       // y, dx or dw
  void* workspace;
  size_t workspace_bytes;
  seg::cuda::TcTile tile = seg::cuda::TcTile::automatic;  // lab_tc conv --tile: the product's choice, or forced
};

const std::vector<Version>& conv_versions();
// Runs version `id` (launches only): 1 ran, 0 this build lacks it, kSameAsProduct it would run the
// product's (v3's) kernel with the same plan on this problem, so it is not run (or timed) again,
// kF16Only it exists for f16 only (v2's mma.sync, v6's half transpose), kF32Only for f32 only (v9).
inline constexpr int kSameAsProduct = -1;
inline constexpr int kF16Only = -2;
inline constexpr int kF32Only = -3;
int run_conv_version(int id, const ConvProblem& p, seg::cuda::Stream stream);
size_t conv_workspace_bytes(const ConvShape& s, ConvType t);
// How the product (v3) would launch this problem, without running it: the tile, the output tiles
// and the split count (backward weight), with v4's count beside it (lab_tc conv --plan).
std::string conv_plan(const ConvShape& s, ConvDir d, ConvType t);
// What the library version of the last call chose (cuDNN's algorithm, its workspace and how it was
// found), emptied by reading; "" when nothing is known (cuBLASLt, simulated builds).
std::string take_library_note();

}  // namespace seg::lab
