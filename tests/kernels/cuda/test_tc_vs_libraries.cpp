// On a real GPU (label gpu): the own tensor-core kernels against cuBLASLt and cuDNN on the same
// inputs, at sizes the simulator cannot afford. Both sides carry f32-accumulation error, so the
// tolerance is twice the bound of tc_test_util.h. In the simulated build the libraries do not
// exist and these cases are skipped (visibly).
#include <doctest/doctest.h>

#include <string>

#include "tests/common/requirement.h"

#ifdef SEG_TEST_ON_GPU

#include <cmath>
#include <string>
#include <vector>

#include "kernels/cuda/conv2d_tc.h"
#include "kernels/cuda/engine.h"
#include "kernels/cuda/engine_cublaslt.h"
#include "kernels/cuda/engine_cudnn.h"
#include "kernels/cuda/gemm_tc.h"
#include "tests/kernels/cuda/tc_test_util.h"

using seg::bf16;
using seg::f16;

namespace {

template <class T, class TOut>
void own_vs_cublaslt(int M, int N, int K, bool ta, bool tb) {
  const int64_t lda = ta ? M : K, ldb = tb ? K : N;
  const auto A = seg::test::tc_inputs<T>(static_cast<size_t>(M) * K, 1, false);
  const auto B = seg::test::tc_inputs<T>(static_cast<size_t>(K) * N, 2, false);
  seg::test::DeviceBuffer<T> dA(A), dB(B);
  seg::test::DeviceBuffer<TOut> own(static_cast<size_t>(M) * N), lib(static_cast<size_t>(M) * N);
  const size_t ws_bytes = std::max<size_t>(32 << 20, seg::cuda::gemm_tc_workspace_bytes<T>(M, N, K, {}));
  seg::test::DeviceBuffer<unsigned char> ws(ws_bytes);
  const seg::cuda::TcWorkspace w{ws.get(), ws_bytes};
  seg::cuda::gemm_tc<T, TOut>(ta, tb, M, N, K, dA.get(), lda, dB.get(), ldb, own.get(), N, nullptr, {}, {}, w, nullptr);
  seg::cuda::gemm_cublaslt<T, TOut>(ta, tb, M, N, K, dA.get(), lda, dB.get(), ldb, lib.get(), N, nullptr, {}, w,
                                    nullptr);
  const auto a = own.download(), b = lib.download();
  // |a_k b_k| <= 1, so sum |ab| <= K: each side is within gamma_K * K of the exact result.
  const double bound = 2 * (K + 4) * std::ldexp(1.0, -24) * K + (std::is_same_v<T, float> ? 2 * K * std::ldexp(1.0, -11) : 0);
  const auto c = seg::test::compare(a, b, seg::test::Tolerance{bound, 2 * seg::test::output_rtol<TOut>()});
  CHECK_MESSAGE(c.ok(), M << "x" << N << "x" << K << (ta ? " A^T" : "") << (tb ? " B^T" : "") << ": " << c.str());
}

}  // namespace

TEST_CASE("gpu: gemm_tc agrees with cuBLASLt") {
  for (const bool ta : {false, true})
    for (const bool tb : {false, true}) {
      own_vs_cublaslt<f16, f16>(1024, 768, 512, ta, tb);
      own_vs_cublaslt<bf16, float>(1000, 520, 1030, ta, tb);
      own_vs_cublaslt<float, float>(777, 513, 300, ta, tb);
    }
  own_vs_cublaslt<f16, float>(64, 576, 32768, true, false);  // a backward-weight shape (split-K)
}

// cuDNN is loaded at run time and may be missing on a GPU machine: then this case is reported as
// skipped (its own CTest test, <exe>_cudnn, exit 77), not as a pass.
SEG_TEST_REQUIREMENT(cudnn, [] {
  std::string why;
  return seg::cuda::cudnn_available(&why) ? std::string() : "cuDNN not loadable here: " + why;
});

TEST_CASE("gpu: conv2d_tc agrees with cuDNN" * SEG_REQUIRES(cudnn)) {
  seg::ConvShape s;
  s.N = 2;
  s.H = s.W = 33;
  s.C = 64;
  s.O = 96;
  s.KH = s.KW = 3;
  s.pad_h = s.pad_w = 2;
  s.dil_h = s.dil_w = 2;
  const auto x = seg::test::tc_inputs<f16>(static_cast<size_t>(s.x_numel()), 3, false);
  const auto w = seg::test::tc_inputs<f16>(static_cast<size_t>(s.w_numel()), 4, false);
  const auto dy = seg::test::tc_inputs<f16>(static_cast<size_t>(s.y_numel()), 5, false);
  seg::test::DeviceBuffer<f16> dx_in(x), dw_in(w), ddy(dy);
  const size_t ws_bytes = 64 << 20;
  seg::test::DeviceBuffer<unsigned char> ws(ws_bytes);
  seg::cuda::ConvTcArgs args;
  args.workspace = {ws.get(), ws_bytes};
  seg::test::DeviceBuffer<f16> y1(static_cast<size_t>(s.y_numel())), y2(static_cast<size_t>(s.y_numel()));
  seg::cuda::conv2d_forward_tc<f16>(s, dx_in.get(), dw_in.get(), nullptr, y1.get(), nullptr, args);
  seg::cuda::conv2d_forward_cudnn<f16>(s, dx_in.get(), dw_in.get(), nullptr, y2.get(), nullptr, args);
  const double K = static_cast<double>(s.KH * s.KW * s.C);
  auto c = seg::test::compare(y1.download(), y2.download(), {2 * (K + 4) * std::ldexp(1.0, -24) * K, 2 * std::ldexp(1.0, -11)});
  CHECK_MESSAGE(c.ok(), "forward: " << c.str());
  seg::test::DeviceBuffer<f16> dx1(static_cast<size_t>(s.x_numel())), dx2(static_cast<size_t>(s.x_numel()));
  seg::cuda::conv2d_backward_data_tc<f16>(s, dw_in.get(), ddy.get(), dx1.get(), nullptr, args);
  seg::cuda::conv2d_backward_data_cudnn<f16>(s, dw_in.get(), ddy.get(), dx2.get(), nullptr, args);
  const double Kd = static_cast<double>(s.KH * s.KW * s.O);
  c = seg::test::compare(dx1.download(), dx2.download(), {2 * (Kd + 4) * std::ldexp(1.0, -24) * Kd, 2 * std::ldexp(1.0, -11)});
  CHECK_MESSAGE(c.ok(), "backward data: " << c.str());
  seg::test::DeviceBuffer<f16> dw1(static_cast<size_t>(s.w_numel())), dw2(static_cast<size_t>(s.w_numel()));
  seg::cuda::conv2d_backward_weight_tc<f16>(s, dx_in.get(), ddy.get(), dw1.get(), nullptr, nullptr, args);
  seg::cuda::conv2d_backward_weight_cudnn<f16>(s, dx_in.get(), ddy.get(), dw2.get(), nullptr, nullptr, args);
  const double P = static_cast<double>(s.N * s.Ho() * s.Wo());
  c = seg::test::compare(dw1.download(), dw2.download(), {2 * (P + 4) * std::ldexp(1.0, -24) * P, 2 * std::ldexp(1.0, -11)});
  CHECK_MESSAGE(c.ok(), "backward weight: " << c.str());
}

#else

SEG_TEST_REQUIREMENT(cudnn, [] { return std::string("the simulated build has no cuDNN (library engines are absent)"); });
TEST_CASE("gpu: own tensor-core kernels against cuBLASLt and cuDNN (real GPU only)" * doctest::skip()) {}

#endif
