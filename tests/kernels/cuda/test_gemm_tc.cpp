// The tensor-core GEMM (kernels/cuda/gemm_tc.h) against a double-precision reference on the same
// rounded inputs: f16 -> f16/f32, bf16 -> bf16/f32, f32 (TF32) -> f32; both kernel families, both
// block tiles, all four transpose cases, ragged M/N/K, unaligned leading dimensions (the
// element-wise path), the epilogue (alpha, beta, bias, ReLU, ReLU6), split-K. Every output element
// is compared (tests/common/compare.h; NaN is a mismatch; outputs start as NaN, DeviceBuffer).
// Tolerances: tc_test_util.h (0 for integer-valued inputs).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cuda/gemm_tc.h"
#include "tests/kernels/cuda/fragment_address.h"
#include "tests/kernels/cuda/tc_test_util.h"

using seg::bf16;
using seg::f16;
using seg::cuda::TcActivation;
using seg::cuda::TcEpilogue;
using seg::cuda::TcFamily;
using seg::cuda::TcOptions;
using seg::cuda::TcTile;
using seg::cuda::TcWorkspace;

namespace {

struct Case {
  int M, N, K;
  bool ta, tb;
  int pad_a = 0, pad_b = 0, pad_c = 0;  // extra elements per row (pad 1..7: unaligned rows)
  bool integer = true;
  TcEpilogue ep{};
  bool bias = false;
};

std::string describe(const Case& c, TcOptions o) {
  return std::string("M=") + std::to_string(c.M) + " N=" + std::to_string(c.N) + " K=" + std::to_string(c.K) +
         (c.ta ? " A^T" : " A") + (c.tb ? " B^T" : " B") + " pads " + std::to_string(c.pad_a) + "/" +
         std::to_string(c.pad_b) + "/" + std::to_string(c.pad_c) + (c.integer ? " integer" : " real") +
         " alpha " + std::to_string(c.ep.alpha) + " beta " + std::to_string(c.ep.beta) +
         " act " + std::to_string(static_cast<int>(c.ep.act)) + (c.bias ? " bias" : "") + " family " +
         seg::cuda::tc_family_name(o.family) + " tile " + std::to_string(static_cast<int>(o.tile)) + " split_k " +
         std::to_string(o.split_k);
}

// Runs one case under the given configurations and compares every element of C.
template <class T, class TOut>
void check_gemm(const Case& c, TcOptions o, const std::vector<seg::test::CudaConfig>& configs) {
  const int64_t lda = (c.ta ? c.M : c.K) + c.pad_a, ldb = (c.tb ? c.K : c.N) + c.pad_b, ldc = c.N + c.pad_c;
  const int64_t rows_a = c.ta ? c.K : c.M, rows_b = c.tb ? c.N : c.K;
  const auto A = seg::test::tc_inputs<T>(static_cast<size_t>(rows_a * lda), 11 + c.M, c.integer);
  const auto B = seg::test::tc_inputs<T>(static_cast<size_t>(rows_b * ldb), 23 + c.N, c.integer);
  const auto C0 = seg::test::tc_inputs<TOut>(static_cast<size_t>(c.M * ldc), 37 + c.K, true);
  const auto bias = seg::test::tc_inputs<TOut>(static_cast<size_t>(c.N), 41, true, -4, 4);
  std::vector<double> ref, abs_sum;
  seg::test::reference_gemm(c.ta, c.tb, c.M, c.N, c.K, A, lda, B, ldb, ref, abs_sum);
  // want = act(alpha * AB + beta * C0 + bias), rounded to TOut; padding columns keep C0.
  std::vector<double> want(C0.size());
  for (int m = 0; m < c.M; ++m)
    for (int64_t n = 0; n < ldc; ++n) {
      const size_t i = static_cast<size_t>(m * ldc + n);
      const double old = static_cast<float>(C0[i]);
      if (n >= c.N) {
        want[i] = old;
        continue;
      }
      double v = c.ep.alpha * ref[static_cast<size_t>(m) * c.N + n] + (c.ep.beta != 0 ? c.ep.beta * old : 0.0) +
                 (c.bias ? static_cast<double>(static_cast<float>(bias[static_cast<size_t>(n)])) : 0.0);
      if (c.ep.act != TcActivation::none && v < 0) v = 0;
      if (c.ep.act == TcActivation::relu6 && v > 6) v = 6;
      want[i] = c.integer ? seg::test::round_to<TOut>(v) : v;
    }
  const seg::test::Tolerance tol = seg::test::tc_tolerance<TOut>(c.integer, c.K, abs_sum);

  seg::test::DeviceBuffer<T> dA(A), dB(B);
  seg::test::DeviceBuffer<TOut> dbias(bias);
  const size_t ws_bytes = seg::cuda::gemm_tc_workspace_bytes<T>(c.M, c.N, c.K, o);
  seg::test::DeviceBuffer<unsigned char> ws(ws_bytes);
  for (const auto& cfg : configs) {
    seg::test::ScopedConfig scoped(cfg);
    seg::test::DeviceBuffer<TOut> dC(C0);
    seg::cuda::gemm_tc<T, TOut>(c.ta, c.tb, c.M, c.N, c.K, dA.get(), lda, dB.get(), ldb, dC.get(), ldc,
                                c.bias ? dbias.get() : nullptr, c.ep, o, TcWorkspace{ws.get(), ws_bytes}, nullptr);
    const auto got = dC.download();
    const auto cmp = seg::test::compare(got, want, tol);
    CHECK_MESSAGE(cmp.ok(), describe(c, o) << " [" << cfg.name << "]: " << cmp.str());
  }
}

const bool kTransposes[4][2] = {{false, false}, {false, true}, {true, false}, {true, true}};

template <class T, class TOut>
void every_transpose_family_tile(const Case& base) {
  const TcFamily families[2] = {TcFamily::mma_sync, TcFamily::wmma};
  for (const TcFamily f : families) {
    for (const TcTile t : {TcTile::large, TcTile::small})
      for (const auto& tr : kTransposes) {
        if (seg::test::kSanitizerBuild && t == TcTile::large) continue;
        Case c = base;
        c.ta = tr[0];
        c.tb = tr[1];
        check_gemm<T, TOut>(c, TcOptions{f, t, 1}, seg::test::rr_and_random());
      }
  }
}

}  // namespace

