#!/usr/bin/env python3
"""Instruction mix of the tensor-core kernels' main loop, from their SASS (the static evidence that
stands in for Nsight Compute's issue-slot counters until a GPU measures them).

    tools/sass_loop_report.py [--arch sm_90] [--filter REGEX] OBJECT_OR_CUBIN...

For every kernel whose demangled name matches --filter (default: gemm_tc_kernel), the main loop is
the backward branch whose body holds the most HMMA instructions. Printed per kernel: the loop's
instructions (every issued slot, predicated-off ones included), HMMA, LDSM, LDGSTS (cp.async),
BAR, BRA, and instructions per HMMA; then the same for the 16-byte path alone (the loop without the
element-wise fallback's blocks, which aligned operands never enter), and for the steady trip (the
shortest path through the loop that issues every HMMA and every 16-byte copy: a K tile inside K,
with no cursor carry).

Why that ratio: on sm_80/sm_90 one SM sub-partition issues one warp instruction per clock, and one
HMMA.16816 occupies its tensor core for several clocks (about 8 on A100: 1024 f16 FMA per clock
per SM for a 2048-FMA instruction, four sub-partitions). A loop that issues many more instructions
than that per HMMA is bound by issue, not by the tensor cores, however well its memory is laid
out. (docs/tensor-cores.md, "The main loop's instruction budget".)

cuobjdump comes from the CUDA toolkit, or from PyPI's nvidia-cuda-cuobjdump wheel
(bin under nvidia/cu13/bin); $CUOBJDUMP names it explicitly. Exit 2 when it cannot be found.
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys

INSN = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)([^;]*);")
FUNC = re.compile(r"Function : (\S+)")


def find_cuobjdump():
    if os.environ.get("CUOBJDUMP"):
        return os.environ["CUOBJDUMP"]
    found = shutil.which("cuobjdump")
    if found:
        return found
    for root in ("/usr/local/cuda/bin",) + tuple(sys.path):
        for c in glob.glob(os.path.join(root, "cuobjdump")) + glob.glob(os.path.join(root, "nvidia/cu*/bin/cuobjdump")):
            if os.access(c, os.X_OK):
                return c
    return None


def demangle(names):
    try:
        out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True, check=True).stdout
        return out.splitlines()
    except (OSError, subprocess.CalledProcessError):
        return names


def functions(sass):
    """(mangled name, [(address, opcode, operands, predicated-off-always)]) per function."""
    current, insns = None, []
    for line in sass.splitlines():
        m = FUNC.search(line)
        if m:
            if current:
                yield current, insns
            current, insns = m.group(1), []
            continue
        m = INSN.search(line)
        if m and current:
            insns.append((int(m.group(1), 16), m.group(3), m.group(4), (m.group(2) or "").strip()))
    if current:
        yield current, insns


def main_loop(insns):
    """The [start, end] address range of the backward branch whose body has the most HMMAs; of equals,
    the first (a two-part main loop's first part, block_tile.h's InsideK_: the steady state)."""
    best = None
    for addr, op, operands, _ in insns:
        if op != "BRA":
            continue
        m = re.search(r"0x([0-9a-f]+)", operands)
        if not m:
            continue
        target = int(m.group(1), 16)
        if target >= addr:
            continue
        hmma = sum(1 for a, o, _, _ in insns if target <= a <= addr and o.startswith("HMMA"))
        if hmma and (best is None or hmma > best[0]):
            best = (hmma, target, addr)
    return best


def loop_blocks(body):
    """The loop's basic blocks, as (starts, ends, successors, kept). Its blocks and their forward
    branches form a DAG (the back edge ends a trip); address order is a topological order. kept: the
    blocks reachable from the loop head that are not the element-wise fallback for unaligned
    operands (which aligned operands never run). A block belongs to the fallback when a block that
    dominates it (itself included) heads a region, the blocks it dominates, that holds an
    element-wise global load (LDG) and neither an HMMA nor a 16-byte copy (LDGSTS): the branch into
    the fallback, the address work before its first load (a convolution's divisions) and the loads
    themselves. body: (address, opcode, operands, predicate) of the loop, in address order."""
    index = {a: i for i, (a, _, _, _) in enumerate(body)}

    def target(operands):
        m = re.search(r"0x([0-9a-f]+)", operands)
        return index.get(int(m.group(1), 16)) if m else None

    starts = {0}
    for i, (_, op, operands, _) in enumerate(body):
        if op == "BRA":
            if target(operands) is not None:
                starts.add(target(operands))
            if i + 1 < len(body):
                starts.add(i + 1)
    starts = sorted(starts)
    ends = starts[1:] + [len(body)]
    block_at = {b: k for k, b in enumerate(starts)}
    n = len(starts)
    succ = [[] for _ in range(n)]
    for k in range(n):
        b, e = starts[k], ends[k]
        _, op, operands, pred = body[e - 1]
        if op == "BRA":
            t = target(operands)
            if t is not None and t > b:  # a forward branch inside the loop; the back edge ends the trip
                succ[k].append(block_at[t])
            if pred == "" or e >= len(body):  # unconditional: no fall-through
                continue
        if e < len(body):
            succ[k].append(k + 1)
    preds = [[] for _ in range(n)]
    reach = [False] * n
    reach[0] = True
    for k in range(n):
        if reach[k]:
            for t in succ[k]:
                reach[t] = True
                preds[t].append(k)
    dom = [None] * n
    for k in range(n):
        if not reach[k]:
            continue
        if k == 0:
            dom[k] = {0}
        else:
            dom[k] = set.intersection(*(dom[p] for p in preds[k])) | {k}
    has = lambda k, prefix: any(op.startswith(prefix) for _, op, _, _ in body[starts[k]:ends[k]])
    region_ldg, region_other = [False] * n, [False] * n
    for k in range(n):
        if reach[k]:
            for x in dom[k]:
                region_ldg[x] |= has(k, "LDG.")
                region_other[x] |= has(k, "HMMA") or has(k, "LDGSTS")
    fallback = lambda k: any(region_ldg[x] and not region_other[x] for x in dom[k])
    kept = [reach[k] and not fallback(k) for k in range(n)]
    return starts, ends, succ, kept


def aligned_path(body):
    """The loop's instructions that the 16-byte (cp.async) path can reach: every kept block of
    loop_blocks, both sides of every branch, so an upper bound on what one trip of the aligned path
    issues (it counts a convolution's rare carries, and both the inside-K and the last-tile forms of
    the copies)."""
    starts, ends, _, kept = loop_blocks(body)
    return [body[i] for k in range(len(starts)) if kept[k] for i in range(starts[k], ends[k])]


def steady_path(body):
    """The instructions of one trip through the loop in the steady state of the 16-byte path: of the
    paths from the loop head to its last block through kept blocks, those that issue the most
    HMMAs and then the most 16-byte copies (a tile that is computed and whose successor is copied),
    the shortest. That is the trip of a K tile inside K with no carry in a convolution's cursor
    (a carry, and the ragged last tile's copies, are longer paths). None if no path exists."""
    starts, ends, succ, kept = loop_blocks(body)
    n = len(starts)
    cost = []
    for k in range(n):
        part = body[starts[k]:ends[k]]
        cost.append((sum(1 for _, o, _, _ in part if o.startswith("HMMA")),
                     sum(1 for _, o, _, _ in part if o.startswith("LDGSTS")), len(part)))
    # best[k]: the best (HMMA, LDGSTS, -instructions) of a path from block 0 through block k, with
    # the path's blocks (address order is topological, so one pass suffices).
    best = [None] * n
    if kept[0]:
        best[0] = ((cost[0][0], cost[0][1], -cost[0][2]), [0])
    for k in range(n):
        if best[k] is None:
            continue
        for t in succ[k]:
            if not kept[t]:
                continue
            (h, c, neg), blocks = best[k]
            cand = ((h + cost[t][0], c + cost[t][1], neg - cost[t][2]), blocks + [t])
            if best[t] is None or cand[0] > best[t][0]:
                best[t] = cand
    if best[n - 1] is None:
        return None
    return [body[i] for k in best[n - 1][1] for i in range(starts[k], ends[k])]


def report(path, arch, pattern, cuobjdump):
    out = subprocess.run([cuobjdump, "-sass", "-arch", arch, path], capture_output=True, text=True)
    if out.returncode != 0:
        sys.stderr.write(f"sass_loop_report: cuobjdump failed on {path}: {out.stderr.strip()}\n")
        return False
    funcs = list(functions(out.stdout))
    names = demangle([f for f, _ in funcs])
    for (mangled, insns), name in zip(funcs, names):
        if not re.search(pattern, name):
            continue
        loop = main_loop(insns)
        short = re.sub(r"seg::cuda::tc::", "", name)
        short = re.sub(r"\(seg::cuda::tc::Major\)", "M", short)
        short = re.sub(r"\(seg::cuda::tc::SmemKind\)", "S", short)
        short = short[:230]
        if not loop:
            print(f"{short}\n    no loop with HMMA\n")
            continue
        _, start, end = loop
        body = [(a, o, ops, p) for a, o, ops, p in insns if start <= a <= end]
        count = lambda prefix, part=body: sum(1 for _, o, _, _ in part if o.startswith(prefix))
        hmma = count("HMMA")
        dead = sum(1 for _, _, _, p in body if p == "@!PT")
        fast = aligned_path(body)
        print(f"{short}\n    main loop 0x{start:x}-0x{end:x}: {len(body)} instructions ({dead} never-executed @!PT), "
              f"HMMA {hmma}, LDSM {count('LDSM')}, LDGSTS {count('LDGSTS')}, LDG {count('LDG.')}, BAR {count('BAR')}, "
              f"BRA {count('BRA')}: {len(body) / hmma:.1f} instructions per HMMA\n"
              f"    16-byte path: {len(fast)} instructions, HMMA {count('HMMA', fast)}, LDSM {count('LDSM', fast)}, "
              f"LDGSTS {count('LDGSTS', fast)}: {len(fast) / hmma:.1f} per HMMA")
        steady = steady_path(body)
        if steady:
            print(f"    steady trip: {len(steady)} instructions, HMMA {count('HMMA', steady)}, "
                  f"LDSM {count('LDSM', steady)}, LDGSTS {count('LDGSTS', steady)}: "
                  f"{len(steady) / max(1, count('HMMA', steady)):.1f} per HMMA")
        print()
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--filter", default="gemm_tc_kernel")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    tool = find_cuobjdump()
    if not tool:
        sys.stderr.write("sass_loop_report: cuobjdump not found (CUDA toolkit, or pip install nvidia-cuda-cuobjdump; "
                         "or set CUOBJDUMP)\n")
        return 2
    ok = all(report(f, a.arch, a.filter, tool) for f in a.files)
    return 0 if ok else 2


if __name__ == "__main__":
    sys.exit(main())
