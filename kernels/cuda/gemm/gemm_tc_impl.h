// The definition of seg::cuda::gemm_tc (gemm_tc.h) and its workspace queries, instantiated per
// element type by gemm_tc_{f16,bf16,tf32}.cu (three files so the builds run in parallel).
#pragma once

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include "kernels/cuda/gemm/device_launch.h"
#include "kernels/cuda/gemm/operand_source.h"
#include "kernels/cuda/gemm_tc.h"

namespace seg::cuda::tc {

inline void check_gemm_args(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, int64_t lda, int64_t ldb,
                            int64_t ldc) {
  auto fail = [](const std::string& what) { throw std::invalid_argument("gemm_tc: " + what); };
  if (M < 0 || N < 0 || K < 0)
    fail("negative size M=" + std::to_string(M) + " N=" + std::to_string(N) + " K=" + std::to_string(K));
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  if (M > kMax || N > kMax || K > kMax) fail("M, N and K must each be below 2^31");
  const int64_t need_a = trans_a ? M : K, need_b = trans_b ? K : N;
  if (lda < need_a && M > 0 && K > 0)
    fail("lda=" + std::to_string(lda) + " is shorter than a row of A (" + std::to_string(need_a) + ")");
  if (ldb < need_b && N > 0 && K > 0)
    fail("ldb=" + std::to_string(ldb) + " is shorter than a row of B (" + std::to_string(need_b) + ")");
  if (ldc < N && M > 0) fail("ldc=" + std::to_string(ldc) + " is shorter than a row of C (" + std::to_string(N) + ")");
}

template <class T, Major MA, Major MB, class TOut>
void gemm_tc_oriented(int M, int N, int K, const T* A, int64_t lda, const T* B, int64_t ldb, TOut* C, int64_t ldc,
                      const TOut* bias, const TcEpilogue& e, const TcOptions& o, TcWorkspace ws, Stream stream) {
  using DT = device_t<T>;
  constexpr int kChunk = Element<DT>::kChunk;
  GemmArgs<MatrixSource<DT, MA>, MatrixSource<DT, MB>> p;
  // MatrixSource rows x cols with cols contiguous: A is M x K (Major::k) or K x M; B is N x K or K x N.
  p.a = {reinterpret_cast<const DT*>(A), lda, MA == Major::k ? M : K, MA == Major::k ? K : M, 0};
  p.b = {reinterpret_cast<const DT*>(B), ldb, MB == Major::k ? N : K, MB == Major::k ? K : N, 0};
  p.M = M;
  p.N = N;
  p.K = K;
  p.vec_a = aligned16(A) && lda % kChunk == 0;
  p.vec_b = aligned16(B) && ldb % kChunk == 0;
  p.ep.alpha = e.alpha;
  p.ep.beta = e.beta;
  p.ep.d = C;
  p.ep.ldd = ldc;
  p.ep.d_type = out_type<TOut>();
  p.ep.d_vec = reinterpret_cast<uintptr_t>(C) % (4 * sizeof(TOut)) == 0 && ldc % 4 == 0;
  p.ep.bias = bias;
  p.ep.act = act_of(e.act);
  dispatch_gemm<DT, MA, MB, MatrixSource<DT, MA>, MatrixSource<DT, MB>>(p, o.family, o.tile, 1, o.split_k, ws, stream);
}

template <class T, class TOut>
void gemm_tc_impl(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B,
                  int64_t ldb, TOut* C, int64_t ldc, const TOut* bias, const TcEpilogue& e, const TcOptions& o,
                  TcWorkspace ws, Stream stream) {
  check_gemm_args(trans_a, trans_b, M, N, K, lda, ldb, ldc);
  if (M == 0 || N == 0) return;
  const int m = static_cast<int>(M), n = static_cast<int>(N), k = static_cast<int>(K);
  // op(A) = A: K contiguous (Major::k); A^T: M contiguous. op(B) = B: N contiguous; B^T: K contiguous.
  if (!trans_a && !trans_b)
    gemm_tc_oriented<T, Major::k, Major::mn>(m, n, k, A, lda, B, ldb, C, ldc, bias, e, o, ws, stream);
  else if (!trans_a && trans_b)
    gemm_tc_oriented<T, Major::k, Major::k>(m, n, k, A, lda, B, ldb, C, ldc, bias, e, o, ws, stream);
  else if (trans_a && !trans_b)
    gemm_tc_oriented<T, Major::mn, Major::mn>(m, n, k, A, lda, B, ldb, C, ldc, bias, e, o, ws, stream);
  else
    gemm_tc_oriented<T, Major::mn, Major::k>(m, n, k, A, lda, B, ldb, C, ldc, bias, e, o, ws, stream);
}

template <class T>
SplitPlan gemm_tc_plan(int64_t M, int64_t N, int64_t K, const TcOptions& o, int groups, size_t available) {
  using DT = device_t<T>;
  const bool large = use_large_tile(o.tile, M, N, groups);
  using L = typename Tiles<DT>::Large;
  using S = typename Tiles<DT>::Small;
  return large ? plan_split_k(M, N, K, groups, L::BM, L::BN, L::BK, L::THREADS / 32, o.split_k, available)
               : plan_split_k(M, N, K, groups, S::BM, S::BN, S::BK, S::THREADS / 32, o.split_k, available);
}

}  // namespace seg::cuda::tc

namespace seg::cuda {

template <class T, class TOut>
void gemm_tc(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B,
             int64_t ldb, TOut* C, int64_t ldc, const TOut* bias, const TcEpilogue& epilogue, const TcOptions& options,
             TcWorkspace workspace, Stream stream) {
  tc::gemm_tc_impl<T, TOut>(trans_a, trans_b, M, N, K, A, lda, B, ldb, C, ldc, bias, epilogue, options, workspace,
                            stream);
}

template <class T>
size_t gemm_tc_workspace_bytes(int64_t M, int64_t N, int64_t K, const TcOptions& o) {
  return M > 0 && N > 0 ? tc::gemm_tc_plan<T>(M, N, K, o, 1, SIZE_MAX).bytes : 0;
}

template <class T>
int gemm_tc_splits(int64_t M, int64_t N, int64_t K, const TcOptions& o) {
  return M > 0 && N > 0 ? tc::gemm_tc_plan<T>(M, N, K, o, 1, SIZE_MAX).splits : 1;
}

}  // namespace seg::cuda

#define SEG_GEMM_TC_INSTANTIATE(T, TOut)                                                                           \
  template void gemm_tc<T, TOut>(bool, bool, int64_t, int64_t, int64_t, const T*, int64_t, const T*, int64_t,     \
                                 TOut*, int64_t, const TOut*, const TcEpilogue&, const TcOptions&, TcWorkspace,    \
                                 Stream);

#define SEG_GEMM_TC_QUERIES(T)                                                                                     \
  template size_t gemm_tc_workspace_bytes<T>(int64_t, int64_t, int64_t, const TcOptions&);                         \
  template int gemm_tc_splits<T>(int64_t, int64_t, int64_t, const TcOptions&);
