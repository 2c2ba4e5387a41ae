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

namespace {

// Own implicit-GEMM kernels against cuDNN, all three passes, on the same inputs (|x|, |w|, |dy| <= 1,
// so a sum of K products is within K of 0). Each side: f32 accumulation of K terms (gamma_K * K),
// and for float the TF32 rounding of both inputs (2^-11 each, relative: 2 * K * 2^-11 on the sum)
// when TF32 is allowed, as it is by default on both sides; the output's own rounding (output_rtol)
// twice. cuDNN runs only algorithms that sum products (CudnnAlgoSearch::sums_only): FFT and
// Winograd would add their transforms' error, which this bound does not model.
// The forward's bias is on. cuDNN adds it as a second op (cudnnAddTensor) on the output already
// rounded to T, so its side rounds y - b once more: |y - b| <= |y| + 1 (|b| <= 1), one more
// output_rtol * (|y| + 1), covered by the relative term and output_rtol added to the absolute one.
// (The first H200 run failed here on bf16 1x1 by 0.0037 against an atol of 0.0032, before this
// term: the rounding of a pre-bias value near 1 in bf16 is up to 2^-8.)
// The bias gradient is the same own kernel on both sides (engine_cudnn.h), so it is checked against
// a double-precision column sum of dy instead.
template <class T>
void own_vs_cudnn(const seg::ConvShape& s, const std::string& what) {
  const auto x = seg::test::tc_inputs<T>(static_cast<size_t>(s.x_numel()), 3, false);
  const auto w = seg::test::tc_inputs<T>(static_cast<size_t>(s.w_numel()), 4, false);
  const auto dy = seg::test::tc_inputs<T>(static_cast<size_t>(s.y_numel()), 5, false);
  const auto b = seg::test::tc_inputs<T>(static_cast<size_t>(s.O), 6, false);
  seg::test::DeviceBuffer<T> dx_in(x), dw_in(w), ddy(dy), db_in(b);
  const size_t ws_bytes = 64 << 20;
  seg::test::DeviceBuffer<unsigned char> ws(ws_bytes);
  seg::cuda::ConvTcArgs args;
  args.workspace = {ws.get(), ws_bytes};
  auto tolerance = [](double K, double extra_atol = 0) {
    const double tf32 = std::is_same_v<T, float> ? 2 * K * std::ldexp(1.0, -11) : 0.0;
    return seg::test::Tolerance{2 * (K + 4) * std::ldexp(1.0, -24) * K + tf32 + extra_atol,
                                2 * seg::test::output_rtol<T>()};
  };
  // Restored however this function ends (a failed check throws nothing, a cuDNN error does).
  struct SearchGuard {
    seg::cuda::CudnnAlgoSearch saved = seg::cuda::cudnn_algo_search();
    SearchGuard() { seg::cuda::set_cudnn_algo_search(seg::cuda::CudnnAlgoSearch::sums_only); }
    ~SearchGuard() { seg::cuda::set_cudnn_algo_search(saved); }
  } guard;
  const double K_fwd = static_cast<double>(s.KH * s.KW * (s.C / s.groups));
  seg::test::DeviceBuffer<T> y1(static_cast<size_t>(s.y_numel())), y2(static_cast<size_t>(s.y_numel()));
  seg::cuda::conv2d_forward_tc<T>(s, dx_in.get(), dw_in.get(), db_in.get(), y1.get(), nullptr, args);
  seg::cuda::conv2d_forward_cudnn<T>(s, dx_in.get(), dw_in.get(), db_in.get(), y2.get(), nullptr, args);
  auto c = seg::test::compare(y1.download(), y2.download(), tolerance(K_fwd + 1, seg::test::output_rtol<T>()));
  CHECK_MESSAGE(c.ok(), what << ", forward (" << seg::cuda::cudnn_last_choice() << "): " << c.str());
  const double K_data = static_cast<double>(s.KH * s.KW * (s.O / s.groups));
  seg::test::DeviceBuffer<T> dx1(static_cast<size_t>(s.x_numel())), dx2(static_cast<size_t>(s.x_numel()));
  seg::cuda::conv2d_backward_data_tc<T>(s, dw_in.get(), ddy.get(), dx1.get(), nullptr, args);
  seg::cuda::conv2d_backward_data_cudnn<T>(s, dw_in.get(), ddy.get(), dx2.get(), nullptr, args);
  c = seg::test::compare(dx1.download(), dx2.download(), tolerance(K_data));
  CHECK_MESSAGE(c.ok(), what << ", backward data (" << seg::cuda::cudnn_last_choice() << "): " << c.str());
  const double P = static_cast<double>(s.N * s.Ho() * s.Wo());
  seg::test::DeviceBuffer<T> dw1(static_cast<size_t>(s.w_numel())), dw2(static_cast<size_t>(s.w_numel()));
  seg::test::DeviceBuffer<T> dbias(static_cast<size_t>(s.O));
  seg::cuda::conv2d_backward_weight_tc<T>(s, dx_in.get(), ddy.get(), dw1.get(), nullptr, nullptr, args);
  seg::cuda::conv2d_backward_weight_cudnn<T>(s, dx_in.get(), ddy.get(), dw2.get(), dbias.get(), nullptr, args);
  c = seg::test::compare(dw1.download(), dw2.download(), tolerance(P));
  CHECK_MESSAGE(c.ok(), what << ", backward weight (" << seg::cuda::cudnn_last_choice() << "): " << c.str());
  // db[o] = sum over pixels of dy[p, o], in double on the host: one f32 accumulation and one
  // rounding to T on the device side (half the two-sided tolerance).
  std::vector<double> want(static_cast<size_t>(s.O), 0.0);
  for (size_t p = 0; p < static_cast<size_t>(P); ++p)
    for (size_t o = 0; o < static_cast<size_t>(s.O); ++o) want[o] += static_cast<double>(static_cast<float>(dy[p * s.O + o]));
  const auto t = tolerance(P);
  c = seg::test::compare(dbias.download(), want, seg::test::Tolerance{t.atol / 2, t.rtol / 2});
  CHECK_MESSAGE(c.ok(), what << ", bias gradient: " << c.str());
}

seg::ConvShape conv_shape(int64_t N, int64_t H, int64_t C, int64_t O, int64_t k, int64_t stride, int64_t pad,
                          int64_t dil) {
  seg::ConvShape s;
  s.N = N;
  s.H = s.W = H;
  s.C = C;
  s.O = O;
  s.KH = s.KW = k;
  s.stride_h = s.stride_w = stride;
  s.pad_h = s.pad_w = pad;
  s.dil_h = s.dil_w = dil;
  return s;
}

}  // namespace

