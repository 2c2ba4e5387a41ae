// Who computes a GEMM or a convolution on the GPU: the one place that chooses (DESIGN, kernels/).
//
//   own       the project's kernels: tensor cores (kernels/cuda/gemm_tc.h, conv2d_tc.h) for f16,
//             bf16, and f32 while TF32 is allowed; the SIMT kernels for strict f32 (--no-tf32)
//   cublaslt  GEMMs through cuBLASLt (engine_cublaslt.h); convolutions stay `own`
//             (cuBLASLt has none)
//   cudnn     convolutions through cuDNN (engine_cudnn.h), GEMMs through cuBLASLt: the vendor
//             libraries PyTorch uses, the baseline of every benchmark
//   auto      per shape, from a small measured table (auto_table below), decided once per shape
//             and remembered; a shape the table does not cover runs `own`. The table's numbers
//             come from the kernel lab on a GPU (lab_tc --emit-auto-table); no GPU session has
//             measured them yet, so today the table is empty and auto = own.
//
// The library engines exist only in the nvcc build (cuDNN only where its header was found at
// configure time and its library loads at run time, from the toolkit or the nvidia-cudnn-cu13 Python
// package); in the simulated build they are absent. Asking for one that is absent is a device error
// (EngineUnavailable, exit code 4 in the CLI) naming the engine and why.
//
// How the ops call it (the seam, issue 14):
//   seg::cuda::set_engine(seg::cuda::parse_engine(flag));      // once, from --engine / TRAIN.engine
//   seg::cuda::set_allow_tf32(!no_tf32);                        // default on; --no-tf32: strict f32 (SIMT)
//   switch (seg::cuda::conv_engine(seg::cuda::ConvDirection::forward, shape, seg::cuda::DType::f32)) {
//     case seg::cuda::Engine::cudnn: seg::cuda::conv2d_forward_cudnn<float>(...); break;
//     default: /* own: tensor cores when seg::cuda::use_tensor_cores(DType::f32), else SIMT */
//   }
//   seg::cuda::describe_engines() is the start-up line ("engine own; f32 convolutions: TF32 ...").
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "kernels/common/conv_shape.h"

namespace seg::cuda {

enum class Engine : int { own, cublaslt, cudnn, automatic };
enum class DType : int { f32, f16, bf16 };
enum class ConvDirection : int { forward, backward_data, backward_weight };

// A device error: the engine asked for cannot run in this build or on this machine.
class EngineUnavailable : public std::runtime_error {
 public:
  explicit EngineUnavailable(const std::string& message) : std::runtime_error(message) {}
};

// Inline, so that CPU-only builds (which do not compile engine.cu) check --engine / TRAIN.engine
// with the same names (tools/run_setup.cpp).
inline const char* engine_name(Engine e) {  // "own", "cublaslt", "cudnn", "auto"
  switch (e) {
    case Engine::own: return "own";
    case Engine::cublaslt: return "cublaslt";
    case Engine::cudnn: return "cudnn";
    case Engine::automatic: return "auto";
  }
  return "?";
}
// "own" | "cublaslt" | "cudnn" | "auto"; anything else: std::invalid_argument listing the choices.
inline Engine parse_engine(std::string_view name) {
  if (name == "own") return Engine::own;
  if (name == "cublaslt") return Engine::cublaslt;
  if (name == "cudnn") return Engine::cudnn;
  if (name == "auto") return Engine::automatic;
  throw std::invalid_argument("unknown engine '" + std::string(name) + "': choose own, cublaslt, cudnn or auto");
}

// Whether the engine is compiled into this build, and (cuDNN) loadable here; why not, if not.
bool engine_available(Engine e, std::string* why_not = nullptr);

// The process-wide request. set_engine checks availability first: EngineUnavailable if absent.
void set_engine(Engine e);
Engine requested_engine();

// TF32 tensor cores for f32 GEMMs and convolutions: on by default, as in PyTorch
// (torch.backends.cudnn.allow_tf32 is on by default), so f32 training (O0) runs its convolutions on
// tensor cores with inputs rounded to 10 mantissa bits; off = strict f32 (SIMT kernels, cuBLASLt and
// cuDNN without TF32), what --no-tf32 asks for. Process-wide, read at every call; the start-up line
// (describe_engines()) says which is in force. Tests that bound an f32 result by f32 rounding alone
// turn it off for their duration.
void set_allow_tf32(bool allow);
bool allow_tf32();
// Whether `own` runs an op of this dtype on tensor cores (f16, bf16 always; f32 when TF32 is allowed).
bool use_tensor_cores(DType t);

// --deterministic: the library engines pick deterministic algorithms only. (The own kernels are
// always deterministic: split-K reduces in a fixed order, no float atomics.)
void set_deterministic(bool deterministic);
bool deterministic();

// The engine that runs this op: own, cublaslt or cudnn (never automatic).
Engine gemm_engine(int64_t M, int64_t N, int64_t K, DType t);
Engine conv_engine(ConvDirection d, const ConvShape& s, DType t);

// One measured row of the auto table: for this op and dtype, shapes whose "work" (M*N*K, or the
// convolution's GEMM extents) lies in [min_work, max_work) run on `engine`.
struct AutoRule {
  const char* op;  // "gemm", "conv_fwd", "conv_bwd_data", "conv_bwd_weight"
  DType dtype;
  double min_work, max_work;
  Engine engine;
};
// The table in use (empty until a GPU session measures it; see engine.cu).
const AutoRule* auto_table(int* rows);

// Where automatic decisions are reported (once per shape): set by the CLI under --verbose.
void set_engine_log(std::function<void(const std::string&)> log);
// Sends one line there (nothing when no log is set): the library engines report their own once-per-
// shape choices (cuDNN's algorithm) through it.
void engine_log(const std::string& line);

// One line for the start-up banner and the AMP table.
std::string describe_engines();

}  // namespace seg::cuda
