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
// Threads: the output is split into one slab per thread along M (or N when M is small); K is
// never split, so results are identical for any thread count. Each thread packs its own blocks.
// Cost: 2*M*N*K flops; traffic per KC step ~ (M*KC + KC*N) floats packed + M*N C reads/writes.
#pragma once

#include <cstdint>

namespace seg::cpu {

// Writes rows [i0, i0+rows) x k in [k0, k0+depth) of an M x K operand as panels of `mr` rows:
// dst[(p*depth + k)*mr + r] = A[i0 + p*mr + r, k0 + k], zero for rows beyond `rows` in the last panel.
// (The same interface packs B^T: "rows" are then columns of B.)
class Packer {
 public:
  virtual ~Packer() = default;
  virtual void pack(int64_t i0, int64_t rows, int64_t k0, int64_t depth, int64_t mr, float* dst) const = 0;
  // When the operand is a float matrix whose k index is contiguous, the address of row i0 at k0
  // and the row stride, so a micro-kernel can read it in place (no packing); else null.
  virtual const float* direct(int64_t i0, int64_t k0, int64_t* row_stride) const { return nullptr; }
};

// A strided matrix: element (i, k) at data[i*row_stride + k*col_stride]. T = float, f16 or bf16.
template <class T>
class MatrixPacker final : public Packer {
 public:
  MatrixPacker(const T* data, int64_t row_stride, int64_t col_stride)
      : data_(data), rs_(row_stride), cs_(col_stride) {}
  void pack(int64_t i0, int64_t rows, int64_t k0, int64_t depth, int64_t mr, float* dst) const override;
  const float* direct(int64_t i0, int64_t k0, int64_t* row_stride) const override;

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

struct GemmShape {
  int64_t M, N, K;
};

// C[i*ldc + j] (+)= sum_k A(i,k) * Bt(j,k), where `a` packs A (M x K) and `bt` packs B^T (N x K).
// C is float, row-major with leading dimension ldc. `threads` = 0 uses the whole pool.
void gemm(const GemmShape& s, const Packer& a, const Packer& bt, float* c, int64_t ldc, bool accumulate,
          int threads = 0);

// Convenience for plain row-major float matrices: op(A) is M x K, op(B) is K x N.
void gemm_f32(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
              const float* B, int64_t ldb, float* C, int64_t ldc, bool accumulate);

// The naive triple loop in double: the reference for tests.
void gemm_ref(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
              const float* B, int64_t ldb, float* C, int64_t ldc, bool accumulate);

}  // namespace seg::cpu
