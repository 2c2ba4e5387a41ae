// The engine choice (kernels/cuda/engine.h): names, the request, availability in this build, what
// each request runs per op family, the TF32 switch, and auto with its (still empty) table.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "kernels/cuda/engine.h"
#include "kernels/cuda/engine_cublaslt.h"
#include "kernels/cuda/engine_cudnn.h"

using seg::cuda::ConvDirection;
using seg::cuda::DType;
using seg::cuda::Engine;

namespace {
// Restores the process-wide switches after each case.
struct EngineGuard {
  Engine e = seg::cuda::requested_engine();
  bool tf32 = seg::cuda::allow_tf32();
  ~EngineGuard() {
    seg::cuda::set_engine(e);
    seg::cuda::set_allow_tf32(tf32);
    seg::cuda::set_engine_log(nullptr);
  }
};
}  // namespace

TEST_CASE("engine: names round-trip and unknown names list the choices") {
  for (const Engine e : {Engine::own, Engine::cublaslt, Engine::cudnn, Engine::automatic})
    CHECK(seg::cuda::parse_engine(seg::cuda::engine_name(e)) == e);
  CHECK_THROWS_WITH_AS(seg::cuda::parse_engine("cutlass"), doctest::Contains("choose own, cublaslt, cudnn or auto"),
                       std::invalid_argument);
}

TEST_CASE("engine: own is the default, and what each request runs per op family") {
  EngineGuard guard;
  CHECK(seg::cuda::requested_engine() == Engine::own);
  seg::ConvShape s;
  s.N = 2;
  s.H = s.W = 8;
  s.C = s.O = 16;
  CHECK(seg::cuda::gemm_engine(64, 64, 64, DType::f16) == Engine::own);
  CHECK(seg::cuda::conv_engine(ConvDirection::forward, s, DType::f16) == Engine::own);
  // auto with the empty table: own everywhere, decided (and logged) once per shape.
  std::vector<std::string> log;
  seg::cuda::set_engine_log([&](const std::string& line) { log.push_back(line); });
  seg::cuda::set_engine(Engine::automatic);
  CHECK(seg::cuda::conv_engine(ConvDirection::backward_weight, s, DType::bf16) == Engine::own);
  CHECK(seg::cuda::conv_engine(ConvDirection::backward_weight, s, DType::bf16) == Engine::own);
  CHECK(seg::cuda::gemm_engine(128, 64, 32, DType::f32) == Engine::own);
  REQUIRE(log.size() == 2);
  CHECK(log[0] == "engine auto: conv_bwd_weight bf16 128x16x16 -> own");
  CHECK(log[1] == "engine auto: gemm f32 128x64x32 -> own");
  int rows = -1;
  seg::cuda::auto_table(&rows);
  CHECK(rows == 0);
  CHECK(seg::cuda::describe_engines().find("no measured table yet") != std::string::npos);
}

TEST_CASE("engine: TF32 is on by default (PyTorch's default); off means strict f32 for f32 ops only") {
  EngineGuard guard;
  CHECK(seg::cuda::allow_tf32());
  CHECK(seg::cuda::use_tensor_cores(DType::f32));
  CHECK(seg::cuda::describe_engines().find("TF32 tensor cores") != std::string::npos);
  seg::cuda::set_allow_tf32(false);
  CHECK_FALSE(seg::cuda::use_tensor_cores(DType::f32));
  CHECK(seg::cuda::use_tensor_cores(DType::f16));
  CHECK(seg::cuda::use_tensor_cores(DType::bf16));
  CHECK(seg::cuda::describe_engines().find("strict f32") != std::string::npos);
}

#ifndef SEG_TEST_ON_GPU
TEST_CASE("engine: the library engines are absent from the simulated build, and asking is a device error") {
  EngineGuard guard;
  std::string why;
  CHECK_FALSE(seg::cuda::engine_available(Engine::cublaslt, &why));
  CHECK(why.find("simulated") != std::string::npos);
  CHECK_FALSE(seg::cuda::engine_available(Engine::cudnn));
  CHECK_THROWS_WITH_AS(seg::cuda::set_engine(Engine::cudnn), doctest::Contains("engine 'cudnn' is not available"),
                       seg::cuda::EngineUnavailable);
  CHECK_THROWS_WITH_AS(seg::cuda::set_engine(Engine::cublaslt), doctest::Contains("engine 'cublaslt'"),
                       seg::cuda::EngineUnavailable);
  CHECK(seg::cuda::requested_engine() == Engine::own);  // a refused request changes nothing
  seg::ConvShape s;
  CHECK_THROWS_AS(seg::cuda::conv2d_forward_cudnn<float>(s, nullptr, nullptr, nullptr, nullptr, nullptr),
                  seg::cuda::EngineUnavailable);
  CHECK_THROWS_AS((seg::cuda::gemm_cublaslt<float, float>(false, false, 1, 1, 1, nullptr, 1, nullptr, 1, nullptr, 1,
                                                          nullptr, {}, {}, nullptr)),
                  seg::cuda::EngineUnavailable);
}
#endif
