// Warp-level intrinsics for simulated kernels: shuffles, votes, match, reduce, __syncwarp.
//
// Each is a warp collective (device_runtime.h): the lanes named in the mask meet, the last one to
// arrive computes every lane's result, then all continue. Checked, with a report instead of a hang
// or a silent wrong value:
//   * the calling lane must be in the mask; width must be a power of two in [1, 32];
//   * all lanes of one collective must call the same intrinsic with the same mask, width and type;
//   * a lane waiting forever (divergent code) ends in a deadlock report naming the missing lanes;
//   * reading a lane that did not take part (exited, nonexistent in a partial warp, or outside the
//     mask) faults in strict mode, else returns the poison pattern 0xFF.. and is counted.
// Shuffle lane arithmetic follows the PTX ISA's shfl.sync pseudo-code (clamp and segment mask).
// Shuffles accept any trivially copyable type up to 8 bytes (nvcc accepts fewer types; CI compiles
// every .cu with nvcc too). __activemask() returns the lanes that have not exited: fibers do not
// model which lanes the hardware would currently group together.
#pragma once

#include <cstdint>
#include <source_location>
#include <type_traits>

#include "kernels/sim/builtins.h"
#include "kernels/sim/device_runtime.h"

namespace seg::sim::detail {

enum class ShuffleMode : uint8_t { idx, up, down, bfly };
struct ShuffleUniform {
  uint8_t mode;
  uint8_t width;
  uint16_t bytes;
};
void shuffle_complete(WarpOpView& view);
void ballot_complete(WarpOpView& view);
void match_any_complete(WarpOpView& view);
void match_all_complete(WarpOpView& view);
void reduce_complete(WarpOpView& view);
void syncwarp_complete(WarpOpView& view);
// Out of line: building the message in kernel code would touch host memory (warp_intrinsics.cpp).
[[noreturn]] void bad_shuffle_width(const char* name, int width, const Where& where);

template <class T>
T shuffle(unsigned mask, const T& value, ShuffleMode mode, int lane_arg, int width, const char* name,
          const Where& where) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 8, "warp shuffles move values of at most 8 bytes");
  if (width < 1 || width > 32 || (width & (width - 1)) != 0) bad_shuffle_width(name, width, where);
  const ShuffleUniform uniform{static_cast<uint8_t>(mode), static_cast<uint8_t>(width),
                               static_cast<uint16_t>(sizeof(T))};
  T result;
  LaneArgs args{&value, &result, lane_arg};
  warp_collective({name, &shuffle_complete, mask, &uniform, sizeof uniform, false}, args, where);
  return result;
}

enum class VoteOp : uint8_t { ballot, any, all, uni };
inline unsigned vote(unsigned mask, int predicate, VoteOp op, const char* name, const Where& where) {
  unsigned ballot = 0;
  LaneArgs args{nullptr, &ballot, predicate != 0};
  warp_collective({name, &ballot_complete, mask, nullptr, 0, false}, args, where);
  const unsigned participants = static_cast<unsigned>(args.arg);  // ballot_complete stores them here
  switch (op) {
    case VoteOp::ballot:
      return ballot;
    case VoteOp::any:
      return ballot != 0;
    case VoteOp::all:
      return ballot == participants;
    case VoteOp::uni:
      return ballot == 0 || ballot == participants;
  }
  return 0;
}

enum class ReduceOp : uint8_t { add, min, max, and_, or_, xor_ };
struct ReduceUniform {
  uint8_t op;
  uint8_t is_signed;
};
template <class T>
T reduce(unsigned mask, T value, ReduceOp op, const char* name, const Where& where) {
  static_assert(sizeof(T) == 4, "__reduce_*_sync works on 32-bit integers");
  const ReduceUniform uniform{static_cast<uint8_t>(op), std::is_signed_v<T>};
  T result;
  LaneArgs args{&value, &result, 0};
  warp_collective({name, &reduce_complete, mask, &uniform, sizeof uniform, false}, args, where);
  return result;
}

template <class T>
unsigned match(unsigned mask, const T& value, bool all, int* pred, const char* name, const Where& where) {
  static_assert(std::is_trivially_copyable_v<T> && (sizeof(T) == 4 || sizeof(T) == 8),
                "__match_*_sync compares 32- or 64-bit values");
  const uint16_t bytes = sizeof(T);
  unsigned result = 0;
  LaneArgs args{&value, &result, 0};
  warp_collective({name, all ? &match_all_complete : &match_any_complete, mask, &bytes, sizeof bytes, false}, args,
                  where);
  if (pred) *pred = args.arg != 0;
  return result;
}

}  // namespace seg::sim::detail

