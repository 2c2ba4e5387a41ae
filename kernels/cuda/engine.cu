// The engine choice (engine.h): the request, the TF32 and determinism switches, the auto table and
// its per-shape memory. Host code only; the same file in the nvcc and the simulated build.
#include "kernels/cuda/engine.h"

#include <atomic>
#include <map>
#include <mutex>
#include <tuple>

#include "kernels/cuda/engine_cublaslt.h"
#include "kernels/cuda/engine_cudnn.h"

namespace seg::cuda {

namespace {

std::atomic<int> g_engine{static_cast<int>(Engine::own)};
std::atomic<bool> g_tf32{true};  // PyTorch's default (engine.h); --no-tf32 turns it off
std::atomic<bool> g_deterministic{false};

std::mutex g_mutex;
std::function<void(const std::string&)> g_log;
// (op, dtype, extents) -> the engine auto chose, so each shape is decided (and reported) once.
std::map<std::tuple<std::string, int, int64_t, int64_t, int64_t>, Engine> g_decisions;

// Measured rows go here: lab_tc --emit-auto-table on a GPU prints them in this form. Until a GPU
// session has measured them the table is empty and `auto` runs the own kernels everywhere.
const AutoRule kAutoTable[] = {
    {"none", DType::f32, 0.0, 0.0, Engine::own},  // placeholder: matches nothing (empty range)
};

const char* dtype_name(DType t) { return t == DType::f32 ? "f32" : t == DType::f16 ? "f16" : "bf16"; }

Engine decide(const char* op, DType t, int64_t a, int64_t b, int64_t c) {
  const double work = static_cast<double>(a) * static_cast<double>(b) * static_cast<double>(c);
  Engine e = Engine::own;
  for (const AutoRule& r : kAutoTable)
    if (std::string_view(r.op) == op && r.dtype == t && work >= r.min_work && work < r.max_work) e = r.engine;
  if (e != Engine::own && !engine_available(e)) e = Engine::own;
  std::lock_guard<std::mutex> lock(g_mutex);
  const auto key = std::make_tuple(std::string(op), static_cast<int>(t), a, b, c);
  const auto it = g_decisions.find(key);
  if (it != g_decisions.end()) return it->second;
  g_decisions.emplace(key, e);
  if (g_log)
    g_log(std::string("engine auto: ") + op + " " + dtype_name(t) + " " + std::to_string(a) + "x" +
          std::to_string(b) + "x" + std::to_string(c) + " -> " + engine_name(e));
  return e;
}

}  // namespace

bool engine_available(Engine e, std::string* why_not) {
  switch (e) {
    case Engine::own:
    case Engine::automatic: return true;
    case Engine::cublaslt: return cublaslt_available(why_not);
    case Engine::cudnn: {
      // The cudnn engine runs GEMMs on cuBLASLt too.
      std::string why;
      if (!cudnn_available(&why)) {
        if (why_not) *why_not = why;
        return false;
      }
      return cublaslt_available(why_not);
    }
  }
  return false;
}

void set_engine(Engine e) {
  std::string why;
  if (!engine_available(e, &why))
    throw EngineUnavailable(std::string("engine '") + engine_name(e) + "' is not available: " + why);
  g_engine.store(static_cast<int>(e));
  std::lock_guard<std::mutex> lock(g_mutex);
  g_decisions.clear();
}
Engine requested_engine() { return static_cast<Engine>(g_engine.load()); }

void set_allow_tf32(bool allow) { g_tf32.store(allow); }
bool allow_tf32() { return g_tf32.load(); }
bool use_tensor_cores(DType t) { return t != DType::f32 || allow_tf32(); }

void set_deterministic(bool d) { g_deterministic.store(d); }
bool deterministic() { return g_deterministic.load(); }

Engine gemm_engine(int64_t M, int64_t N, int64_t K, DType t) {
  switch (requested_engine()) {
    case Engine::own: return Engine::own;
    case Engine::cublaslt:
    case Engine::cudnn: return Engine::cublaslt;
    case Engine::automatic: {
      const Engine e = decide("gemm", t, M, N, K);
      return e == Engine::cudnn ? Engine::own : e;
    }
  }
  return Engine::own;
}

Engine conv_engine(ConvDirection d, const ConvShape& s, DType t) {
  switch (requested_engine()) {
    case Engine::own:
    case Engine::cublaslt: return Engine::own;
    case Engine::cudnn: return Engine::cudnn;
    case Engine::automatic: {
      const char* op = d == ConvDirection::forward         ? "conv_fwd"
                       : d == ConvDirection::backward_data ? "conv_bwd_data"
                                                           : "conv_bwd_weight";
      const int64_t P = s.N * s.Ho() * s.Wo();
      const Engine e = decide(op, t, P, s.O, s.KH * s.KW * s.Cg());
      return e == Engine::cublaslt ? Engine::own : e;
    }
  }
  return Engine::own;
}

const AutoRule* auto_table(int* rows) {
  *rows = 0;  // the placeholder row is not a measurement
  return kAutoTable;
}

void set_engine_log(std::function<void(const std::string&)> log) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_log = std::move(log);
}

void engine_log(const std::string& line) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_log) g_log(line);
}

std::string describe_engines() {
  const Engine e = requested_engine();
  std::string s = std::string("engine ") + engine_name(e);
  if (e == Engine::automatic) s += " (no measured table yet: own kernels everywhere)";
  s += allow_tf32() ? "; f32 convolutions and GEMMs on TF32 tensor cores (--no-tf32 for strict f32)"
                    : "; f32 convolutions and GEMMs in strict f32 (TF32 off)";
  s += "; f16/bf16 on tensor cores with f32 accumulation";
  if (deterministic()) s += "; cuDNN/cuBLASLt restricted to deterministic algorithms";
  return s;
}

}  // namespace seg::cuda
