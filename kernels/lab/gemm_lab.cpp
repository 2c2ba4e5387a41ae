// The CPU GEMM lab (llm.c's dev/cuda style): every version of C[M,N] = A[M,K] * B[K,N] behind one
// harness that first validates a version against the reference, then times it.
//
//   version 1  the naive triple loop (gemm_ref, double accumulation): the specification
//   version 2  the blocked GEMM with the scalar 4x8 micro-kernel (packing and blocking alone)
//   version 3  the blocked GEMM with the AVX2 6x16 micro-kernel
//   version 4  the blocked GEMM with the AVX-512 14x32 / 28x16 micro-kernels (what segtrain runs)
//   version 5  OpenBLAS sgemm (only when built with it: the baseline, not a dependency)
//
// usage: build/bin/lab_gemm [version] [M N K [transA transB]] [--threads T] [--reps R]
//   without a version, runs every available version on the conv shapes of MobileNetV2dilated at
//   128x128, batch 8; timings are CPU seconds of the process (stable on a shared machine when
//   --threads 1), reported as GFLOP/s.
#include <time.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/thread_pool.h"

#ifdef SEG_LAB_OPENBLAS
#include <cblas.h>
extern "C" void openblas_set_num_threads(int);
#endif

using namespace seg;

namespace {
struct Shape {
  int64_t M, N, K;
  bool ta, tb;
  const char* what;
};

// The GEMMs of 1x1 convolutions (forward, backward data, backward weight) and an im2col 3x3.
const Shape kShapes[] = {
    {2048, 960, 160, false, true, "1x1 conv 160->960 forward"},
    {2048, 160, 960, false, false, "1x1 conv 160->960 backward data"},
    {960, 160, 2048, true, false, "1x1 conv 160->960 backward weight"},
    {32768, 16, 32, false, true, "1x1 conv 32->16 forward (narrow)"},
    {8192, 96, 16, false, true, "1x1 conv 16->96 forward (tiny K)"},
    {2048, 80, 2880, false, true, "3x3 conv 320->80 as GEMM"},
};

double cpu_seconds() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

bool run_version(int v, const Shape& s, const float* A, const float* B, float* C) {
  const int64_t lda = s.ta ? s.M : s.K, ldb = s.tb ? s.K : s.N;
  switch (v) {
    case 1: cpu::gemm_ref(s.ta, s.tb, s.M, s.N, s.K, A, lda, B, ldb, C, s.N, false); return true;
    case 2: case 3: case 4: {
      const CpuIsa isa = v == 2 ? CpuIsa::scalar : v == 3 ? CpuIsa::avx2 : CpuIsa::avx512;
      if (isa > cpu_isa_detected()) return false;
      set_cpu_isa(isa);
      cpu::gemm_f32(s.ta, s.tb, s.M, s.N, s.K, A, lda, B, ldb, C, s.N, false);
      return true;
    }
#ifdef SEG_LAB_OPENBLAS
    case 5:
      cblas_sgemm(CblasRowMajor, s.ta ? CblasTrans : CblasNoTrans, s.tb ? CblasTrans : CblasNoTrans, static_cast<int>(s.M),
                  static_cast<int>(s.N), static_cast<int>(s.K), 1.0f, A, static_cast<int>(lda), B, static_cast<int>(ldb),
                  0.0f, C, static_cast<int>(s.N));
      return true;
#endif
    default: return false;
  }
}

void bench(int v, const Shape& s, int reps) {
  std::vector<float> A(static_cast<size_t>(s.M * s.K)), B(static_cast<size_t>(s.K * s.N));
  std::vector<float> C(static_cast<size_t>(s.M * s.N)), R(static_cast<size_t>(s.M * s.N));
  for (size_t i = 0; i < A.size(); ++i) A[i] = std::sin(0.37f * static_cast<float>(i % 1000003));
  for (size_t i = 0; i < B.size(); ++i) B[i] = std::cos(0.11f * static_cast<float>(i % 999983));
  // 1. validate against the reference (skip the reference itself)
  if (!run_version(v, s, A.data(), B.data(), C.data())) return;
  if (v != 1) {
    run_version(1, s, A.data(), B.data(), R.data());
    double err = 0;
    for (size_t i = 0; i < C.size(); ++i) err = std::max(err, std::abs(double(C[i]) - R[i]));
    if (err > 1e-4 * std::sqrt(static_cast<double>(s.K))) {
      std::printf("version %d FAILED validation on %s: max error %g\n", v, s.what, err);
      std::exit(1);
    }
  }
  // 2. time it
  const int n = v == 1 ? 1 : reps;
  const double t0 = cpu_seconds();
  for (int r = 0; r < n; ++r) run_version(v, s, A.data(), B.data(), C.data());
  const double t = (cpu_seconds() - t0) / n;
  std::printf("  v%d  %-36s M=%6lld N=%4lld K=%5lld  %8.2f ms  %7.1f GFLOP/s\n", v, s.what,
              static_cast<long long>(s.M), static_cast<long long>(s.N), static_cast<long long>(s.K), 1e3 * t,
              2.0 * static_cast<double>(s.M * s.N * s.K) / t / 1e9);
}
}  // namespace

int main(int argc, char** argv) {
  int version = 0, threads = 1, reps = 5;
  std::vector<int64_t> dims;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) reps = std::atoi(argv[++i]);
    else if (version == 0 && dims.empty()) version = std::atoi(argv[i]);
    else dims.push_back(std::atoll(argv[i]));
  }
  set_num_threads(threads);
#ifdef SEG_LAB_OPENBLAS
  openblas_set_num_threads(threads);
#endif
  std::vector<Shape> shapes(std::begin(kShapes), std::end(kShapes));
  if (dims.size() >= 3) shapes = {{dims[0], dims[1], dims[2], dims.size() > 3 && dims[3], dims.size() > 4 && dims[4], "custom"}};
  std::printf("CPU GEMM lab: %d thread(s), ISA %s (CPU seconds per call)\n", threads, cpu_isa_name(cpu_isa_detected()));
  const std::vector<int> versions = version ? std::vector<int>{version} : std::vector<int>{1, 2, 3, 4, 5};
  for (const Shape& s : shapes) {
    std::printf("%s\n", s.what);
    for (int v : versions)
      if (!(v == 1 && s.M * s.N * s.K > 200000000LL)) bench(v, s, reps);  // the naive loop only on small shapes
  }
  return 0;
}
