// Exact semantics of the simulated intrinsics, against values derived from the CUDA programming
// guide (shuffle lane rules with width, votes, barriers with predicates, match/reduce, atomics,
// math and bit intrinsics).
#include <cuda_fp16.h>

#include <climits>
#include <cmath>

#include "tests/sim/sim_test_kernels.h"
#include "tests/sim/sim_test_util.h"

using simtest::DeviceBuffer;

namespace {

int lane_value(int tid) { return 1000 + 10 * tid; }

// Source lane per the CUDA programming guide's description of each shuffle, for `lane` of a warp.
int shuffle_source(simtest::ShuffleKind kind, int lane, int arg, int width) {
  const int group = lane / width, in_group = lane % width;
  switch (kind) {
    case simtest::ShuffleKind::idx:
      return group * width + ((arg + lane) % width);
    case simtest::ShuffleKind::up:
      return in_group >= arg ? lane - arg : lane;
    case simtest::ShuffleKind::down:
      return in_group + arg < width ? lane + arg : lane;
    case simtest::ShuffleKind::bfly: {
      const int src = lane ^ arg;
      return src / width > group ? lane : src;  // later groups are out of reach: own value
    }
  }
  return -1;
}

}  // namespace

TEST_CASE("sim: shuffles follow CUDA's lane rules for every width, offset and lane") {
  const int threads = 64;
  DeviceBuffer<int> out(threads);
  for (const auto kind :
       {simtest::ShuffleKind::idx, simtest::ShuffleKind::up, simtest::ShuffleKind::down, simtest::ShuffleKind::bfly})
    for (const int width : {32, 16, 8, 4, 2, 1})
      for (const int arg : {1, 3, 6, 17}) {
        CAPTURE(static_cast<int>(kind));
        CAPTURE(width);
        CAPTURE(arg);
        simtest::shuffle_probe(out.get(), threads, kind, arg, width);
        const std::vector<int> got = out.download();
        size_t bad = 0;
        for (int tid = 0; tid < threads; ++tid) {
          const int warp = tid / 32, lane = tid % 32;
          bad += got[tid] != lane_value(warp * 32 + shuffle_source(kind, lane, arg, width));
        }
        CHECK(bad == 0);
      }
}

TEST_CASE("sim: shuffles move 8-byte and 2-byte types") {
  const int threads = 32;
  DeviceBuffer<double> d(threads);
  DeviceBuffer<__half> h(threads);
  simtest::shuffle_types_probe(d.get(), h.get(), threads);
  const auto dv = d.download();
  const auto hv = h.download();
  for (int t = 0; t < threads; ++t) {
    CHECK(dv[t] == 0.5 + (t ^ 1));
    CHECK(__half2float(hv[t]) == static_cast<float>(t + 2 < 32 ? t + 2 : t));
  }
}

TEST_CASE("sim: votes with full and partial masks") {
  const int threads = 64;
  DeviceBuffer<unsigned> out(6 * threads);
  simtest::vote_probe(out.get(), threads);
  const auto o = out.download();
  for (int tid = 0; tid < threads; ++tid) {
    CAPTURE(tid);
    const int warp = tid / 32, lane = tid % 32;
    unsigned ballot = 0;
    for (int l = 0; l < 32; ++l)
      if ((warp * 32 + l) % 3 == 0) ballot |= 1u << l;
    CHECK(o[6 * tid + 0] == ballot);
    CHECK(o[6 * tid + 1] == 1u);
    CHECK(o[6 * tid + 2] == 1u);
    CHECK(o[6 * tid + 3] == 0u);
    CHECK(o[6 * tid + 4] == (lane < 16 ? 0x0000AAAAu : 0xAAAA0000u));
    CHECK(o[6 * tid + 5] == (lane < 16 ? 1u : 0u));
  }
}

TEST_CASE("sim: __syncthreads_count, _and and _or") {
  for (const int threads : {32, 100, 1024}) {
    DeviceBuffer<int> out(3 * threads);
    simtest::syncthreads_probe(out.get(), threads);
    const auto o = out.download();
    const int count = (threads + 4) / 5;
    size_t bad = 0;
    for (int t = 0; t < threads; ++t) bad += o[3 * t] != count || o[3 * t + 1] != 1 || o[3 * t + 2] != (threads > 17);
    CHECK(bad == 0);
  }
}

TEST_CASE("sim: __match_*_sync and __reduce_*_sync") {
  const int threads = 64;
  DeviceBuffer<unsigned> out(10 * threads);
  simtest::match_reduce_probe(out.get(), threads);
  const auto o = out.download();
  for (int tid = 0; tid < threads; ++tid) {
    CAPTURE(tid);
    const unsigned lane = tid % 32;
    const unsigned* r = &o[10 * tid];
    CHECK(r[0] == 0xFu << (4 * (lane / 4)));
    CHECK(r[1] == 0xFFFFFFFFu);
    CHECK(r[2] == 1u);
    CHECK(r[3] == 0u);
    CHECK(r[4] == 0u);
    CHECK(r[5] == 496u);
    CHECK(static_cast<int>(r[6]) == -16);
    CHECK(r[7] == 93u);
    CHECK(r[8] == 0xFFFFFFFFu);
    CHECK(r[9] == 0u);
  }
}