#ifndef SEG_TEST_ON_GPU
TEST_CASE("gemm_tc: fragment addresses as base + moves equal the tile's offset() everywhere") {
  const auto rep = seg::test::check_fragment_addresses();
  INFO(rep.first_wrong);
  CHECK(rep.checked > 10000);
  CHECK(rep.wrong == 0);
}
#else
TEST_CASE("gemm_tc: fragment addresses (simulator build only)" * doctest::skip()) {}
#endif

TEST_CASE("gemm_tc: every transpose case, both families, both tiles, ragged M/N/K, exact on integers") {
  // 70 x 84 x 90: a partial block tile in each dimension for both tiles; K = 2 full K tiles + 26.
  const Case base{70, 84, 90, false, false};
  SUBCASE("f16 -> f16") { every_transpose_family_tile<f16, f16>(base); }
  SUBCASE("f16 -> f32") { every_transpose_family_tile<f16, float>(base); }
  SUBCASE("bf16 -> bf16") { every_transpose_family_tile<bf16, bf16>(base); }
  SUBCASE("bf16 -> f32") { every_transpose_family_tile<bf16, float>(base); }
  SUBCASE("f32 (TF32) -> f32") { every_transpose_family_tile<float, float>(base); }
}

// The large tile's main loop runs in two parts (block_tile.h, InsideK_): trips whose copied K tile
// lies inside K use a form of the copies without the K bound, the rest the general form. The case
// above (K = 90, three K tiles) never enters the first part with three stages; these do. K = 264:
// eight tiles inside K and a ragged ninth; K = 256: whole tiles, the general part only drains.
// Splits of 3 start each split's cursor mid-K and end the first parts at different tiles.
TEST_CASE("gemm_tc: the large tile's two-part main loop, every transpose, with and without split-K" *
          doctest::skip(seg::test::kSanitizerBuild)) {
  for (const int K : {264, 256})
    for (const int splits : {1, 3})
      for (const auto& tr : kTransposes) {
        const Case c{70, 84, K, tr[0], tr[1]};
        check_gemm<f16, float>(c, TcOptions{TcFamily::mma_sync, TcTile::large, splits}, seg::test::cuda_config_rr());
        check_gemm<bf16, bf16>(c, TcOptions{TcFamily::mma_sync, TcTile::large, splits}, seg::test::cuda_config_rr());
      }
}