template <class T>
T __shfl_sync(unsigned mask, T var, int src_lane, int width = warpSize,
              const std::source_location& where = std::source_location::current()) {
  return seg::sim::detail::shuffle(mask, var, seg::sim::detail::ShuffleMode::idx, src_lane, width, "__shfl_sync",
                                   where);
}
template <class T>
T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = warpSize,
                 const std::source_location& where = std::source_location::current()) {
  return seg::sim::detail::shuffle(mask, var, seg::sim::detail::ShuffleMode::up, static_cast<int>(delta), width,
                                   "__shfl_up_sync", where);
}
template <class T>
T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = warpSize,
                   const std::source_location& where = std::source_location::current()) {
  return seg::sim::detail::shuffle(mask, var, seg::sim::detail::ShuffleMode::down, static_cast<int>(delta), width,
                                   "__shfl_down_sync", where);
}
template <class T>
T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = warpSize,
                  const std::source_location& where = std::source_location::current()) {
  return seg::sim::detail::shuffle(mask, var, seg::sim::detail::ShuffleMode::bfly, lane_mask, width, "__shfl_xor_sync",
                                   where);
}

inline unsigned __ballot_sync(unsigned mask, int predicate,
                              const std::source_location& where = std::source_location::current()) {
  return seg::sim::detail::vote(mask, predicate, seg::sim::detail::VoteOp::ballot, "__ballot_sync", where);
}
inline int __any_sync(unsigned mask, int predicate,
                      const std::source_location& where = std::source_location::current()) {
  return static_cast<int>(seg::sim::detail::vote(mask, predicate, seg::sim::detail::VoteOp::any, "__any_sync", where));
}
inline int __all_sync(unsigned mask, int predicate,
                      const std::source_location& where = std::source_location::current()) {
  return static_cast<int>(seg::sim::detail::vote(mask, predicate, seg::sim::detail::VoteOp::all, "__all_sync", where));
}
inline int __uni_sync(unsigned mask, int predicate,
                      const std::source_location& where = std::source_location::current()) {
  return static_cast<int>(seg::sim::detail::vote(mask, predicate, seg::sim::detail::VoteOp::uni, "__uni_sync", where));
}

template <class T>
unsigned __match_any_sync(unsigned mask, T value, const std::source_location& where = std::source_location::current()) {
  return seg::sim::detail::match(mask, value, false, nullptr, "__match_any_sync", where);
}
template <class T>
unsigned __match_all_sync(unsigned mask, T value, int* pred,
                          const std::source_location& where = std::source_location::current()) {
  return seg::sim::detail::match(mask, value, true, pred, "__match_all_sync", where);
}

#define SEG_SIM_REDUCE(name, op)                                                                \
  inline unsigned name(unsigned mask, unsigned value,                                           \
                       const std::source_location& where = std::source_location::current()) {   \
    return seg::sim::detail::reduce(mask, value, seg::sim::detail::ReduceOp::op, #name, where); \
  }
SEG_SIM_REDUCE(__reduce_add_sync, add)
SEG_SIM_REDUCE(__reduce_min_sync, min)
SEG_SIM_REDUCE(__reduce_max_sync, max)
SEG_SIM_REDUCE(__reduce_and_sync, and_)
SEG_SIM_REDUCE(__reduce_or_sync, or_)
SEG_SIM_REDUCE(__reduce_xor_sync, xor_)
#undef SEG_SIM_REDUCE
inline int __reduce_add_sync(unsigned mask, int value,
                             const std::source_location& where = std::source_location::current()) {
  return seg::sim::detail::reduce(mask, value, seg::sim::detail::ReduceOp::add, "__reduce_add_sync", where);
}
inline int __reduce_min_sync(unsigned mask, int value,
                             const std::source_location& where = std::source_location::current()) {
  return seg::sim::detail::reduce(mask, value, seg::sim::detail::ReduceOp::min, "__reduce_min_sync", where);
}
inline int __reduce_max_sync(unsigned mask, int value,
                             const std::source_location& where = std::source_location::current()) {
  return seg::sim::detail::reduce(mask, value, seg::sim::detail::ReduceOp::max, "__reduce_max_sync", where);
}

inline void __syncwarp(unsigned mask = 0xFFFFFFFFu,
                       const std::source_location& where = std::source_location::current()) {
  seg::sim::detail::LaneArgs args;
  seg::sim::detail::warp_collective({"__syncwarp", &seg::sim::detail::syncwarp_complete, mask, nullptr, 0, false}, args,
                                    where);
}

inline unsigned __activemask() { return seg::sim::detail::live_lanes_mask(); }