TEST_CASE("gpu: conv2d_tc agrees with cuDNN" * SEG_REQUIRES(cudnn)) {
  own_vs_cudnn<f16>(conv_shape(2, 33, 64, 96, 3, 1, 2, 2), "f16 3x3 dilation 2 (the dilated trunk)");
  own_vs_cudnn<bf16>(conv_shape(2, 32, 160, 960, 1, 1, 0, 1), "bf16 1x1 160 -> 960 (MobileNetV2's expansion)");
  own_vs_cudnn<float>(conv_shape(2, 31, 64, 128, 3, 2, 1, 1), "f32/TF32 3x3 stride 2, odd size");
  own_vs_cudnn<f16>(conv_shape(2, 65, 3, 32, 3, 2, 1, 1), "f16 3x3 stride 2 from 3 channels (the stem)");
  own_vs_cudnn<f16>(conv_shape(1, 16, 512, 150, 1, 1, 0, 1), "f16 1x1 512 -> 150 (a classifier)");
}

#else

SEG_TEST_REQUIREMENT(cudnn, [] { return std::string("the simulated build has no cuDNN (library engines are absent)"); });
TEST_CASE("gpu: own tensor-core kernels against cuBLASLt and cuDNN (real GPU only)" * doctest::skip()) {}

#endif