TEST_CASE("gemm_tc: real-valued inputs within the f32 accumulation bound") {
  Case c{96, 72, 200, false, true};
  c.integer = false;
  for (const auto& tr : kTransposes) {
    c.ta = tr[0];
    c.tb = tr[1];
    check_gemm<f16, float>(c, TcOptions{TcFamily::mma_sync, TcTile::small, 1}, seg::test::cuda_config_rr());
    check_gemm<bf16, bf16>(c, TcOptions{TcFamily::mma_sync, TcTile::small, 1}, seg::test::cuda_config_rr());
    check_gemm<float, float>(c, TcOptions{TcFamily::wmma, TcTile::small, 1}, seg::test::cuda_config_rr());
  }
}

TEST_CASE("gemm_tc: every schedule (round-robin, reverse, two random seeds, two workers)") {
  const Case c{40, 48, 70, false, true};
  check_gemm<f16, f16>(c, TcOptions{TcFamily::mma_sync, TcTile::small, 1}, seg::test::cuda_configs());
  check_gemm<bf16, float>(c, TcOptions{TcFamily::wmma, TcTile::small, 1}, seg::test::cuda_configs());
  check_gemm<float, float>(c, TcOptions{TcFamily::wmma, TcTile::small, 1}, seg::test::cuda_configs());
}

// TF32 rounds each factor to the nearest TF32 value (cvt.rna, as cuBLAS and PyTorch do), not by
// truncation, which is what the tensor cores do to a float's low bits on their own. Since
// 2026-12-07 the rounding happens once in shared memory (TileLoader::round_own_tf32), not per
// fragment: these inputs tell the two apart exactly. a = 1 + 3*2^-12 is 3/4 of a TF32 ulp (2^-10)
// above 1: rounds to 1 + 2^-10, truncates to 1. b = 1 - 2^-12 is half a TF32 ulp (2^-11) below 1:
// rounds (ties away from zero) to 1, truncates to 1 - 2^-11. Every sum of K = 40 products is then
// exactly 40 * (1 + 2^-10) rounded, 40 * (1 - 2^-11) truncated. Both families, both tiles (the
// loaders differ), every transpose, aligned and unaligned rows (the 16-byte and element-wise copies).
TEST_CASE("gemm_tc: TF32 rounds its factors to nearest, once, in every path") {
  const int M = 20, N = 24, K = 40;
  const float a = 1.0f + 3.0f * 0x1p-12f, b = 1.0f - 0x1p-12f;
  const float want = static_cast<float>(K) * (1.0f + 0x1p-10f);
  for (const TcFamily family : {TcFamily::mma_sync, TcFamily::wmma})
    for (const auto& t : kTransposes)
      for (const TcTile tile : {TcTile::small, TcTile::large})
        for (const int pad : {0, 1}) {
          if (seg::test::kSanitizerBuild && tile == TcTile::large) continue;
          const bool ta = t[0], tb = t[1];
          const int64_t lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad;
          const std::vector<float> A(static_cast<size_t>((ta ? K : M) * lda), a);
          const std::vector<float> B(static_cast<size_t>((tb ? N : K) * ldb), b);
          seg::test::DeviceBuffer<float> dA(A), dB(B), dC(static_cast<size_t>(M * N));
          seg::cuda::gemm_tc<float, float>(ta, tb, M, N, K, dA.get(), lda, dB.get(), ldb, dC.get(), N, nullptr,
                                           TcEpilogue{}, TcOptions{family, tile, 1}, TcWorkspace{}, nullptr);
          const auto got = dC.download();
          size_t wrong = 0;
          for (const float v : got) wrong += v != want;
          CHECK_MESSAGE(wrong == 0, (family == TcFamily::wmma ? "wmma" : "mma.sync")
                                        << " ta " << ta << " tb " << tb << (tile == TcTile::large ? " large" : " small")
                                        << " pad " << pad << ": " << wrong << " of " << got.size() << " differ from "
                                        << want << " (first " << got[0] << "; truncation would give "
                                        << static_cast<float>(K) * (1.0f - 0x1p-11f) << ")");
        }
}

