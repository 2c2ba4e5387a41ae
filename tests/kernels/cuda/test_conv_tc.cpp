// The implicit-GEMM tensor-core convolutions (kernels/cuda/conv2d_tc.h) against the CPU reference
// (kernels/cpu/conv2d.h, conv2d_*_ref<double>) on the same rounded inputs: forward (bias, ReLU),
// backward data, backward weight (+ bias gradient, split-K); 1x1, 3x3 dense, dilated, strided,
// grouped, C = 3, 150 outputs, channel-slice views whose pixels are not 16-byte aligned; f16, bf16,
// f32 (TF32). Every element of every output is compared, and around a channel-slice view every
// element outside it must be left untouched; integer-valued inputs compare exactly,
// real-valued ones within the f32 accumulation bound (tc_test_util.h), the bound's sum |a||b|
// being the reference convolution of |x| and |w|.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cpu/conv2d.h"
#include "kernels/cuda/conv2d_tc.h"
#include "tests/kernels/cuda/tc_test_util.h"

using seg::bf16;
using seg::ConvShape;
using seg::f16;
using seg::cuda::ConvTcArgs;
using seg::cuda::TcActivation;
using seg::cuda::TcFamily;
using seg::cuda::TcOptions;
using seg::cuda::TcTile;
using seg::cuda::TcWorkspace;

namespace {

struct ConvCase {
  const char* what;
  ConvShape s;
  int extra_x = 0, extra_y = 0;  // pixel stride = C + extra_x (resp. O + extra_y): a channel slice
  int offset = 0;                // x/dx and y/dy start this many elements into their buffers
};

ConvShape shape(int64_t N, int64_t H, int64_t W, int64_t C, int64_t O, int64_t K, int64_t stride, int64_t pad,
                int64_t dil, int64_t groups = 1) {
  ConvShape s;
  s.N = N;
  s.H = H;
  s.W = W;
  s.C = C;
  s.O = O;
  s.KH = s.KW = K;
  s.stride_h = s.stride_w = stride;
  s.pad_h = s.pad_w = pad;
  s.dil_h = s.dil_w = dil;
  s.groups = groups;
  return s;
}

// Rows and columns that differ in every parameter, so that an h/w mix-up shows: KH 3, KW 2,
// stride 2 x 1, dilation 1 x 2, padding 1 x 1.
ConvShape asymmetric(ConvShape s) {
  s.KH = 3;
  s.KW = 2;
  s.stride_h = 2;
  s.stride_w = 1;
  s.dil_h = 1;
  s.dil_w = 2;
  s.pad_h = s.pad_w = 1;
  return s;
}

template <class T>
std::vector<double> tc_values(const std::vector<T>& v) {
  std::vector<double> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = seg::test::tc_value(v[i]);
  return out;
}
std::vector<double> abs_of(std::vector<double> v) {
  for (double& x : v) x = std::abs(x);
  return v;
}

// Dense [pixels, ch] -> a buffer with `ld` elements per pixel starting at `offset` (the rest NaN-free
// filler that must not be read into results: 7s).
template <class T>
std::vector<T> spread(const std::vector<T>& dense, int64_t pixels, int64_t ch, int64_t ld, int offset) {
  std::vector<T> out(static_cast<size_t>(offset + pixels * ld), seg::test::to_storage<T>(7.0f));
  for (int64_t p = 0; p < pixels; ++p)
    for (int64_t c = 0; c < ch; ++c) out[static_cast<size_t>(offset + p * ld + c)] = dense[static_cast<size_t>(p * ch + c)];
  return out;
}
template <class T>
std::vector<T> gather(const std::vector<T>& buf, int64_t pixels, int64_t ch, int64_t ld, int offset) {
  std::vector<T> out(static_cast<size_t>(pixels * ch));
  for (int64_t p = 0; p < pixels; ++p)
    for (int64_t c = 0; c < ch; ++c) out[static_cast<size_t>(p * ch + c)] = buf[static_cast<size_t>(offset + p * ld + c)];
  return out;
}

// How many elements of a view's buffer outside the view (the first `offset` elements, and channels
// ch..ld-1 of every pixel) no longer hold the 0xFF bytes a fresh DeviceBuffer starts with. The
// filler stands for the neighbouring channel slices of a concat: a kernel must never write it.
template <class T>
int64_t filler_written(const std::vector<T>& buf, int64_t pixels, int64_t ch, int64_t ld, int offset) {
  auto untouched = [](const T& v) {
    unsigned char bytes[sizeof(T)];
    std::memcpy(bytes, &v, sizeof(T));
    for (unsigned char b : bytes)
      if (b != 0xFF) return false;
    return true;
  };
  int64_t written = 0;
  for (int i = 0; i < offset; ++i) written += untouched(buf[static_cast<size_t>(i)]) ? 0 : 1;
  for (int64_t p = 0; p < pixels; ++p)
    for (int64_t c = ch; c < ld; ++c) written += untouched(buf[static_cast<size_t>(offset + p * ld + c)]) ? 0 : 1;
  return written;
}

template <class T>
std::vector<double> want_of(const std::vector<double>& ref, bool integer) {
  std::vector<double> w(ref.size());
  for (size_t i = 0; i < ref.size(); ++i) w[i] = integer ? seg::test::round_to<T>(ref[i]) : ref[i];
  return w;
}

double max_of(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, x);
  return m;
}

