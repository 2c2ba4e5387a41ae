// Single-precision GEMM on the CPU, BLIS style:  C[M,N] = A[M,K] * B[K,N]  (+ C if accumulate).
//
// The loop nest (Goto/BLIS):
//   for jc in N step NC:                  B block [KC x NC] packed once, shared by the M loop
//     for pc in K step KC:
//       pack B[pc.., jc..] into NR-wide panels        (k-major: panel[k*NR + j])
//       for ic in M step MC:
//         pack A[ic.., pc..] into MR-tall panels      (k-major: panel[k*MR + i])
//         for jr, ir: micro-kernel MR x NR over KC    (the registers hold the C tile)
// Micro-kernels: AVX-512 14x32 (28 zmm accumulators; 28x16 when N mod 32 is 1..16), AVX2 6x16 (12 ymm),
// scalar 4x8; chosen by cpu_isa() and the output width. Edge tiles are zero-padded in the packed panels and written through a small buffer.
//
// A and B are not matrices in memory but *packers*: objects that write a block of the operand into
// the packed layout. A plain strided matrix is one packer (MatrixPacker); a convolution's im2col
// is another (kernels/cpu/conv2d_gemm.cpp), which makes convolution an implicit GEMM with no
// im2col buffer. Packers also convert f16/bf16 storage to f32 on the fly.
//
// Threads: the output is split into one slab per thread along M (or N when M is small). A deep GEMM
// with a small output (K >= 8192, M*N <= 64Ki: a convolution's weight gradient over the pixels) is
// split along K instead, into fixed chunks of 4096 whose products are summed in chunk order. Neither
// split depends on the thread count, so results are identical for any thread count. Each thread
// packs its own blocks.
// Cost: 2*M*N*K flops; traffic per KC step ~ (M*KC + KC*N) floats packed + M*N C reads/writes.
#pragma once

#include <cstdint>
#include <type_traits>

namespace seg::cpu {

// Writes rows [i0, i0+rows) x k in [k0, k0+depth) of an M x K operand as panels of `mr` rows:
// dst[(p*depth + k)*mr + r] = A[i0 + p*mr + r, k0 + k], zero for rows beyond `rows` in the last panel.
// (The same interface packs B^T: "rows" are then columns of B.) E is the packed element type: float
// for the production GEMM, double for the double-precision one (references, gradient checks).
template <class E>
class PackerOf {
 public:
  virtual ~PackerOf() = default;
  virtual void pack(int64_t i0, int64_t rows, int64_t k0, int64_t depth, int64_t mr, E* dst) const = 0;
  // When the operand is a matrix of E whose k index is contiguous, the address of row i0 at k0
  // and the row stride, so a micro-kernel can read it in place (no packing); else null.
  virtual const E* direct(int64_t i0, int64_t k0, int64_t* row_stride) const { return nullptr; }
};
using Packer = PackerOf<float>;

// What a storage type packs to: double stays double, float/f16/bf16 become float.
template <class T>
using packed_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

// A strided matrix: element (i, k) at data[i*row_stride + k*col_stride]. T = float, f16, bf16
// (packed to float) or double (packed to double).
template <class T>
class MatrixPacker final : public PackerOf<packed_t<T>> {
 public:
  using E = packed_t<T>;
  MatrixPacker(const T* data, int64_t row_stride, int64_t col_stride)
      : data_(data), rs_(row_stride), cs_(col_stride) {}
  void pack(int64_t i0, int64_t rows, int64_t k0, int64_t depth, int64_t mr, E* dst) const override;
  const E* direct(int64_t i0, int64_t k0, int64_t* row_stride) const override;

 private:
  const T* data_;
  int64_t rs_, cs_;
};

// The transposition at the heart of packing A from row-major data: out[k*mr + r] = rows[r][k] for
// r < mr, k < n, with a null row read as zeros. Rows are independent pointers (pixels of an im2col,
// rows of a strided matrix). Done 8 rows x 8 k at a time with AVX2 8x8 register transposes (a
// scalar element-by-element copy with stride mr was 3-5% of a ResNet50 training step).
// mr is a panel height: MR of a micro-kernel for A (<= 28), NR for B (<= 32).
constexpr int64_t kMaxPackRows = 32;
void pack_rows_transposed(const float* const* rows, int64_t mr, int64_t n, float* out);
// The same for double (a plain loop: double precision is for references, not for speed).
void pack_rows_transposed(const double* const* rows, int64_t mr, int64_t n, double* out);

struct GemmShape {
  int64_t M, N, K;
};

// C[i*ldc + j] (+)= sum_k A(i,k) * Bt(j,k), where `a` packs A (M x K) and `bt` packs B^T (N x K).
// C is float, row-major with leading dimension ldc. `threads` = 0 uses the whole pool.
void gemm(const GemmShape& s, const Packer& a, const Packer& bt, float* c, int64_t ldc, bool accumulate,
          int threads = 0);
// Double precision: the same blocking, packing, edge tiles and thread slabs, with one plain C++
// 4x8 micro-kernel instead of the SIMD ones. It exists so that float64 runs (gradient checks, the
// float64 golden runs) go through the same index logic as float32 (the convolution packers of
// kernels/cpu/conv2d_gemm.cpp), not through a separate reference path.
void gemm(const GemmShape& s, const PackerOf<double>& a, const PackerOf<double>& bt, double* c, int64_t ldc,
          bool accumulate, int threads = 0);

// Convenience for plain row-major float matrices: op(A) is M x K, op(B) is K x N.
void gemm_f32(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
              const float* B, int64_t ldb, float* C, int64_t ldc, bool accumulate);

// The naive triple loop in double: the reference for tests.
void gemm_ref(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
              const float* B, int64_t ldb, float* C, int64_t ldc, bool accumulate);

}  // namespace seg::cpu