TEST_CASE("gemm_tc: unaligned leading dimensions and C = 3 take the element-wise path") {
  for (const auto& tr : kTransposes) {
    // lda/ldb/ldc not multiples of 8 elements: rows are not 16-byte aligned.
    Case c{37, 29, 43, tr[0], tr[1], 3, 5, 1};
    check_gemm<f16, f16>(c, TcOptions{TcFamily::mma_sync, TcTile::small, 1}, seg::test::rr_and_random());
    check_gemm<float, float>(c, TcOptions{TcFamily::wmma, TcTile::small, 1}, seg::test::rr_and_random());
    // K = 3 (a first convolution's channels) and N = 3.
    Case d{50, 3, 3, tr[0], tr[1]};
    check_gemm<bf16, bf16>(d, TcOptions{TcFamily::mma_sync, TcTile::small, 1}, seg::test::rr_and_random());
  }
}

TEST_CASE("gemm_tc: fused epilogue (alpha, beta, bias, ReLU, ReLU6, output cast)") {
  for (const TcActivation act : {TcActivation::none, TcActivation::relu, TcActivation::relu6}) {
    Case c{33, 40, 48, false, true};
    c.ep = TcEpilogue{0.5f, 1.0f, act};
    c.bias = true;
    check_gemm<f16, f16>(c, TcOptions{TcFamily::mma_sync, TcTile::small, 1}, seg::test::rr_and_random());
    check_gemm<bf16, float>(c, TcOptions{TcFamily::wmma, TcTile::small, 1}, seg::test::rr_and_random());
    c.ep = TcEpilogue{-1.0f, -0.5f, act};
    check_gemm<float, float>(c, TcOptions{TcFamily::wmma, TcTile::small, 1}, seg::test::rr_and_random());
    check_gemm<f16, float>(c, TcOptions{TcFamily::mma_sync, TcTile::large, 1}, seg::test::rr_and_random());
  }
}

TEST_CASE("gemm_tc: K = 0 gives beta * C + bias; M or N = 0 writes nothing") {
  Case c{20, 24, 0, false, false};
  c.ep = TcEpilogue{1.0f, 1.0f, TcActivation::none};
  c.bias = true;
  check_gemm<f16, f16>(c, TcOptions{TcFamily::mma_sync, TcTile::small, 1}, seg::test::cuda_config_rr());
  check_gemm<float, float>(c, TcOptions{TcFamily::wmma, TcTile::small, 1}, seg::test::cuda_config_rr());
  Case empty{0, 24, 16, false, false};
  check_gemm<f16, f16>(empty, TcOptions{}, seg::test::cuda_config_rr());
}