template <class T>
seg::test::Tolerance tolerance(bool integer, int64_t depth, const std::vector<double>& abs_ref) {
  if (integer) return {0, 0};
  return seg::test::tc_tolerance<T>(false, static_cast<int>(depth), std::vector<double>{max_of(abs_ref)});
}

template <class T>
void check_conv(const ConvCase& cc, bool integer, TcOptions opt, const std::vector<seg::test::CudaConfig>& configs,
                TcActivation act = TcActivation::none, bool stride_phases = true) {
  const ConvShape& s = cc.s;
  const int64_t P = s.N * s.Ho() * s.Wo(), NHW = s.N * s.H * s.W;
  const int64_t ldx = s.C + cc.extra_x, ldy = s.O + cc.extra_y;
  const auto x = seg::test::tc_inputs<T>(static_cast<size_t>(s.x_numel()), 3 + s.C, integer, -2, 2);
  const auto w = seg::test::tc_inputs<T>(static_cast<size_t>(s.w_numel()), 5 + s.O, integer, -2, 2);
  const auto b = seg::test::tc_inputs<T>(static_cast<size_t>(s.O), 7, true, -3, 3);
  const auto dy = seg::test::tc_inputs<T>(static_cast<size_t>(s.y_numel()), 9 + s.H, integer, -2, 2);
  const std::vector<double> xd = tc_values(x), wd = tc_values(w), dyd = tc_values(dy);
  std::vector<double> bd(b.size());
  for (size_t i = 0; i < b.size(); ++i) bd[i] = static_cast<float>(b[i]);

  // References: y = act(conv(x, w) + b); dx, dw, db; and the |.| versions for the tolerances.
  std::vector<double> y(static_cast<size_t>(s.y_numel())), dx(static_cast<size_t>(s.x_numel())),
      dw(static_cast<size_t>(s.w_numel())), db(static_cast<size_t>(s.O));
  seg::cpu::conv2d_forward_ref<double>(s, xd.data(), wd.data(), bd.data(), y.data());
  for (double& v : y) {
    if (act != TcActivation::none && v < 0) v = 0;
    if (act == TcActivation::relu6 && v > 6) v = 6;
  }
  seg::cpu::conv2d_backward_ref<double>(s, xd.data(), wd.data(), dyd.data(), dx.data(), dw.data(), nullptr);
  // The bias gradient is a plain f32 sum of dy (no tensor cores, so no TF32 rounding of float dy).
  for (int64_t p = 0; p < s.y_numel() / s.O; ++p)
    for (int64_t o = 0; o < s.O; ++o) db[static_cast<size_t>(o)] += static_cast<float>(dy[static_cast<size_t>(p * s.O + o)]);
  std::vector<double> ya(y.size()), dxa(dx.size()), dwa(dw.size()), dba(db.size());
  const auto xa = abs_of(xd), wa = abs_of(wd), dya = abs_of(dyd);
  seg::cpu::conv2d_forward_ref<double>(s, xa.data(), wa.data(), nullptr, ya.data());
  seg::cpu::conv2d_backward_ref<double>(s, xa.data(), wa.data(), dya.data(), dxa.data(), dwa.data(), dba.data());
  const int64_t taps = s.KH * s.KW;

  // Device buffers: x and dy as (possibly offset, strided) views; dx and y likewise.
  seg::test::DeviceBuffer<T> dx_in(spread(x, NHW, s.C, ldx, cc.offset)), dw_in(w), db_in(b),
      ddy_in(spread(dy, P, s.O, ldy, cc.offset));
  ConvTcArgs args;
  args.options = opt;
  args.ldx = ldx;
  args.ldy = ldy;
  args.act = act;
  args.stride_phases = stride_phases;
  // With a forced split, enough workspace for the forward and backward-data GEMMs to split too
  // (the product splits backward weight only): every source then starts a split mid-K.
  const size_t split_bytes = opt.split_k > 1 ? static_cast<size_t>(opt.split_k) * 4 * std::max(P * s.O, NHW * s.C) : 0;
  const size_t ws_bytes = std::max(seg::cuda::conv2d_backward_weight_tc_workspace_bytes<T>(s, opt), split_bytes);
  seg::test::DeviceBuffer<unsigned char> ws(ws_bytes);
  if (opt.split_k > 1) args.workspace = TcWorkspace{ws.get(), ws_bytes};
  const T* xv = dx_in.get() + cc.offset;
  const T* dyv = ddy_in.get() + cc.offset;
  const std::string name = std::string(cc.what) + (integer ? " (integer)" : " (real)") + " family " +
                           seg::cuda::tc_family_name(opt.family) + " tile " +
                           std::to_string(static_cast<int>(opt.tile)) + " split " + std::to_string(opt.split_k) +
                           (stride_phases ? "" : " (no stride phases)");
  for (const auto& cfg : configs) {
    seg::test::ScopedConfig scoped(cfg);
    // forward
    seg::test::DeviceBuffer<T> yb(static_cast<size_t>(cc.offset + P * ldy));
    seg::cuda::conv2d_forward_tc<T>(s, xv, dw_in.get(), db_in.get(), yb.get() + cc.offset, nullptr, args);
    const auto y_buf = yb.download();
    const auto cy = seg::test::compare(gather(y_buf, P, s.O, ldy, cc.offset), want_of<T>(y, integer),
                                       tolerance<T>(integer, taps * s.Cg(), ya));
    CHECK_MESSAGE(cy.ok(), name << " forward [" << cfg.name << "]: " << cy.str());
    const int64_t y_stray = filler_written(y_buf, P, s.O, ldy, cc.offset);
    CHECK_MESSAGE(y_stray == 0, name << " forward [" << cfg.name << "]: " << y_stray
                                     << " elements outside the output view were written");
    // backward data
    seg::test::DeviceBuffer<T> dxb(static_cast<size_t>(cc.offset + NHW * ldx));
    seg::cuda::conv2d_backward_data_tc<T>(s, dw_in.get(), dyv, dxb.get() + cc.offset, nullptr, args);
    const auto dx_buf = dxb.download();
    const auto cdx = seg::test::compare(gather(dx_buf, NHW, s.C, ldx, cc.offset), want_of<T>(dx, integer),
                                        tolerance<T>(integer, taps * s.Og(), dxa));
    CHECK_MESSAGE(cdx.ok(), name << " backward data [" << cfg.name << "]: " << cdx.str());
    const int64_t dx_stray = filler_written(dx_buf, NHW, s.C, ldx, cc.offset);
    CHECK_MESSAGE(dx_stray == 0, name << " backward data [" << cfg.name << "]: " << dx_stray
                                      << " elements outside the output view were written");
    // backward weight and bias
    seg::test::DeviceBuffer<T> dwb(static_cast<size_t>(s.w_numel())), dbb(static_cast<size_t>(s.O));
    ConvTcArgs wargs = args;
    wargs.workspace = TcWorkspace{ws.get(), ws_bytes};
    seg::cuda::conv2d_backward_weight_tc<T>(s, xv, dyv, dwb.get(), dbb.get(), nullptr, wargs);
    const auto cdw = seg::test::compare(dwb.download(), want_of<T>(dw, integer), tolerance<T>(integer, P, dwa));
    CHECK_MESSAGE(cdw.ok(), name << " backward weight [" << cfg.name << "]: " << cdw.str());
    const auto cdb = seg::test::compare(dbb.download(), want_of<T>(db, integer), tolerance<T>(integer, P, dba));
    CHECK_MESSAGE(cdb.ok(), name << " bias gradient [" << cfg.name << "]: " << cdb.str());
  }
}

