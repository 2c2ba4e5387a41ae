#!/usr/bin/env python3
"""Per-kernel resource usage from `nvcc -Xptxas -v` logs, and the spill check of kernels marked hot.

CI compiles every .cu file with `nvcc ... -Xptxas -v` for sm_80 and sm_90 and keeps each file's
stderr as <log dir>/<path with / as __>.log. This script reads those logs and prints, per kernel and
architecture, the registers per thread, static shared memory, stack frame and spill stores/loads
that ptxas reported. A kernel whose .cu file carries a line

    // hot-kernel: <kernel_function_name>

(the convention for kernel authors: the kernels a training step spends its time in) must not spill:
any spill store or load in a hot kernel on either architecture fails the script (exit 1), naming it.

    tools/ptxas_report.py <log dir> <file.cu>...
"""
import re
import subprocess
import sys
from pathlib import Path

ENTRY = re.compile(r"ptxas info\s*: Compiling entry function '([^']+)' for '(sm_\d+)'")
FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
USED = re.compile(r"Used (\d+) registers(?:, used \d+ barriers)?(?:, (\d+) bytes smem)?")
HOT = re.compile(r"^\s*//\s*hot-kernel:\s*([A-Za-z_]\w*)", re.M)


def demangle(names):
    if not names:
        return {}
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True).stdout.split("\n")
    return dict(zip(names, out))


def short_name(demangled):
    """The kernel as it reads in the source: no return type, namespaces or parameter list."""
    name = demangled.replace("(anonymous namespace)::", "")
    if name.startswith("void "):
        name = name[5:]
    for prefix in ("seg::cuda::", "seg::"):
        name = name.replace(prefix, "")
    depth = 0
    for i, ch in enumerate(name):  # cut the parameter list: the first '(' outside template arguments
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            return name[:i]
    return name


def base_name(demangled):
    """The function name without namespaces, template arguments and parameters."""
    name = short_name(demangled)
    depth, cut = 0, len(name)
    for i, ch in enumerate(name):  # drop a trailing template argument list
        if ch == "<":
            if depth == 0:
                cut = i
            depth += 1
        elif ch == ">":
            depth -= 1
    name = name[:cut]
    return name.split("::")[-1].split(" ")[-1]


def parse(log_text):
    """[(mangled, arch, regs, smem, stack, spill_st, spill_ld)] in log order."""
    rows, cur = [], None
    for line in log_text.splitlines():
        m = ENTRY.search(line)
        if m:
            cur = {"name": m.group(1), "arch": m.group(2), "stack": 0, "st": 0, "ld": 0, "regs": 0, "smem": 0}
            rows.append(cur)
            continue
        if cur is None:
            continue
        m = FRAME.search(line)
        if m:
            cur["stack"], cur["st"], cur["ld"] = (int(g) for g in m.groups())
        m = USED.search(line)
        if m:
            cur["regs"] = int(m.group(1))
            cur["smem"] = int(m.group(2) or 0)
    return rows


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    log_dir, sources = Path(sys.argv[1]), sys.argv[2:]
    failures, total = [], 0
    for src in sources:
        log = log_dir / (src.replace("/", "__") + ".log")
        if not log.exists():
            print(f"{src}: no ptxas log ({log})")
            failures.append(f"{src}: not compiled")
            continue
        rows = parse(log.read_text())
        hot = set(HOT.findall(Path(src).read_text()))
        names = demangle(sorted({r["name"] for r in rows}))
        found_hot = set()
        if rows:
            print(f"\n{src}")
            print(f"  {'kernel':<64} {'arch':<6} {'regs':>4} {'smem B':>7} {'stack':>5} {'spill st/ld':>11}")
        for r in rows:
            d = names.get(r["name"], r["name"])
            b = base_name(d)
            is_hot = b in hot
            if is_hot:
                found_hot.add(b)
            mark = " hot" if is_hot else ""
            s = short_name(d)
            shown = s if len(s) <= 64 else s[:61] + "..."
            print(f"  {shown:<64} {r['arch']:<6} {r['regs']:>4} {r['smem']:>7} {r['stack']:>5} {r['st']:>5}/{r['ld']:<5}{mark}")
            total += 1
            if is_hot and (r["st"] or r["ld"]):
                failures.append(f"{src}: hot kernel {b} spills on {r['arch']} ({r['st']} B stores, {r['ld']} B loads)")
        for b in sorted(hot - found_hot):
            failures.append(f"{src}: '// hot-kernel: {b}' names no kernel ptxas compiled in this file")
    print(f"\n{total} kernel compilations reported")
    if failures:
        print("FAILED:")
        for f in failures:
            print("  " + f)
        return 1
    print("no hot kernel spills")
    return 0


if __name__ == "__main__":
    sys.exit(main())