TEST_CASE("gemm_tc: split-K adds the partial sums in a fixed order") {
  // Thin and deep, as backward-weight GEMMs are: 1 output tile, 40 K tiles.
  Case c{48, 40, 1270, true, false};
  c.ep = TcEpilogue{1.0f, 0.5f, TcActivation::relu};
  c.bias = true;
  for (const int s : {2, 7, 40}) {
    if (seg::test::kSanitizerBuild && s != 7) continue;
    check_gemm<f16, float>(c, TcOptions{TcFamily::mma_sync, TcTile::small, s}, seg::test::rr_and_random());
    check_gemm<bf16, bf16>(c, TcOptions{TcFamily::mma_sync, TcTile::large, s}, seg::test::cuda_config_rr());
    check_gemm<float, float>(c, TcOptions{TcFamily::wmma, TcTile::small, s}, seg::test::cuda_config_rr());
  }
  // split_k = 0 chooses by shape (split_k_auto, the test case below): one 64x64 tile leaves the
  // simulated 132 SMs idle, so with a K of a backward weight's depth it splits; 1270 is too shallow
  // (under two splits of kSplitMinDepth); 2048^2 has enough tiles.
  CHECK(seg::cuda::gemm_tc_splits<f16>(48, 40, 32768, TcOptions{}) == 32);
  CHECK(seg::cuda::gemm_tc_splits<f16>(48, 40, 1270, TcOptions{}) == 1);
  CHECK(seg::cuda::gemm_tc_splits<f16>(2048, 2048, 32768, TcOptions{}) == 1);
  check_gemm<f16, f16>(c, TcOptions{}, seg::test::cuda_config_rr());

  // The same inputs give the same bits on every run and under every schedule.
  Case r = c;
  r.integer = false;
  std::vector<f16> first;
  for (const auto& cfg : seg::test::kSanitizerBuild ? seg::test::cuda_config_rr() : seg::test::cuda_configs()) {
    seg::test::ScopedConfig scoped(cfg);
    const auto A = seg::test::tc_inputs<f16>(static_cast<size_t>(r.K * r.M), 5, false);
    const auto B = seg::test::tc_inputs<f16>(static_cast<size_t>(r.K * r.N), 6, false);
    seg::test::DeviceBuffer<f16> dA(A), dB(B), dC(static_cast<size_t>(r.M * r.N));
    const TcOptions o{TcFamily::mma_sync, TcTile::small, 9};
    const size_t bytes = seg::cuda::gemm_tc_workspace_bytes<f16>(r.M, r.N, r.K, o);
    seg::test::DeviceBuffer<unsigned char> ws(bytes);
    seg::cuda::gemm_tc<f16, f16>(true, false, r.M, r.N, r.K, dA.get(), r.M, dB.get(), r.N, dC.get(), r.N, nullptr,
                                 TcEpilogue{}, o, TcWorkspace{ws.get(), bytes}, nullptr);
    const auto got = dC.download();
    if (first.empty()) first = got;
    bool same = true;
    for (size_t i = 0; i < got.size(); ++i) same = same && got[i].bits == first[i].bits;
    CHECK_MESSAGE(same, "split-K result differs under " << cfg.name);
  }
}

