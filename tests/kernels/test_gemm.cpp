#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/thread_pool.h"
#include "tests/common/compare.h"
#include "tests/common/cpu_isa.h"

using namespace seg;
using namespace seg::cpu;

namespace {
std::vector<float> fill(int64_t n, float a, float b) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = std::sin(a * static_cast<float>(i) + b);
  return v;
}
// Columns [j0, j0 + cols) of the M rows of a row-major matrix with leading dimension ld.
std::vector<float> block(const std::vector<float>& m, int64_t M, int64_t ld, int64_t j0, int64_t cols) {
  std::vector<float> out;
  for (int64_t i = 0; i < M; ++i) out.insert(out.end(), m.begin() + i * ld + j0, m.begin() + i * ld + j0 + cols);
  return out;
}

// gemm_f32 with the micro-kernels of `isa` against the double reference.
void check_gemm_against_reference(CpuIsa isa) {
  test::ScopedCpuIsa scoped(isa);
  // Sizes around the tile sizes (14x32, 6x16, 4x8) and the depth block (256); the last three are
  // split along K (K >= 8192, M*N <= 64Ki), with a ragged last chunk, computed as C (24 x 144) and
  // as C^T (144 x 24: a 24-wide output wastes less as the rows of a tile).
  const int64_t shapes[][3] = {{1, 1, 1},       {13, 31, 7},     {14, 32, 256},    {15, 33, 257},
                               {97, 150, 80},   {200, 17, 600},  {6, 16, 1},       {29, 64, 513},
                               {144, 24, 9000}, {24, 144, 8192}, {16, 32, 12289}};
  for (const auto& sh : shapes) {
    const int64_t M = sh[0], N = sh[1], K = sh[2];
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (bool acc : {false, true}) {
          CAPTURE(cpu_isa_name(isa));
          CAPTURE(M);
          CAPTURE(N);
          CAPTURE(K);
          CAPTURE(ta);
          CAPTURE(tb);
          const int64_t lda = ta ? M + 3 : K + 2, ldb = tb ? K + 1 : N + 5, ldc = N + 4;
          const auto A = fill((ta ? K : M) * lda, 0.37f, 0.1f), B = fill((tb ? N : K) * ldb, 0.23f, 0.7f);
          auto C = fill(M * ldc, 0.11f, 0.3f), Cref = C;
          gemm_f32(ta, tb, M, N, K, A.data(), lda, B.data(), ldb, C.data(), ldc, acc);
          gemm_ref(ta, tb, M, N, K, A.data(), lda, B.data(), ldb, Cref.data(), ldc, acc);
          // f32 sums of K products of values in [-1, 1] against the double reference.
          SEG_CHECK_CLOSE(block(C, M, ldc, 0, N), block(Cref, M, ldc, 0, N),
                          test::Tolerance{1e-5 * std::sqrt(double(K)) + 1e-6, 0});
          // Padding columns of C beyond N are untouched.
          SEG_CHECK_CLOSE(block(C, M, ldc, N, ldc - N), block(Cref, M, ldc, N, ldc - N), test::Tolerance{});
        }
  }
}
}  // namespace

// One case per ISA; the AVX2 and AVX-512 ones are CTest tests of their own (test_kernels_avx2,
// test_kernels_avx512), reported as skipped where the CPU (or SEG_CPU_ISA) lacks the ISA.
TEST_CASE("gemm equals the naive reference: scalar micro-kernel, every transpose and edge size") {
  check_gemm_against_reference(CpuIsa::scalar);
}
TEST_CASE("gemm equals the naive reference: AVX2 micro-kernels" * SEG_REQUIRES(avx2)) {
  check_gemm_against_reference(CpuIsa::avx2);
}
TEST_CASE("gemm equals the naive reference: AVX-512 micro-kernels" * SEG_REQUIRES(avx512)) {
  check_gemm_against_reference(CpuIsa::avx512);
}

