#include "kernels/cpu/gemm.h"

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/common/half.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/thread_pool.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace seg::cpu {

// ------------------------------------------------------------------ packers

namespace {
#if defined(__AVX2__)
// In place: v[i] = row i (8 floats) becomes v[j] = column j, i.e. v[j][i] = old v[i][j].
inline void transpose8x8(__m256 v[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(v[0], v[1]), t1 = _mm256_unpackhi_ps(v[0], v[1]);
  const __m256 t2 = _mm256_unpacklo_ps(v[2], v[3]), t3 = _mm256_unpackhi_ps(v[2], v[3]);
  const __m256 t4 = _mm256_unpacklo_ps(v[4], v[5]), t5 = _mm256_unpackhi_ps(v[4], v[5]);
  const __m256 t6 = _mm256_unpacklo_ps(v[6], v[7]), t7 = _mm256_unpackhi_ps(v[6], v[7]);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  v[0] = _mm256_permute2f128_ps(u0, u4, 0x20);
  v[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
  v[2] = _mm256_permute2f128_ps(u2, u6, 0x20);
  v[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
  v[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
  v[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
  v[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
  v[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}
#endif
}  // namespace

void pack_rows_transposed(const float* const* rows, int64_t mr, int64_t n, float* out) {
  int64_t k = 0;
#if defined(__AVX2__)
  // Lane masks for a group of fewer than 8 rows (the last group of mr = 14, 6, ...).
  alignas(32) static const int32_t kLanes[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
  for (; k + 8 <= n; k += 8) {
    for (int64_t g = 0; g < mr; g += 8) {
      const int64_t m = std::min<int64_t>(8, mr - g);
      __m256 v[8];
      for (int64_t i = 0; i < 8; ++i)
        v[i] = i < m && rows[g + i] ? _mm256_loadu_ps(rows[g + i] + k) : _mm256_setzero_ps();
      transpose8x8(v);
      if (m == 8) {
        for (int64_t j = 0; j < 8; ++j) _mm256_storeu_ps(out + (k + j) * mr + g, v[j]);
      } else {  // masked: a full store would spill into the next k's first rows or past the panel
        const __m256i mask = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kLanes + 8 - m));
        for (int64_t j = 0; j < 8; ++j) _mm256_maskstore_ps(out + (k + j) * mr + g, mask, v[j]);
      }
    }
  }
#endif
  for (; k < n; ++k)
    for (int64_t r = 0; r < mr; ++r) out[k * mr + r] = rows[r] ? rows[r][k] : 0.0f;
}

void pack_rows_transposed(const double* const* rows, int64_t mr, int64_t n, double* out) {
  for (int64_t k = 0; k < n; ++k)
    for (int64_t r = 0; r < mr; ++r) out[k * mr + r] = rows[r] ? rows[r][k] : 0.0;
}

namespace {
// Full panels of a column-major source (a transposed operand): panel p, element (r, k) is
// src[k*cs + p*MR + r], written to out[(p*depth + k)*MR + r]. For each k the source row's MR*panels
// elements are contiguous and are read once, in order, into all panels; with MR a constant each
// panel's share is a few vector moves. (Panel by panel, each panel read MR elements of every row,
// element by element with a run-time MR, and packing took 31% of a weight-gradient GEMM's time:
// perf on lab_gemm 3 960 160 4096 1 0, whose two operands are both column-major.)
template <int MR, class T, class E>
void pack_column_major_fixed(const T* __restrict src, int64_t cs, int64_t panels, int64_t depth, E* __restrict out) {
  for (int64_t k = 0; k < depth; ++k) {
    const T* row = src + k * cs;
    E* o = out + k * MR;
    for (int64_t p = 0; p < panels; ++p, row += MR, o += depth * MR)
#pragma GCC unroll 32
      for (int r = 0; r < MR; ++r) o[r] = static_cast<E>(row[r]);
  }
}
template <class T, class E>
void pack_column_major(const T* src, int64_t cs, int64_t panels, int64_t depth, int64_t mr, E* out) {
  switch (mr) {  // the panel heights of the micro-kernels (MR and NR of every tile)
    case 4: return pack_column_major_fixed<4>(src, cs, panels, depth, out);
    case 6: return pack_column_major_fixed<6>(src, cs, panels, depth, out);
    case 8: return pack_column_major_fixed<8>(src, cs, panels, depth, out);
    case 14: return pack_column_major_fixed<14>(src, cs, panels, depth, out);
    case 16: return pack_column_major_fixed<16>(src, cs, panels, depth, out);
    case 28: return pack_column_major_fixed<28>(src, cs, panels, depth, out);
    case 32: return pack_column_major_fixed<32>(src, cs, panels, depth, out);
    default:
      for (int64_t p = 0; p < panels; ++p)
        for (int64_t k = 0; k < depth; ++k)
          for (int64_t r = 0; r < mr; ++r) out[(p * depth + k) * mr + r] = static_cast<E>(src[k * cs + p * mr + r]);
  }
}
}  // namespace

template <class T>
void MatrixPacker<T>::pack(int64_t i0, int64_t rows, int64_t k0, int64_t depth, int64_t mr, E* dst) const {
  const int64_t panels = (rows + mr - 1) / mr;
  int64_t p = 0;
  if (rs_ == 1) {  // column-major source (a transposed operand): all full panels in one pass over k
    p = rows / mr;
    pack_column_major(data_ + i0 + k0 * cs_, cs_, p, depth, mr, dst);
  }
  for (; p < panels; ++p) {
    E* out = dst + p * depth * mr;
    const int64_t r_end = std::min(mr, rows - p * mr);
    if (rs_ == 1) {
      // The partial last panel of a column-major source: k by k, zeros below the last row.
      const T* src = data_ + (i0 + p * mr) + k0 * cs_;
      for (int64_t k = 0; k < depth; ++k)
        for (int64_t r = 0; r < mr; ++r) out[k * mr + r] = r < r_end ? static_cast<E>(src[k * cs_ + r]) : E(0);
    } else if (r_end == mr && cs_ == 1) {
      // Row-major source, full panel: a transposition of mr rows (SIMD for float, where it matters).
      const T* base = data_ + (i0 + p * mr) * rs_ + k0;
      if constexpr (std::is_same_v<T, E>) {
        const T* rows_ptr[kMaxPackRows];
        for (int64_t r = 0; r < mr; ++r) rows_ptr[r] = base + r * rs_;
        pack_rows_transposed(rows_ptr, mr, depth, out);
      } else {
        for (int64_t k = 0; k < depth; ++k)
          for (int64_t r = 0; r < mr; ++r) out[k * mr + r] = static_cast<E>(base[r * rs_ + k]);
      }
    } else {
      // General strides or a partial panel: one row at a time, zero rows past the end.
      for (int64_t r = 0; r < mr; ++r) {
        if (r >= r_end) {
          for (int64_t k = 0; k < depth; ++k) out[k * mr + r] = E(0);
          continue;
        }
        const T* src = data_ + (i0 + p * mr + r) * rs_ + k0 * cs_;
        for (int64_t k = 0; k < depth; ++k) out[k * mr + r] = static_cast<E>(src[k * cs_]);
      }
    }
  }
}
template <class T>
auto MatrixPacker<T>::direct(int64_t i0, int64_t k0, int64_t* row_stride) const -> const E* {
  if constexpr (std::is_same_v<T, float>) {  // (only the float AVX-512 kernels read A in place)
    if (cs_ != 1) return nullptr;
    *row_stride = rs_;
    return data_ + i0 * rs_ + k0;
  } else {
    return nullptr;
  }
}

template class MatrixPacker<float>;
template class MatrixPacker<f16>;
template class MatrixPacker<bf16>;
template class MatrixPacker<double>;

namespace {

// ------------------------------------------------------------------ micro-kernels
// c[r*ldc + j] (+)= sum_k a[k*MR + r] * b[k*NR + j] for a full MR x NR tile.

constexpr int64_t kKC = 256;  // depth of a packed block: a B micro-panel (NR*KC floats) stays in L1/L2

template <class E, int MR, int NR>
void kernel_scalar(int64_t kc, const E* a, const E* b, E* c, int64_t ldc, bool acc) {
  E t[MR][NR];
  for (int r = 0; r < MR; ++r)
    for (int j = 0; j < NR; ++j) t[r][j] = acc ? c[r * ldc + j] : E(0);
  for (int64_t k = 0; k < kc; ++k)
    for (int r = 0; r < MR; ++r)
      for (int j = 0; j < NR; ++j) t[r][j] += a[k * MR + r] * b[k * NR + j];
  for (int r = 0; r < MR; ++r)
    for (int j = 0; j < NR; ++j) c[r * ldc + j] = t[r][j];
}

#if defined(__x86_64__)
// AVX2: 6 rows x 16 columns = 12 ymm accumulators, 2 ymm of B, one broadcast per row.
void kernel_avx2(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, bool acc) {
  constexpr int MR = 6;
  __m256 c0[MR], c1[MR];
#pragma GCC unroll 6
  for (int r = 0; r < MR; ++r) {
    c0[r] = acc ? _mm256_loadu_ps(c + r * ldc) : _mm256_setzero_ps();
    c1[r] = acc ? _mm256_loadu_ps(c + r * ldc + 8) : _mm256_setzero_ps();
  }
  for (int64_t k = 0; k < kc; ++k) {
    const __m256 b0 = _mm256_loadu_ps(b + k * 16), b1 = _mm256_loadu_ps(b + k * 16 + 8);
#pragma GCC unroll 6
    for (int r = 0; r < MR; ++r) {
      const __m256 av = _mm256_broadcast_ss(a + k * MR + r);
      c0[r] = _mm256_fmadd_ps(av, b0, c0[r]);
      c1[r] = _mm256_fmadd_ps(av, b1, c1[r]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < MR; ++r) {
    _mm256_storeu_ps(c + r * ldc, c0[r]);
    _mm256_storeu_ps(c + r * ldc + 8, c1[r]);
  }
}

// AVX-512 tiles, written once as a template over the tile shape and over where A comes from:
//   packed A   element (r, k) at a[k*MR + r]     (a panel written by a Packer)
//   direct A   element (r, k) at a[r*lda + k]    (a plain float matrix, read in place)
// NV = number of 16-float vectors per row of the tile: 14x32 = (MR 14, NV 2), 28x16 = (MR 28, NV 1).
// Accumulators: MR*NV zmm registers (28), plus NV for B and one broadcast.
template <int MR, int NV, bool Direct>
SEG_TARGET_AVX512 void kernel_avx512_tile(int64_t kc, const float* a, int64_t lda, const float* b, float* c,
                                          int64_t ldc, bool acc) {
  constexpr int NR = 16 * NV;
  __m512 t[MR][NV];
#pragma GCC unroll 28
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) t[r][v] = acc ? _mm512_loadu_ps(c + r * ldc + 16 * v) : _mm512_setzero_ps();
  for (int64_t k = 0; k < kc; ++k) {
    __m512 bv[NV];
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) bv[v] = _mm512_loadu_ps(b + k * NR + 16 * v);
#pragma GCC unroll 28
    for (int r = 0; r < MR; ++r) {
      const __m512 av = _mm512_set1_ps(Direct ? a[r * lda + k] : a[k * MR + r]);
#pragma GCC unroll 2
      for (int v = 0; v < NV; ++v) t[r][v] = _mm512_fmadd_ps(av, bv[v], t[r][v]);
    }
  }
#pragma GCC unroll 28
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) _mm512_storeu_ps(c + r * ldc + 16 * v, t[r][v]);
}

// The two calling conventions of the kernel table (packed: no lda).
template <int MR, int NV>
void kernel_avx512(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, bool acc) {
  kernel_avx512_tile<MR, NV, false>(kc, a, 0, b, c, ldc, acc);
}
template <int MR, int NV>
void kernel_avx512_direct(int64_t kc, const float* a, int64_t lda, const float* b, float* c, int64_t ldc, bool acc) {
  kernel_avx512_tile<MR, NV, true>(kc, a, lda, b, c, ldc, acc);
}
#endif

template <class E>
struct KernelChoice {
  using Kernel = void (*)(int64_t, const E*, const E*, E*, int64_t, bool);
  using DirectKernel = void (*)(int64_t, const E*, int64_t, const E*, E*, int64_t, bool);
  int64_t mr, nr, mc, nc;
  Kernel fn;
  DirectKernel direct = nullptr;  // reads A in place, when the operand allows it
};

// The tile shape follows the ISA and, for AVX-512, the output width: a narrow N would waste half of
// a 32-wide tile.
KernelChoice<float> choose_kernel(int64_t N) {
#if defined(__x86_64__)
  switch (cpu_isa()) {
    case CpuIsa::avx512:
      // A 16-wide tile when 32-wide ones would leave a half-empty last panel (N = 16, 80, 144, ...).
      if (N % 32 != 0 && N % 32 <= 16)
        return {28, 16, 28 * 6, 16 * 64, kernel_avx512<28, 1>, kernel_avx512_direct<28, 1>};
      return {14, 32, 14 * 12, 32 * 32, kernel_avx512<14, 2>, kernel_avx512_direct<14, 2>};
    case CpuIsa::avx2: return {6, 16, 6 * 24, 16 * 64, kernel_avx2};
    case CpuIsa::scalar: break;
  }
#endif
  return {4, 8, 64, 256, kernel_scalar<float, 4, 8>};
}
// Double: one portable tile for every ISA (the compiler vectorises its inner loop as it can).
KernelChoice<double> choose_kernel_f64() { return {4, 8, 64, 256, kernel_scalar<double, 4, 8>}; }

// One thread's share: C rows [m0, m1) x columns [n0, n1).
template <class E>
void gemm_serial(const KernelChoice<E>& kc_, int64_t m0, int64_t m1, int64_t n0, int64_t n1, int64_t k0, int64_t k1,
                 const PackerOf<E>& a, const PackerOf<E>& bt, E* c, int64_t ldc, bool accumulate) {
  const int64_t MR = kc_.mr, NR = kc_.nr;
  thread_local std::vector<E> a_buf, b_buf;
  a_buf.resize(static_cast<size_t>(kc_.mc * kKC));
  b_buf.resize(static_cast<size_t>(kc_.nc * kKC));
  E edge[28 * 32];  // the largest tile of any kernel
  for (int64_t jc = n0; jc < n1; jc += kc_.nc) {
    const int64_t nc = std::min(kc_.nc, n1 - jc);
    for (int64_t pc = k0; pc < k1; pc += kKC) {
      const int64_t kc = std::min(kKC, k1 - pc);
      const bool acc = accumulate || pc > k0;
      bt.pack(jc, nc, pc, kc, NR, b_buf.data());
      for (int64_t ic = m0; ic < m1; ic += kc_.mc) {
        const int64_t mc = std::min(kc_.mc, m1 - ic);
        int64_t lda = 0;
        const E* a_direct = kc_.direct ? a.direct(ic, pc, &lda) : nullptr;
        // 4 KiB aliasing: when the row stride is a multiple of 1024 floats, the MR rows a tile reads
        // in place all fall into the same L1 set (its index repeats every 4 KiB) and evict each
        // other; packing them is cheaper once the packed block is reused over >= 128 columns.
        // Measured (lab_gemm, M=4096 N=256, 1 thread): K=1024 direct 75 GFLOP/s, packed 84;
        // K=2048 70 vs 84; K=768 direct 96 vs 89, so only the aliased strides are packed.
        if (a_direct && lda % 1024 == 0 && nc >= 128) a_direct = nullptr;
        if (a_direct) {
          // A read in place for full tiles; an edge tile packs its own rows and goes through the
          // buffered path below (same arithmetic, so results do not depend on the path).
          for (int64_t jr = 0; jr < nc; jr += NR) {
            const E* bp = b_buf.data() + (jr / NR) * kc * NR;
            const int64_t nr = std::min(NR, nc - jr);
            for (int64_t ir = 0; ir < mc; ir += MR) {
              const int64_t mr = std::min(MR, mc - ir);
              E* ct = c + (ic + ir) * ldc + (jc + jr);
              if (mr == MR && nr == NR) {
                kc_.direct(kc, a_direct + ir * lda, lda, bp, ct, ldc, acc);
                continue;
              }
              a.pack(ic + ir, mr, pc, kc, MR, a_buf.data());
              for (int64_t r = 0; r < mr; ++r)
                for (int64_t j = 0; j < nr; ++j) edge[r * NR + j] = acc ? ct[r * ldc + j] : E(0);
              kc_.fn(kc, a_buf.data(), bp, edge, NR, true);
              for (int64_t r = 0; r < mr; ++r)
                for (int64_t j = 0; j < nr; ++j) ct[r * ldc + j] = edge[r * NR + j];
            }
          }
          continue;
        }
        a.pack(ic, mc, pc, kc, MR, a_buf.data());
        for (int64_t jr = 0; jr < nc; jr += NR) {
          const E* bp = b_buf.data() + (jr / NR) * kc * NR;
          const int64_t nr = std::min(NR, nc - jr);
          for (int64_t ir = 0; ir < mc; ir += MR) {
            const E* ap = a_buf.data() + (ir / MR) * kc * MR;
            const int64_t mr = std::min(MR, mc - ir);
            E* ct = c + (ic + ir) * ldc + (jc + jr);
            if (mr == MR && nr == NR) {
              kc_.fn(kc, ap, bp, ct, ldc, acc);
            } else {  // edge tile: compute the full tile into a buffer, copy the valid part
              for (int64_t r = 0; r < mr; ++r)
                for (int64_t j = 0; j < nr; ++j) edge[r * NR + j] = acc ? ct[r * ldc + j] : E(0);
              kc_.fn(kc, ap, bp, edge, NR, true);
              for (int64_t r = 0; r < mr; ++r)
                for (int64_t j = 0; j < nr; ++j) ct[r * ldc + j] = edge[r * NR + j];
            }
          }
        }
      }
    }
  }
}

// The threads a GEMM may use: `threads`, or the whole pool (1 inside a parallel region).
int thread_count(int threads) {
  return std::max(1, threads > 0 ? threads : (in_parallel_region() ? 1 : num_threads()));
}

// ------------------------------------------------------------------ split K
// A deep GEMM with a small output (a convolution's weight gradient: M, N = channels, K = pixels,
// e.g. 144 x 24 x 16384 in MobileNetV2) has too few tiles to split over threads: 144 rows are 11
// panels of 14, and the threads' slabs differ by a panel, each packs the whole B, and N = 24 fills
// a 32-wide tile 3/4. Such a GEMM is cut along K instead, into fixed chunks of kSplitKChunk; each
// chunk's product goes to its own buffer (computed as C^T when that tile shape wastes less), and
// the buffers are summed in chunk order. The chunks do not depend on the thread count, so neither
// does the result (the same property as the slab split, a different summation order).
constexpr int64_t kSplitKChunk = 4096;
constexpr int64_t kSplitKMaxOutput = 64 * 1024;  // M*N: above this the slab split has tiles enough

bool use_split_k(const GemmShape& s) { return s.K >= 2 * kSplitKChunk && s.M * s.N <= kSplitKMaxOutput; }

// Multiply-adds a kernel runs for an M x N output, padding included.
int64_t padded_area(const KernelChoice<float>& k, int64_t M, int64_t N) {
  return (M + k.mr - 1) / k.mr * k.mr * ((N + k.nr - 1) / k.nr * k.nr);
}

void gemm_split_k(const GemmShape& s, const Packer& a, const Packer& bt, float* c, int64_t ldc, bool accumulate,
                  int threads) {
  const KernelChoice<float> straight = choose_kernel(s.N), flipped = choose_kernel(s.M);
  const bool transpose = padded_area(flipped, s.N, s.M) < padded_area(straight, s.M, s.N);
  const int64_t chunks = (s.K + kSplitKChunk - 1) / kSplitKChunk, area = s.M * s.N;
  std::vector<float> part(static_cast<size_t>(chunks * area));
  const int T = thread_count(threads);
  const int tasks = static_cast<int>(std::min<int64_t>(T, chunks));
  auto run_chunks = [&](int t) {
    for (int64_t ch = chunks * t / tasks; ch < chunks * (t + 1) / tasks; ++ch) {
      const int64_t k0 = ch * kSplitKChunk, k1 = std::min(s.K, k0 + kSplitKChunk);
      float* out = part.data() + ch * area;
      if (transpose)  // out[j*M + i] = C(i, j): B^T times A^T
        gemm_serial(flipped, 0, s.N, 0, s.M, k0, k1, bt, a, out, s.M, false);
      else
        gemm_serial(straight, 0, s.M, 0, s.N, k0, k1, a, bt, out, s.N, false);
    }
  };
  if (tasks <= 1)
    run_chunks(0);
  else
    cpu_pool().run(tasks, run_chunks);
  for (int64_t i = 0; i < s.M; ++i)
    for (int64_t j = 0; j < s.N; ++j) {
      const int64_t at = transpose ? j * s.M + i : i * s.N + j;
      float sum = part[static_cast<size_t>(at)];
      for (int64_t ch = 1; ch < chunks; ++ch) sum += part[static_cast<size_t>(ch * area + at)];
      c[i * ldc + j] = accumulate ? c[i * ldc + j] + sum : sum;
    }
}

template <class E>
void gemm_threads(const GemmShape& s, const KernelChoice<E>& kc, const PackerOf<E>& a, const PackerOf<E>& bt, E* c,
                  int64_t ldc, bool accumulate, int threads) {
  if (s.M <= 0 || s.N <= 0) return;
  if (s.K <= 0) {
    if (!accumulate)
      for (int64_t i = 0; i < s.M; ++i) std::memset(c + i * ldc, 0, static_cast<size_t>(s.N) * sizeof(E));
    return;
  }
  const int T = thread_count(threads);
  // Enough work per thread to be worth a wake-up: ~2 MFLOP.
  const int64_t max_by_work = std::max<int64_t>(1, 2 * s.M * s.N * s.K / (1 << 21));
  const bool split_m = s.M / kc.mr >= s.N / kc.nr;
  const int64_t units = split_m ? (s.M + kc.mr - 1) / kc.mr : (s.N + kc.nr - 1) / kc.nr;
  const int slabs = static_cast<int>(std::min<int64_t>({T, units, max_by_work}));
  if (slabs <= 1) {
    gemm_serial(kc, 0, s.M, 0, s.N, 0, s.K, a, bt, c, ldc, accumulate);
    return;
  }
  cpu_pool().run(slabs, [&](int t) {
    const int64_t u0 = units * t / slabs, u1 = units * (t + 1) / slabs;
    if (split_m)
      gemm_serial(kc, u0 * kc.mr, std::min(s.M, u1 * kc.mr), 0, s.N, 0, s.K, a, bt, c, ldc, accumulate);
    else
      gemm_serial(kc, 0, s.M, u0 * kc.nr, std::min(s.N, u1 * kc.nr), 0, s.K, a, bt, c, ldc, accumulate);
  });
}

}  // namespace

void gemm(const GemmShape& s, const Packer& a, const Packer& bt, float* c, int64_t ldc, bool accumulate, int threads) {
  if (use_split_k(s)) return gemm_split_k(s, a, bt, c, ldc, accumulate, threads);
  gemm_threads(s, choose_kernel(s.N), a, bt, c, ldc, accumulate, threads);
}

void gemm(const GemmShape& s, const PackerOf<double>& a, const PackerOf<double>& bt, double* c, int64_t ldc,
          bool accumulate, int threads) {
  gemm_threads(s, choose_kernel_f64(), a, bt, c, ldc, accumulate, threads);
}

void gemm_f32(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
              const float* B, int64_t ldb, float* C, int64_t ldc, bool accumulate) {
  // A(i,k) = trans_a ? A[k*lda + i] : A[i*lda + k];  Bt(j,k) = B(k,j) = trans_b ? B[j*ldb + k] : B[k*ldb + j]
  const MatrixPacker<float> pa(A, trans_a ? 1 : lda, trans_a ? lda : 1);
  const MatrixPacker<float> pb(B, trans_b ? ldb : 1, trans_b ? 1 : ldb);
  gemm({M, N, K}, pa, pb, C, ldc, accumulate);
}

void gemm_ref(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
              const float* B, int64_t ldb, float* C, int64_t ldc, bool accumulate) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = accumulate ? C[i * ldc + j] : 0.0;
      for (int64_t k = 0; k < K; ++k)
        s += static_cast<double>(trans_a ? A[k * lda + i] : A[i * lda + k]) *
             static_cast<double>(trans_b ? B[j * ldb + k] : B[k * ldb + j]);
      C[i * ldc + j] = static_cast<float>(s);
    }
}

}  // namespace seg::cpu