TEST_CASE("split_k_auto: enough warps per SM, spread evenly, within the depth") {
  using seg::cuda::split_k_auto;
  // The backward-weight GEMMs of ResNet50dilated at 512x512, batch 8 (K = 32768 pixels), on 132 SMs
  // (docs/tensor-cores.md, "Split-K by warps per SM"). Large tile: 8 warps a block, small: 4.
  CHECK(split_k_auto(144, 32768, 132, 8) == 4);   // 3x3 512->512, 128x128: 576 blocks (rule before: 1)
  CHECK(split_k_auto(144, 32768, 132, 4) == 8);   // 3x3 256->256, 64x64: 1152 blocks (before: 1)
  CHECK(split_k_auto(32, 32768, 132, 4) == 20);   // 1x1 512->256: 640 blocks, 5 per SM (before: 5)
  CHECK(split_k_auto(512, 32768, 132, 4) == 1);   // 1x1 1024->2048: 512 blocks are 3/4 of 528 or more
  CHECK(split_k_auto(2, 131072, 132, 4) == 128);  // at most K / kSplitMinDepth (layer1 1x1 128->64)
  CHECK(split_k_auto(1, int64_t{1} << 20, 132, 4) == 256);  // at most kSplitMax
  CHECK(split_k_auto(9, 4096, 132, 4) == 4);      // at most K / kSplitMinDepth
  CHECK(split_k_auto(9, 2047, 132, 4) == 1);      // under two splits deep: none
  CHECK(split_k_auto(0, 32768, 132, 4) == 1);
  // Over a sweep, the rule's promises: within [1, kSplitMax] and K / kSplitMinDepth; no split when
  // the tiles give 3/4 of the warps; otherwise the warps are reached unless the depth caps it, and
  // no count in the searched range spreads the blocks more evenly.
  for (const int sms : {1, 7, 108, 132})
    for (const int warps : {4, 8})
      for (int64_t tiles = 1; tiles <= 700; tiles += (tiles < 40 ? 1 : 13))
        for (const int64_t K : {int64_t{1000}, int64_t{3000}, int64_t{40000}}) {
          const int s = split_k_auto(tiles, K, sms, warps);
          CAPTURE(sms);
          CAPTURE(warps);
          CAPTURE(tiles);
          CAPTURE(K);
          const int64_t want = (int64_t{sms} * seg::cuda::kSplitWarpsPerSm + warps - 1) / warps;
          const int64_t most = std::min<int64_t>(seg::cuda::kSplitMax, K / seg::cuda::kSplitMinDepth);
          REQUIRE(s >= 1);
          if (s > 1) REQUIRE(s <= most);
          if (4 * tiles >= 3 * want || most < 2) {
            REQUIRE(s == 1);
            continue;
          }
          REQUIRE((tiles * s >= want || s == most));
          // The searched range: from the fewest splits that reach the warps (at least 2) to twice that.
          const int64_t first = std::clamp<int64_t>((want + tiles - 1) / tiles, 2, most);
          REQUIRE(s >= first);
          REQUIRE(s <= std::min<int64_t>(most, 2 * first));
          const auto evenness = [&](int64_t c) {
            return static_cast<double>(tiles * c) / static_cast<double>((tiles * c + sms - 1) / sms * sms);
          };
          for (int64_t c = first; c <= std::min<int64_t>(most, 2 * first); ++c) {
            REQUIRE(evenness(c) <= evenness(s) + 1e-9);
            if (c < s) REQUIRE(evenness(c) < evenness(s) - 1e-9);  // the smallest of equals
          }
        }
}

TEST_CASE("gemm_tc: without workspace it does not split, and gives the same results") {
  // K = 4096: deep enough for split_k_auto to want 4 splits of one 64x64 tile.
  Case c{48, 40, 4096, true, false};
  seg::test::DeviceBuffer<f16> dummy(1);
  check_gemm<f16, float>(c, TcOptions{TcFamily::mma_sync, TcTile::small, 0}, seg::test::cuda_config_rr());
  CHECK(seg::cuda::gemm_tc_splits<f16>(48, 40, 4096, TcOptions{}) == 4);
  CHECK(seg::cuda::gemm_tc_workspace_bytes<f16>(48, 40, 4096, TcOptions{}) == size_t{4} * 48 * 40 * 4);
}

TEST_CASE("gemm_tc: bad arguments are clear errors") {
  seg::test::DeviceBuffer<float> a(64), c(64);
  auto call = [&](int64_t M, int64_t N, int64_t K, int64_t lda, int64_t ldb, int64_t ldc, TcFamily f) {
    seg::cuda::gemm_tc<float, float>(false, false, M, N, K, a.get(), lda, a.get(), ldb, c.get(), ldc, nullptr,
                                     TcEpilogue{}, TcOptions{f, TcTile::automatic, 0}, TcWorkspace{}, nullptr);
  };
  CHECK_THROWS_WITH_AS(call(-1, 4, 4, 4, 4, 4, TcFamily::automatic), doctest::Contains("negative size"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(call(4, 4, 8, 4, 4, 4, TcFamily::automatic), doctest::Contains("lda=4"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(call(4, 8, 4, 4, 4, 8, TcFamily::automatic), doctest::Contains("ldb=4"), std::invalid_argument);
}