TEST_CASE("gemm results are bit-identical for 1, 2 and 3 threads (slabs of M or N, or fixed chunks of K)") {
  // 300 x 70 x 700: split into slabs of the output; 40 x 24 x 20000: split along K (5 chunks).
  for (const auto& [M, N, K] : {GemmShape{300, 70, 700}, GemmShape{40, 24, 20000}}) {
    CAPTURE(K);
    const auto A = fill(M * K, 0.01f, 0.0f), B = fill(K * N, 0.02f, 1.0f);
    std::vector<float> c1(M * N), c2(M * N), c3(M * N);
    const int saved = num_threads();
    set_num_threads(1);
    gemm_f32(false, false, M, N, K, A.data(), K, B.data(), N, c1.data(), N, false);
    set_num_threads(2);
    gemm_f32(false, false, M, N, K, A.data(), K, B.data(), N, c2.data(), N, false);
    set_num_threads(3);
    gemm_f32(false, false, M, N, K, A.data(), K, B.data(), N, c3.data(), N, false);
    set_num_threads(saved);
    CHECK(std::memcmp(c1.data(), c2.data(), c1.size() * sizeof(float)) == 0);
    CHECK(std::memcmp(c1.data(), c3.data(), c1.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("A read in place and A packed give bit-identical results (the 4 KiB-aliasing rule)" * SEG_REQUIRES(avx512)) {
  // gemm.cpp's AVX-512 kernels read a plain float A in place unless its row stride is a multiple of
  // 1024 floats (and N >= 128), where they pack A to avoid L1 set conflicts. Both paths must agree
  // bit for bit, or a model's numbers would depend on its channel counts' alignment. (The other
  // ISAs always pack: there is nothing to compare.)
  test::ScopedCpuIsa scoped(CpuIsa::avx512);
  const int64_t M = 300, N = 160, K = 300;  // M >> N: threads split M, so every thread sees N = 160
  const auto B = fill(N * K, 0.05f, 0.4f);  // B^T layout (tb = true), as the 1x1 convolutions use
  std::vector<float> c_direct(M * N), c_packed(M * N), c_ref(M * N);
  for (int64_t lda : {K + 4, int64_t{1024}}) {  // K + 4: in place; 1024: packed
    std::vector<float> A(static_cast<size_t>(M * lda), 0.0f);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t k = 0; k < K; ++k) A[i * lda + k] = std::sin(0.013f * static_cast<float>(i * K + k));
    auto& c = lda == 1024 ? c_packed : c_direct;
    gemm_f32(false, true, M, N, K, A.data(), lda, B.data(), K, c.data(), N, false);
    if (lda == 1024) gemm_ref(false, true, M, N, K, A.data(), lda, B.data(), K, c_ref.data(), N, false);
  }
  CHECK(std::memcmp(c_direct.data(), c_packed.data(), c_direct.size() * sizeof(float)) == 0);
  SEG_CHECK_CLOSE(c_packed, c_ref, test::Tolerance{1e-4, 0});
}

TEST_CASE("pack_rows_transposed: out[k*mr + r] = rows[r][k], null rows are zeros, nothing written past the panel") {
  for (int64_t mr : {1, 4, 6, 8, 14, 16, 28, 32}) {
    for (int64_t n : {1, 7, 8, 9, 17, 64, 256}) {
      CAPTURE(mr);
      CAPTURE(n);
      std::vector<std::vector<float>> data(static_cast<size_t>(mr));
      std::vector<const float*> rows(static_cast<size_t>(mr));
      for (int64_t r = 0; r < mr; ++r) {
        data[r] = fill(n + 3, 0.1f * static_cast<float>(r + 1), 0.5f);
        rows[r] = r % 5 == 3 ? nullptr : data[r].data() + 1;  // some rows are padding
      }
      std::vector<float> out(static_cast<size_t>(mr * n + 16), -7.0f);  // sentinel after the panel
      pack_rows_transposed(rows.data(), mr, n, out.data());
      std::vector<float> want(out.size(), -7.0f);
      for (int64_t k = 0; k < n; ++k)
        for (int64_t r = 0; r < mr; ++r) want[k * mr + r] = rows[r] ? rows[r][k] : 0.0f;
      SEG_CHECK_CLOSE(out, want, test::Tolerance{});  // a copy: exact, sentinels included
    }
  }
}