// Small versions of the models' convolutions (the simulator runs every thread on the CPU).
const ConvCase kCases[] = {
    {"1x1 16->24", shape(2, 5, 7, 16, 24, 1, 1, 0, 1)},
    {"1x1 12->20 (channels not a multiple of 8)", shape(2, 4, 5, 12, 20, 1, 1, 0, 1)},
    {"3x3 dense 16->16 pad 1", shape(2, 6, 5, 16, 16, 3, 1, 1, 1)},
    {"3x3 dilated 2 pad 2, 8->24", shape(1, 9, 8, 8, 24, 3, 1, 2, 2)},
    {"3x3 dilated 4 pad 4, 16->8 (the trunk's last stage)", shape(1, 10, 9, 16, 8, 3, 1, 4, 4)},
    {"3x3 stride 2 pad 1, 16->8", shape(2, 9, 7, 16, 8, 3, 2, 1, 1)},
    {"first conv 3x3 stride 2, C = 3", shape(1, 11, 10, 3, 16, 3, 2, 1, 1)},
    {"1x1 classifier 32->150", shape(1, 4, 6, 32, 150, 1, 1, 0, 1)},
    {"1x1 stride 2 downsample 16->32", shape(2, 7, 6, 16, 32, 1, 2, 0, 1)},
    {"3x3 grouped (2 groups) 16->32", shape(1, 6, 6, 16, 32, 3, 1, 1, 1, 2)},
    {"channel slices: pixel stride C+5, O+3, offset 3", shape(2, 5, 4, 16, 24, 3, 1, 1, 1), 5, 3, 3},
    {"channel slices: pixel stride C+8, O+8 (aligned slice)", shape(1, 5, 6, 16, 16, 3, 1, 1, 1), 8, 8, 8},
    // O = 18: the last 4-column chunk of each output row is partial, so an epilogue that stores whole
    // chunks would write into the next slice's channels (the filler check).
    {"channel slices: C = 10, O = 18 (partial chunks), pixel stride C+6, O+6, offset 2",
     shape(2, 4, 5, 10, 18, 3, 1, 1, 1), 6, 6, 2},
    // The sources' cursors (operand_source.h) step k = (kh, kw, channel) one K tile at a time, and
    // the output pixel (n, ho, wo) of backward weight likewise. These shapes make every carry happen:
    // 48 channels in and 40 out, so a 32-deep K tile starts mid-tap and the next one crosses a tap
    // (and, with 3 taps a row, a kernel row); a 40-wide output row that a K tile of pixels crosses
    // once; strides with dilation and padding, so backward data's row and column phases differ.
    {"3x3 48->40 (K tiles start mid-tap)", shape(1, 5, 6, 48, 40, 3, 1, 1, 1)},
    {"3x3 16->16 on a 3x40 image (a K tile of pixels crosses a row)", shape(1, 3, 40, 16, 16, 3, 1, 1, 1)},
    {"3x3 stride 2, dilation 2, pad 2, 16->16", shape(1, 9, 10, 16, 16, 3, 2, 2, 2)},
    {"3x2 kernel, stride 2x1, dilation 1x2, pad 1x1, 16->24", asymmetric(shape(2, 7, 6, 16, 24, 3, 1, 1, 1))},
    // Backward data of a strided convolution runs one GEMM per stride phase and writes that phase's
    // pixels of dx through a row grid, or fills them with zeros when no tap reaches them (the odd
    // rows and columns of a 1x1 stride 2; with dilation 2 and stride 2, every pixel of an odd phase):
    // on channel slices, where a grid step or the fill that ignored the pixel stride would show.
    {"1x1 stride 2 downsample on channel slices: pixel stride C+5, O+3, offset 3", shape(2, 7, 6, 16, 32, 1, 2, 0, 1), 5,
     3, 3},
    {"3x3 stride 2, 2 groups, on aligned channel slices: pixel stride C+8, O+8", shape(1, 9, 8, 16, 32, 3, 2, 1, 1, 2), 8,
     8, 8},
    {"3x3 stride 3, pad 1, 16->16 (three phases a dimension, one tap each)", shape(1, 10, 11, 16, 16, 3, 3, 1, 1)},
};

}  // namespace

