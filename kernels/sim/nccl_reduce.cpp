// The element arithmetic of the simulator's NCCL collectives, and the names used in its reports.
// Reductions run in rank order 0, 1, ..., n-1 so results are deterministic; real NCCL's ring and
// tree algorithms add in other orders, so its float results may differ in the last bits.
// float16 and bfloat16 are combined in float and rounded back (to nearest even) after each step,
// as a kernel that loads, adds in float and stores each partial result would. Integer sums and
// products wrap around (two's complement), as GPU integer arithmetic does.
#include <cmath>
#include <cstring>
#include <type_traits>

#include "kernels/sim/nccl_internal.h"

namespace seg::sim::detail::nccl {

namespace {

uint32_t bits_of(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  return x;
}
float float_of(uint32_t x) {
  float f;
  std::memcpy(&f, &x, sizeof f);
  return f;
}

uint16_t half_from_float(float f) {
  const uint32_t x = bits_of(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t a = x & 0x7fffffffu;
  if (a >= 0x7f800000u) return sign | (a > 0x7f800000u ? 0x7e00u : 0x7c00u);  // NaN, infinity
  if (a >= 0x477ff000u) return sign | 0x7c00u;  // 65520 and above round to infinity
  if (a < 0x38800000u) {
    // Below the smallest normal half (2^-14): a multiple of 2^-24. Scaling by 2^24 is exact, and
    // nearbyint rounds to nearest even (the default rounding mode); 1024 is the smallest normal.
    return sign | static_cast<uint16_t>(std::nearbyint(float_of(a) * 16777216.0f));
  }
  uint32_t h = ((a >> 23) - 112u) << 10 | (a & 0x7fffffu) >> 13;  // exponent rebiased 127 -> 15
  const uint32_t rest = a & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // a carry moves into the exponent
  return static_cast<uint16_t>(sign | h);
}

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0) {
    const float v = std::ldexp(static_cast<float>(m), -24);
    return sign ? -v : v;
  }
  if (e == 31) return float_of(sign | 0x7f800000u | m << 13);
  return float_of(sign | (e + 112u) << 23 | m << 13);
}

uint16_t bfloat16_from_float(float f) {
  const uint32_t x = bits_of(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}
float bfloat16_to_float(uint16_t b) { return float_of(static_cast<uint32_t>(b) << 16); }

// How a type is stored and in what it is computed.
template <class T>
struct Native {
  using Stored = T;
  using Math = T;
  static T load(T x) { return x; }
  static T store(T x) { return x; }
};
struct Half {
  using Stored = uint16_t;
  using Math = float;
  static float load(uint16_t x) { return half_to_float(x); }
  static uint16_t store(float x) { return half_from_float(x); }
};
struct BFloat16 {
  using Stored = uint16_t;
  using Math = float;
  static float load(uint16_t x) { return bfloat16_to_float(x); }
  static uint16_t store(float x) { return bfloat16_from_float(x); }
};

template <class M>
M combine(M a, M b, ncclRedOp_t op) {
  switch (op) {
    case ncclMax:
      return a < b ? b : a;
    case ncclMin:
      return b < a ? b : a;
    case ncclProd:
      if constexpr (std::is_integral_v<M>) {
        using U = std::make_unsigned_t<M>;
        return static_cast<M>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
      } else {
        return a * b;
      }
    default:  // sum, and avg's sum
      if constexpr (std::is_integral_v<M>) {
        using U = std::make_unsigned_t<M>;
        return static_cast<M>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
      } else {
        return a + b;
      }
  }
}

template <class Traits>
void reduce_as(const std::vector<const void*>& in, void* out, size_t count, ncclRedOp_t op) {
  using S = typename Traits::Stored;
  using M = typename Traits::Math;
  auto* o = static_cast<S*>(out);
  const size_t n = in.size();
  for (size_t i = 0; i < count; ++i) {
    S acc = static_cast<const S*>(in[0])[i];
    for (size_t r = 1; r < n; ++r)
      acc = Traits::store(combine<M>(Traits::load(acc), Traits::load(static_cast<const S*>(in[r])[i]), op));
    if (op == ncclAvg) acc = Traits::store(static_cast<M>(Traits::load(acc) / static_cast<M>(n)));
    o[i] = acc;
  }
}

}  // namespace

void reduce_in_rank_order(const std::vector<const void*>& in, void* out, size_t count, ncclDataType_t type,
                          ncclRedOp_t op) {
  switch (type) {
    case ncclInt8:
      return reduce_as<Native<int8_t>>(in, out, count, op);
    case ncclUint8:
      return reduce_as<Native<uint8_t>>(in, out, count, op);
    case ncclInt32:
      return reduce_as<Native<int32_t>>(in, out, count, op);
    case ncclUint32:
      return reduce_as<Native<uint32_t>>(in, out, count, op);
    case ncclInt64:
      return reduce_as<Native<int64_t>>(in, out, count, op);
    case ncclUint64:
      return reduce_as<Native<uint64_t>>(in, out, count, op);
    case ncclFloat16:
      return reduce_as<Half>(in, out, count, op);
    case ncclFloat32:
      return reduce_as<Native<float>>(in, out, count, op);
    case ncclFloat64:
      return reduce_as<Native<double>>(in, out, count, op);
    case ncclBfloat16:
      return reduce_as<BFloat16>(in, out, count, op);
    default:
      break;  // rejected at the call
  }
}

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::all_reduce:
      return "ncclAllReduce";
    case Kind::broadcast:
      return "ncclBroadcast";
    case Kind::reduce:
      return "ncclReduce";
    case Kind::reduce_scatter:
      return "ncclReduceScatter";
    case Kind::all_gather:
      return "ncclAllGather";
  }
  return "?";
}

