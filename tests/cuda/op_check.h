// The op-level CUDA-vs-CPU harness of tests/cuda: runs one op (a function of input tensors) on the CPU
// and on cuda:0 with the same inputs, then backward with the same output gradient, and compares the
// output and every input gradient element by element (tests/common/compare.h: NaN/inf count as
// mismatches unless both sides agree), under each schedule of the simulator.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "tests/common/compare.h"

namespace seg::test {

// Tolerances per storage dtype; each op case states where its numbers come from.
struct DtypeTolerance {
  Tolerance f32, f16, bf16;
  Tolerance for_dtype(DType dt) const { return dt == DType::f16 ? f16 : dt == DType::bf16 ? bf16 : f32; }
};
// Bit for bit (kernels that compute exactly what the CPU computes).
inline DtypeTolerance exact() { return {}; }
// The same f32 arithmetic, rounded once to the storage type: a few f32 ulps, and one ulp of the
// 16-bit type when the f32 results straddle a rounding boundary.
inline DtypeTolerance one_rounding(double f32_rel = 1e-6) {
  return {Tolerance{f32_rel, f32_rel}, Tolerance{1.0 / 1024, 1.0 / 1024}, Tolerance{1.0 / 128, 1.0 / 128}};
}

struct OpInput {
  Shape shape;
  double scale = 1.0, shift = 0.0;  // values shift + scale * N(0, 1)
  bool grad = true;                 // requires_grad (and its gradient is compared)
  DType dtype = DType::f32;         // DType::f32 means "the dtype under test"; others are taken as is
  Tensor fixed;                     // when defined: this CPU tensor (labels, ...), converted to nothing
};

struct OpCase {
  std::string name;
  std::vector<OpInput> inputs;
  std::function<Tensor(const std::vector<Tensor>&)> fn;
  DtypeTolerance fwd, bwd;
  bool backward = true;
  uint64_t seed = 1;
  // Runs before each forward (on each device): e.g. reset_global_rng for dropout's mask.
  std::function<void()> before;
};

// Runs `c` in dtype dt on the CPU and on cuda:0 under every schedule (or the first one only) and
// checks forward and backward (doctest CHECKs, with the case, dtype and schedule captured).
void check_op(const OpCase& c, DType dt, bool all_schedules = true);

// shift + scale * N(0,1) on the CPU in f64, converted to dt.
Tensor random_tensor(const Shape& shape, DType dt, uint64_t seed, double scale = 1.0, double shift = 0.0);

}  // namespace seg::test