TEST_CASE("conv2d_tc: every shape kind, f16 / bf16 / f32 (TF32), exact on integer inputs") {
  int i = 0;
  for (const ConvCase& c : kCases) {
    check_conv<f16>(c, true, TcOptions{}, seg::test::rr_and_random());
    if (seg::test::kSanitizerBuild && i++ % 3) continue;  // sanitizers: bf16 and f32 on every third shape
    check_conv<bf16>(c, true, TcOptions{}, seg::test::cuda_config_rr());
    check_conv<float>(c, true, TcOptions{}, seg::test::cuda_config_rr());  // TF32 on mma.sync m16n8k8
    check_conv<float>(c, true, TcOptions{TcFamily::wmma}, seg::test::cuda_config_rr());
  }
}

TEST_CASE("conv2d_tc: real-valued inputs within the f32 accumulation bound") {
  for (const ConvCase& c : {kCases[2], kCases[3], kCases[6]}) {
    check_conv<f16>(c, false, TcOptions{}, seg::test::cuda_config_rr());
    check_conv<bf16>(c, false, TcOptions{}, seg::test::cuda_config_rr());
    check_conv<float>(c, false, TcOptions{}, seg::test::cuda_config_rr());
    check_conv<float>(c, false, TcOptions{TcFamily::wmma}, seg::test::cuda_config_rr());
  }
}

