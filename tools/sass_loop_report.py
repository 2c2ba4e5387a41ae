#!/usr/bin/env python3
"""Instruction mix of the tensor-core kernels' main loop, from their SASS (the static evidence that
stands in for Nsight Compute's issue-slot counters until a GPU measures them).

    tools/sass_loop_report.py [--arch sm_90] [--filter REGEX] OBJECT_OR_CUBIN...

For every kernel whose demangled name matches --filter (default: gemm_tc_kernel), the main loop is
the backward branch whose body holds the most HMMA instructions. Printed per kernel: the loop's
instructions (every issued slot, predicated-off ones included), HMMA, LDSM, LDGSTS (cp.async),
BAR, BRA, and instructions per HMMA; then the same for the 16-byte path alone (the loop without the
element-wise fallback's blocks, which aligned operands never enter).

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
    """The [start, end] address range of the backward branch whose body has the most HMMAs."""
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


def aligned_path(body):
    """The loop's instructions that the 16-byte (cp.async) path can reach. The loop's basic blocks and
    their forward branches form a DAG (the back edge ends a trip). A block belongs to the
    element-wise fallback for unaligned operands (which aligned operands never run) when a block
    that dominates it (itself included) heads a region, the blocks it dominates, that holds an
    element-wise global load (LDG) and neither an HMMA nor a 16-byte copy (LDGSTS): the branch into
    the fallback, the address work before its first load (a convolution's divisions) and the loads
    themselves. Everything else
    reachable from the loop head counts, both sides of every other branch, so it is an upper bound
    on what one trip of the aligned path issues. body: (address, opcode, operands, predicate) of
    the loop, in address order."""
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
    # Reachable blocks and their dominators (address order is a topological order of the DAG).
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
    keep = [k for k in range(n) if reach[k] and not fallback(k)]
    return [body[i] for k in keep for i in range(starts[k], ends[k])]


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
              f"LDGSTS {count('LDGSTS', fast)}: {len(fast) / hmma:.1f} per HMMA\n")
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