const char* type_name(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
      return "int8";
    case ncclUint8:
      return "uint8";
    case ncclInt32:
      return "int32";
    case ncclUint32:
      return "uint32";
    case ncclInt64:
      return "int64";
    case ncclUint64:
      return "uint64";
    case ncclFloat16:
      return "float16";
    case ncclFloat32:
      return "float32";
    case ncclFloat64:
      return "float64";
    case ncclBfloat16:
      return "bfloat16";
    default:
      return "?";
  }
}

size_t type_size(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
    case ncclUint8:
      return 1;
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64:
      return 8;
    default:
      return 0;  // fp8 types and invalid values
  }
}

const char* op_name(ncclRedOp_t op) {
  switch (op) {
    case ncclSum:
      return "sum";
    case ncclProd:
      return "prod";
    case ncclMax:
      return "max";
    case ncclMin:
      return "min";
    case ncclAvg:
      return "avg";
    default:
      return "?";
  }
}

bool has_op(Kind kind) { return kind == Kind::all_reduce || kind == Kind::reduce || kind == Kind::reduce_scatter; }
bool has_root(Kind kind) { return kind == Kind::broadcast || kind == Kind::reduce; }

std::string call_text(const Call& c) {
  std::string text = std::string(kind_name(c.kind)) + "(count=" + std::to_string(c.count) + ", " + type_name(c.type);
  if (has_op(c.kind)) text += std::string(", ") + op_name(c.op);
  if (has_root(c.kind)) text += ", root=" + std::to_string(c.root);
  return text + ")";
}

size_t send_bytes(const Call& c, int rank, int nranks) {
  const size_t bytes = c.count * type_size(c.type);
  switch (c.kind) {
    case Kind::broadcast:
      return rank == c.root ? bytes : 0;
    case Kind::reduce_scatter:
      return bytes * static_cast<size_t>(nranks);
    default:
      return bytes;
  }
}

size_t recv_bytes(const Call& c, int rank, int nranks) {
  const size_t bytes = c.count * type_size(c.type);
  switch (c.kind) {
    case Kind::reduce:
      return rank == c.root ? bytes : 0;
    case Kind::all_gather:
      return bytes * static_cast<size_t>(nranks);
    default:
      return bytes;
  }
}

}  // namespace seg::sim::detail::nccl