TEST_CASE("conv2d_tc: both tiles, forced split-K, every schedule") {
  const ConvCase c = kCases[2];
  for (const TcTile t : {TcTile::large, TcTile::small})
    for (const int split : {1, 3}) {
      if (seg::test::kSanitizerBuild && t == TcTile::large) continue;
      check_conv<f16>(c, true, TcOptions{TcFamily::automatic, t, split}, seg::test::rr_and_random());
    }
  const auto sweep = seg::test::kSanitizerBuild ? seg::test::rr_and_random() : seg::test::cuda_configs();
  check_conv<bf16>(kCases[5], true, TcOptions{TcFamily::automatic, TcTile::small, 2}, sweep);
  // Split-K with K tiles that start mid-tap: each split's cursors start from their own k.
  check_conv<f16>(kCases[13], true, TcOptions{TcFamily::automatic, TcTile::small, 3}, seg::test::rr_and_random());
  check_conv<float>(kCases[13], true, TcOptions{TcFamily::wmma, TcTile::small, 3}, seg::test::cuda_config_rr());
  check_conv<float>(kCases[3], true, TcOptions{TcFamily::wmma, TcTile::small, 2}, sweep);
}

// Backward weight's large-tile kernel runs its main loop in two parts (block_tile.h, InsideK_; its
// A, dy, copies K tiles inside K without the K bound). Its K is the pixel count: 2*12*10 = 240 is
// seven K tiles and a ragged eighth, 2*8*8 = 128 four whole ones; the shapes above have at most
// three tiles and never reach the first part. Split 3 starts each split's cursors mid-K.
TEST_CASE("conv2d_tc: backward weight's two-part main loop (large tile, many pixels)" *
          doctest::skip(seg::test::kSanitizerBuild)) {
  const ConvCase deep[] = {{"3x3 16->16 on 2x12x10 (240 pixels)", shape(2, 12, 10, 16, 16, 3, 1, 1, 1)},
                           {"1x1 16->24 on 2x8x8 (128 pixels)", shape(2, 8, 8, 16, 24, 1, 1, 0, 1)}};
  for (const ConvCase& c : deep)
    for (const int split : {1, 3}) {
      check_conv<f16>(c, true, TcOptions{TcFamily::automatic, TcTile::large, split}, seg::test::cuda_config_rr());
      check_conv<bf16>(c, true, TcOptions{TcFamily::automatic, TcTile::large, split}, seg::test::cuda_config_rr());
    }
}

