// The completion step of the warp intrinsics of warp.h: runs once per collective, on the lane that
// arrived last, and computes every participating lane's result.
#include <cstring>

#include "kernels/sim/warp.h"

namespace seg::sim::detail {

namespace {

bool takes_part(const WarpOpView& v, unsigned lane) { return v.participants >> lane & 1u; }

// Source lane of shfl.sync for `lane`, following the PTX ISA pseudo-code: c packs the clamp value
// (bits 0-4) and the segment mask (bits 8-12) that CUDA derives from `width`.
unsigned shuffle_source(ShuffleMode mode, unsigned lane, int b_operand, unsigned width) {
  const unsigned c = mode == ShuffleMode::up ? (32u - width) << 8 : ((32u - width) << 8) | 0x1Fu;
  const int segmask = static_cast<int>((c >> 8) & 0x1Fu);
  const int cval = static_cast<int>(c & 0x1Fu);
  const int l = static_cast<int>(lane);
  const int b = b_operand & 0x1F;
  const int max_lane = (l & segmask) | (cval & ~segmask);
  const int min_lane = l & segmask;
  int j = l;
  bool in_range = false;
  switch (mode) {
    case ShuffleMode::up:
      j = l - b;
      in_range = j >= max_lane;
      break;
    case ShuffleMode::down:
      j = l + b;
      in_range = j <= max_lane;
      break;
    case ShuffleMode::bfly:
      j = l ^ b;
      in_range = j <= max_lane;
      break;
    case ShuffleMode::idx:
      j = min_lane | (b & ~segmask);
      in_range = j <= max_lane;
      break;
  }
  return static_cast<unsigned>(in_range ? j : l);
}

}  // namespace

void shuffle_complete(WarpOpView& v) {
  const auto& u = *static_cast<const ShuffleUniform*>(v.uniform);
  for (unsigned l = 0; l < 32; ++l) {
    if (!takes_part(v, l)) continue;
    LaneArgs& me = *v.lanes[l];
    const unsigned src = shuffle_source(static_cast<ShuffleMode>(u.mode), l, static_cast<int>(me.arg), u.width);
    if (takes_part(v, src)) {
      std::memcpy(me.out, v.lanes[src]->in, u.bytes);
    } else {
      inactive_lane_read(v, l, src);
      std::memset(me.out, 0xFF, u.bytes);
    }
  }
}

void ballot_complete(WarpOpView& v) {
  unsigned ballot = 0;
  for (unsigned l = 0; l < 32; ++l)
    if (takes_part(v, l) && v.lanes[l]->arg) ballot |= 1u << l;
  for (unsigned l = 0; l < 32; ++l) {
    if (!takes_part(v, l)) continue;
    *static_cast<unsigned*>(v.lanes[l]->out) = ballot;
    v.lanes[l]->arg = v.participants;  // vote() derives any/all/uni from ballot and participants
  }
}

void match_any_complete(WarpOpView& v) {
  const uint16_t bytes = *static_cast<const uint16_t*>(v.uniform);
  for (unsigned l = 0; l < 32; ++l) {
    if (!takes_part(v, l)) continue;
    unsigned same = 0;
    for (unsigned k = 0; k < 32; ++k)
      if (takes_part(v, k) && std::memcmp(v.lanes[k]->in, v.lanes[l]->in, bytes) == 0) same |= 1u << k;
    *static_cast<unsigned*>(v.lanes[l]->out) = same;
  }
}

void match_all_complete(WarpOpView& v) {
  const uint16_t bytes = *static_cast<const uint16_t*>(v.uniform);
  const void* first = nullptr;
  bool all_equal = true;
  for (unsigned l = 0; l < 32; ++l) {
    if (!takes_part(v, l)) continue;
    if (!first)
      first = v.lanes[l]->in;
    else if (std::memcmp(first, v.lanes[l]->in, bytes) != 0)
      all_equal = false;
  }
  for (unsigned l = 0; l < 32; ++l) {
    if (!takes_part(v, l)) continue;
    *static_cast<unsigned*>(v.lanes[l]->out) = all_equal ? v.participants : 0u;
    v.lanes[l]->arg = all_equal;
  }
}

void reduce_complete(WarpOpView& v) {
  const auto& u = *static_cast<const ReduceUniform*>(v.uniform);
  const auto op = static_cast<ReduceOp>(u.op);
  bool first = true;
  uint32_t acc = 0;
  for (unsigned l = 0; l < 32; ++l) {
    if (!takes_part(v, l)) continue;
    uint32_t x;
    std::memcpy(&x, v.lanes[l]->in, 4);
    if (first) {
      acc = x;
      first = false;
      continue;
    }
    const auto sx = static_cast<int32_t>(x), sacc = static_cast<int32_t>(acc);
    switch (op) {
      case ReduceOp::add:
        acc += x;
        break;
      case ReduceOp::min:
        acc = u.is_signed ? static_cast<uint32_t>(sx < sacc ? sx : sacc) : (x < acc ? x : acc);
        break;
      case ReduceOp::max:
        acc = u.is_signed ? static_cast<uint32_t>(sx > sacc ? sx : sacc) : (x > acc ? x : acc);
        break;
      case ReduceOp::and_:
        acc &= x;
        break;
      case ReduceOp::or_:
        acc |= x;
        break;
      case ReduceOp::xor_:
        acc ^= x;
        break;
    }
  }
  for (unsigned l = 0; l < 32; ++l)
    if (takes_part(v, l)) std::memcpy(v.lanes[l]->out, &acc, 4);
}

void syncwarp_complete(WarpOpView&) {}

void bad_shuffle_width(const char* name, int width, const Where& where) {
  fault(FaultKind::bad_argument,
        std::string(name) + ": width " + std::to_string(width) + " is not a power of two in [1, 32]", where);
}

}  // namespace seg::sim::detail
