// Warp collectives: shuffles, votes, __syncwarp, WMMA and the PTX warp instructions all meet here.
//
// Rules, from the CUDA programming guide and the PTX ISA (shfl.sync, vote.sync, bar.warp.sync):
//   * the calling lane must be in the mask;
//   * every non-exited lane named in the mask must execute the same collective with the same mask;
//     the collective completes when all of them have arrived (exited lanes are not waited for);
//   * reading a value from a lane that did not take part is undefined (shuffles): strict mode
//     reports it, otherwise the value is the poison pattern 0xFF.. (NaN, -1) and it is counted.
// Mismatches are reported as soon as they are certain: a lane arriving at a different operation,
// or with different uniform arguments, than lanes already waiting with the same mask; or a lane
// whose mask contains lanes that already wait in a collective with another mask (neither can
// complete). Everything else that never completes ends as a deadlock report.
#include <cstdio>
#include <cstring>

#include "kernels/sim/counter_hooks.h"
#include "kernels/sim/sanitizer_hooks.h"
#include "kernels/sim/worker.h"

namespace seg::sim::detail {

namespace {

WarpOp& free_slot(WarpState& ws) {
  for (WarpOp& op : ws.ops)
    if (op.phase == WarpOp::Phase::free) return op;
  // Cannot happen: each busy slot is referenced by at least one distinct lane of the warp.
  std::fprintf(stderr, "seg::sim: fatal: no free warp collective slot\n");
  std::abort();
}

// Compares the uniform arguments of two lanes. A plain loop, not memcmp: the other lane's bytes are
// on its stack, and TSan (which intercepts memcmp) must not see the runtime reading them.
bool same_bytes(const void* a, const void* b, uint32_t n) {
  const auto* x = static_cast<const unsigned char*>(a);
  const auto* y = static_cast<const unsigned char*>(b);
  for (uint32_t i = 0; i < n; ++i)
    if (x[i] != y[i]) return false;
  return true;
}

[[noreturn]] void mismatch(Worker& w, SimThread& me, const std::string& what) {
  raise_fault(w, FaultKind::divergent_collective,
              "seg::sim: divergent warp collective: " + what + "\n  in " + thread_context(w, me));
}

// Completes `op` if every lane it still waits for has arrived. Runs on whichever lane arrived or
// exited last.
void try_complete(Worker& w, unsigned warp, WarpOp& op) {
  WarpState& ws = w.block.warps[warp];
  const uint32_t expected = op.mask & ws.exists & ~ws.exited;
  if ((op.arrived & expected) != expected) return;
  if (op.full_warp && op.arrived != 0xFFFFFFFFu) {
    SimThread& me = *w.current;
    const uint32_t missing = ~op.arrived, absent = missing & ~ws.exists, exited = missing & ws.exists;
    std::string why;
    if (exited) why += "lanes " + lane_list(exited) + " have exited";
    if (absent) why += std::string(exited ? " and " : "") + "lanes " + lane_list(absent) + " do not exist (partial warp)";
    raise_fault(w, FaultKind::divergent_collective,
                std::string("seg::sim: divergent warp collective: ") + op.name + " at " + describe_where(op.where) +
                    " must be executed by all 32 lanes of warp " + std::to_string(warp) + ", but " + why + "\n  in " +
                    thread_context(w, me));
  }
  WarpOpView view;
  view.mask = op.mask;
  view.participants = op.arrived;
  view.exists = ws.exists;
  view.exited = ws.exited;
  for (unsigned l = 0; l < 32; ++l) view.lanes[l] = (op.arrived >> l & 1u) ? op.lanes[l] : nullptr;
  view.uniform = op.uniform;
  view.strict = w.launch->options.strict;
  view.warp = warp;
  view.name = op.name;
  view.where = op.where;
  // The completing lane reads what the others left for it and writes their results: acquire
  // their arrivals first, release the results to them after.
  san::hb_acquire(&op);
  op.complete(view);
  san::hb_release(&op);
  ++w.stats.warp_collectives;
  count_collective(w, warp, op.arrived, ws.exists & ~ws.exited);
  op.phase = WarpOp::Phase::completed;
  op.unresumed = op.arrived;
  make_runnable_in_order(w, op.arrived, warp, false);
}

}  // namespace

void warp_collective(const WarpOpDesc& d, LaneArgs& mine, const Where& where) {
  Worker& w = running_worker(d.name);
  SimThread& me = *w.current;
  WarpState& ws = w.block.warps[me.warp];
  const uint32_t bit = 1u << me.lane;
  if (!(d.mask & bit))
    fault(FaultKind::bad_argument,
          std::string(d.name) + " called by lane " + std::to_string(me.lane) + " with mask " + hex_mask(d.mask) +
              ", which does not contain the calling lane",
          where);

  WarpOp* join = nullptr;
  for (WarpOp& op : ws.ops) {
    if (op.phase != WarpOp::Phase::pending || !(op.mask & bit)) continue;
    if (op.mask == d.mask) {
      if (op.complete != d.complete)
        mismatch(w, me,
                 "lane " + std::to_string(me.lane) + " calls " + d.name + " at " + describe_where(where) +
                     " with mask " + hex_mask(d.mask) + " while lanes " + lane_list(op.arrived) + " wait in " +
                     op.name + " at " + describe_where(op.where) + " with the same mask");
      if (op.uniform_bytes != d.uniform_bytes || !same_bytes(op.uniform, d.uniform, d.uniform_bytes))
        mismatch(
            w, me,
            "lane " + std::to_string(me.lane) + " calls " + d.name + " at " + describe_where(where) +
                " with arguments (width, type, pointer, leading dimension or layout) that differ from those of lanes " +
                lane_list(op.arrived) + " (" + describe_where(op.where) + "); they must be the same in every lane");
      join = &op;
      break;
    }
    if (op.arrived & d.mask)
      mismatch(w, me,
               "lane " + std::to_string(me.lane) + " calls " + d.name + " at " + describe_where(where) + " with mask " +
                   hex_mask(d.mask) + ", but lanes " + lane_list(op.arrived & d.mask) + " of that mask wait in " +
                   op.name + " at " + describe_where(op.where) + " with mask " + hex_mask(op.mask) +
                   "; neither can complete");
  }
  if (!join) {
    join = &free_slot(ws);
    join->phase = WarpOp::Phase::pending;
    join->name = d.name;
    join->complete = d.complete;
    join->mask = d.mask;
    join->arrived = 0;
    join->full_warp = d.full_warp;
    join->uniform = d.uniform;
    join->uniform_bytes = d.uniform_bytes;
    join->where = where;
  }
  join->arrived |= bit;
  join->lanes[me.lane] = &mine;
  me.state = ThreadState::waiting;
  me.wait = WaitKind::warp;
  me.wait_name = d.name;
  me.where = where;
  me.op = join;
  san::hb_release(join);
  try_complete(w, me.warp, *join);
  switch_to_next(w, me);
  // Resumed: the collective completed and wrote this lane's results.
  san::hb_acquire(join);
  join->unresumed &= ~bit;
  if (!join->unresumed) join->phase = WarpOp::Phase::free;
  me.op = nullptr;
}

void warp_lane_exited(Worker& w, SimThread& me) {
  WarpState& ws = w.block.warps[me.warp];
  ws.exited |= 1u << me.lane;
  // Pending collectives no longer wait for this lane; one of them may now be complete.
  for (WarpOp& op : ws.ops)
    if (op.phase == WarpOp::Phase::pending && (op.mask >> me.lane & 1u)) try_complete(w, me.warp, op);
}

void inactive_lane_read(const WarpOpView& view, unsigned reader, unsigned src) {
  Worker& w = running_worker(view.name);
  const bool exists = view.exists >> src & 1u;
  const bool exited = view.exited >> src & 1u;
  const std::string why = !exists  ? "does not exist (the warp is partial: the block size is not a multiple of 32)"
                          : exited ? "has exited"
                          : !(view.mask >> src & 1u) ? "is not in the mask " + hex_mask(view.mask)
                                                     : "did not take part";
  if (view.strict) {
    raise_fault(
        w, FaultKind::inactive_lanes,
        std::string("seg::sim: ") + view.name + " at " + describe_where(view.where) + ": lane " +
            std::to_string(reader) + " of warp " + std::to_string(view.warp) + " reads lane " + std::to_string(src) +
            ", which " + why +
            "; the value is undefined on the GPU (SEG_SIM_STRICT=0 returns the poison value 0xFF.. instead)\n  in " +
            thread_context(w, *w.current));
  }
  ++w.stats.inactive_lane_reads;
}

}  // namespace seg::sim::detail