// TF32's backward convolutions take their own large tile, BK 8 with 4 stages (device_launch.h,
// Tiles<float>::Backward), and forward the BK 16 one: every direction with the large tile, on
// shapes whose K runs through the 4-stage pipeline many times (240 pixels: 30 K tiles of backward
// weight; 9 taps x 16 channels: 18 of backward data), whole and split (a split starts mid-K).
TEST_CASE("conv2d_tc: TF32 with the large tiles (backward: BK 8, 4 stages)" * doctest::skip(seg::test::kSanitizerBuild)) {
  const ConvCase deep[] = {{"3x3 16->16 on 2x12x10 (240 pixels)", shape(2, 12, 10, 16, 16, 3, 1, 1, 1)},
                           {"3x3 stride 2 16->12 on 1x9x8", shape(1, 9, 8, 16, 12, 3, 2, 1, 1)}};
  for (const ConvCase& c : deep)
    for (const TcFamily f : {TcFamily::mma_sync, TcFamily::wmma})
      for (const int split : {1, 3}) {
        check_conv<float>(c, true, TcOptions{f, TcTile::large, split}, seg::test::cuda_config_rr());
        check_conv<float>(c, false, TcOptions{f, TcTile::large, split}, seg::test::cuda_config_rr());
      }
}

// ConvTcArgs::stride_phases = false is backward data as before 2026-12-07 (one GEMM over every pixel
// and tap; the kernel lab's v7): still exact on the strided shapes.
TEST_CASE("conv2d_tc: backward data without stride phases, strided shapes") {
  for (const ConvCase& c : kCases)
    if (c.s.stride_h > 1 || c.s.stride_w > 1)
      check_conv<f16>(c, true, TcOptions{}, seg::test::cuda_config_rr(), TcActivation::none, false);
}

TEST_CASE("conv2d_tc: forward with fused ReLU and ReLU6") {
  check_conv<f16>(kCases[0], true, TcOptions{}, seg::test::cuda_config_rr(), TcActivation::relu);
  check_conv<bf16>(kCases[2], true, TcOptions{}, seg::test::cuda_config_rr(), TcActivation::relu6);
}

TEST_CASE("conv2d_tc: bad shapes and the WMMA family for halves are clear errors") {
  seg::test::DeviceBuffer<f16> buf(4096);
  ConvShape s = shape(1, 4, 4, 8, 8, 3, 1, 1, 1);
  s.groups = 3;
  CHECK_THROWS_WITH_AS(seg::cuda::conv2d_forward_tc<f16>(s, buf.get(), buf.get(), nullptr, buf.get(), nullptr),
                       doctest::Contains("multiples of groups"), std::invalid_argument);
  s = shape(1, 4, 4, 8, 8, 3, 1, 0, 3);
  CHECK_THROWS_WITH_AS(seg::cuda::conv2d_forward_tc<f16>(s, buf.get(), buf.get(), nullptr, buf.get(), nullptr),
                       doctest::Contains("does not fit"), std::invalid_argument);
  s = shape(1, int64_t{1} << 27, 1, 8, 8, 1, 1, 0, 1);  // 2^27 rows of one pixel: P fits, the sentinel would not
  CHECK_THROWS_WITH_AS(seg::cuda::conv2d_forward_tc<f16>(s, buf.get(), buf.get(), nullptr, buf.get(), nullptr),
                       doctest::Contains("below 2^27"), std::invalid_argument);
  s = shape(1, 4, 4, 8, 8, 3, 1, 1, 1);
  ConvTcArgs a;
  a.ldx = 4;
  CHECK_THROWS_WITH_AS(seg::cuda::conv2d_forward_tc<f16>(s, buf.get(), buf.get(), nullptr, buf.get(), nullptr, a),
                       doctest::Contains("ldx=4"), std::invalid_argument);
  a = ConvTcArgs{};
  a.options.family = TcFamily::wmma;
  CHECK_THROWS_WITH_AS(seg::cuda::conv2d_forward_tc<f16>(s, buf.get(), buf.get(), nullptr, buf.get(), nullptr, a),
                       doctest::Contains("mma.sync family only"), std::invalid_argument);
  CHECK(seg::cuda::conv2d_tc_preferred(shape(1, 4, 4, 8, 8, 3, 1, 1, 1)));
  CHECK_FALSE(seg::cuda::conv2d_tc_preferred(shape(1, 4, 4, 8, 8, 3, 1, 1, 1, 8)));  // depthwise
}