TEST_CASE("sim: atomics across blocks give exact results") {
  const int blocks = 4, threads = 96, g = blocks * threads;
  DeviceBuffer<int> ints(std::vector<int>{0, 0, -1, 1, 0, -1, 0, 0});
  DeviceBuffer<unsigned> uints(std::vector<unsigned>{0, 0, 0});
  DeviceBuffer<unsigned long long> ulls(std::vector<unsigned long long>{0, 0});
  DeviceBuffer<float> floats(std::vector<float>{0, 0});
  DeviceBuffer<double> doubles(std::vector<double>{0});
  DeviceBuffer<__half> halves(std::vector<__half>{__float2half(0.0f)});
  seg::sim::ScopedOptions two_workers(simtest::with_schedule(seg::sim::Schedule::random, 3, 2));
  simtest::atomics_probe(ints.get(), uints.get(), ulls.get(), floats.get(), doubles.get(), halves.get(), blocks,
                         threads);
  const auto i = ints.download();
  int xor_all = 0;
  for (int k = 0; k < g; ++k) xor_all ^= k;
  CHECK(i[0] == 2 * g);
  CHECK(i[1] == -g);
  CHECK(i[2] == g - 1);
  CHECK(i[3] == -(g - 1));
  CHECK(i[4] == g);
  CHECK(i[5] == INT_MIN);
  CHECK(i[6] == INT_MAX);
  CHECK(i[7] == xor_all);
  const auto u = uints.download();
  CHECK(u[0] == static_cast<unsigned>(g % 10));
  CHECK(u[1] == static_cast<unsigned>((10 - g % 10) % 10));
  CHECK(u[2] == 1u);
  const auto l = ulls.download();
  CHECK(l[0] == static_cast<unsigned long long>(g) << 33);
  CHECK(l[1] == 1ull);
  const auto f = floats.download();
  CHECK(f[0] == 0.25f * g);
  CHECK(f[1] == 3.0f);
  CHECK(doubles.download()[0] == 0.5 * g);
  CHECK(__half2float(halves.download()[0]) == static_cast<float>(g));
}

TEST_CASE("sim: __activemask is the set of lanes that have not exited when it is called") {
  // Fibers do not model which lanes the hardware groups together, so the result depends on the
  // schedule (documented in warp.h): round-robin runs lanes 0-19 before lanes 20-31 return, the
  // reverse schedule after. __syncwarp with either mask completes (exited lanes are not waited for).
  const int threads = 32;
  DeviceBuffer<unsigned> out(threads);
  for (const auto schedule : {seg::sim::Schedule::round_robin, seg::sim::Schedule::reverse}) {
    seg::sim::ScopedOptions scoped(simtest::with_schedule(schedule));
    out.fill_bytes(0);
    simtest::activemask_probe(out.get(), threads, 20);
    const auto o = out.download();
    const unsigned want = schedule == seg::sim::Schedule::reverse ? 0x000FFFFFu : 0xFFFFFFFFu;
    for (int t = 0; t < threads; ++t) CHECK(o[t] == (t < 20 ? want : 0u));
  }
}

TEST_CASE("sim: math and bit intrinsics") {
  DeviceBuffer<float> f(8);
  DeviceBuffer<int> i(16);
  DeviceBuffer<unsigned> u(8);
  simtest::math_probe(f.get(), i.get(), u.get());
  const auto fv = f.download();
  CHECK(fv[0] == 1.0f);
  CHECK(fv[1] == 0.0f);
  CHECK(fv[2] == 0.0f);
  CHECK(fv[3] == 0.0f);
  CHECK(fv[4] == 2.0f);
  CHECK(fv[5] == std::ldexp(1.0f, -20));  // fused: one rounding
  CHECK(fv[6] == -3.0f);
  CHECK(fv[7] == 2.0f);
  const auto iv = i.download();
  const int want_i[16] = {2, 4, -2, -2, -3, 3, INT_MAX, 0, 16, 31, 32, 5, 0, -1, -4, 3};
  for (int k = 0; k < 16; ++k) {
    CAPTURE(k);
    CHECK(iv[k] == want_i[k]);
  }
  const auto uv = u.download();
  const unsigned want_u[8] = {0x80000000u, 0x55114400u, 3u, 0x80000001u, 0xFFFFFFFEu, 0x3F800000u, 40u, 0x12345678u};
  for (int k = 0; k < 8; ++k) {
    CAPTURE(k);
    CHECK(uv[k] == want_u[k]);
  }
}
