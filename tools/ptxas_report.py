#!/usr/bin/env python3
"""What ptxas says about each CUDA kernel (registers, shared memory, stack frame, spills) for sm_80
and sm_90, the spill check of kernels marked hot, and the tensor-core kernels' occupancy on sm_90.

A kernel whose .cu file carries a line

    // hot-kernel: <kernel_function_name>

is one a training step spends its time in: it must not spill. A spill store or load in a hot kernel
on any architecture fails the report (exit 1), naming the kernel; so does a marker that names no
kernel of its file (a stale marker would otherwise guard nothing).

Three ways in:

  ptxas_report.py capture LOGDIR -- COMPILER ARGS...
      The CUDA compiler launcher of seg_kernels_cuda when CMake has SEG_PTXAS_REPORT=ON
      (kernels/CMakeLists.txt, which also adds -Xptxas=-v). Runs the compile (through ccache, which
      replays ptxas's output on a hit), writes ptxas's lines for the source file to
      LOGDIR/<path with / as __>.log and passes every other line through. CI's CUDA stage builds
      with it (.ci/run, cuda_backend_build): the report costs no second compile.
  ptxas_report.py report LOGDIR FILE.cu...
      The table from those logs (every kernel of every file, each architecture), then the checks.
  ptxas_report.py compile [--arch 90 ...] [--nvcc-flag=F ...] FILE.cu...
      Compiles each file itself (nvcc -Xptxas -v with the Release build's flags; no CMake build
      needed), then reports.
      Without files: the tensor-core files kernels/cuda/{gemm,conv2d}_tc_*.cu.

--markdown (report, compile) prints the table as Markdown instead: the one in docs/tensor-cores.md.
Exit status: 0 clean, 1 a check failed, 2 usage or compile error.

  ptxas_report.py diff OLD NEW
      What changed between two such Markdown tables (any files holding them: a saved --markdown
      output, or docs/tensor-cores.md itself, e.g. OLD = <(git show REV:docs/tensor-cores.md)):
      per kernel, registers on each architecture, spills and sm_90 blocks per SM, then how many
      kernels gained or lost blocks per SM. The spill check catches spills; this is for the other
      way a source change can hurt, an occupancy drop. Exit 0 (2 when a file has no table).

Occupancy (blocks and warps per SM on sm_90) needs the launch configuration, which ptxas does not
see. For the tensor-core block kernel (gemm_tc_kernel<GemmKernel<...>>) it follows from the
template arguments: threads = 32 x WARPS_M x WARPS_N, dynamic shared memory = kSmemBytes of
kernels/cuda/gemm/block_tile.h (computed here the same way); for splitk_reduce_kernel<THREADS> the
block is its template argument. The limits are the simulator's roofline model's
(kernels/sim/roofline.cpp: 64 warps, 32 blocks, 64K registers allocated per warp in units of 256,
228 KiB of shared memory with 1 KiB reserved per block). Other kernels print "-".
"""
import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ARCHS = ("80", "90")

ENTRY = re.compile(r"ptxas info\s*: Compiling entry function '([^']+)' for '(sm_\d+)'")
PROPS = re.compile(r"ptxas info\s*: Function properties for (\S+)")
FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
USED = re.compile(r"ptxas info\s*: Used (\d+) registers")
SMEM = re.compile(r"(\d+) bytes smem")
HOT = re.compile(r"^\s*//\s*hot-kernel:\s*([A-Za-z_]\w*)", re.M)


def log_name(source):
    """LOGDIR's file for a source path relative to the repository."""
    return source.replace("/", "__") + ".log"


def relative(path):
    p = Path(path).resolve()
    try:
        return str(p.relative_to(ROOT))
    except ValueError:
        return str(p)


# --- capture: the compiler launcher ------------------------------------------------------------

def is_ptxas_line(line):
    return line.startswith("ptxas info") or bool(FRAME.search(line))


def capture(log_dir, command):
    sources = [a for a in command if a.endswith(".cu")]
    res = subprocess.run(command, capture_output=True, text=True)
    kept_out = [l for l in res.stdout.splitlines(keepends=True) if not is_ptxas_line(l)]
    kept_err = [l for l in res.stderr.splitlines(keepends=True) if not is_ptxas_line(l)]
    sys.stdout.write("".join(kept_out))
    sys.stderr.write("".join(kept_err))
    if res.returncode == 0 and len(sources) == 1:
        ptxas = [l for l in (res.stdout + res.stderr).splitlines(keepends=True) if is_ptxas_line(l)]
        Path(log_dir).mkdir(parents=True, exist_ok=True)
        log = Path(log_dir) / log_name(relative(sources[0]))
        tmp = log.with_suffix(".tmp")
        tmp.write_text("".join(ptxas))
        os.replace(tmp, log)  # a half-written log never stands for a file
    return res.returncode


# --- parsing ----------------------------------------------------------------------------------

def parse(log_text):
    """[{name, arch, regs, smem, stack, st, ld}] in log order. A stack/spill line counts for the entry
    function only when ptxas announced it for that function (called device functions have their own)."""
    rows, cur, props_for = [], None, None
    for line in log_text.splitlines():
        m = ENTRY.search(line)
        if m:
            cur = {"name": m.group(1), "arch": m.group(2)[3:], "stack": 0, "st": 0, "ld": 0, "regs": 0, "smem": 0}
            rows.append(cur)
            props_for = None
            continue
        m = PROPS.search(line)
        if m:
            props_for = m.group(1)
            continue
        if cur is None:
            continue
        m = FRAME.search(line)
        if m and props_for == cur["name"]:
            cur["stack"], cur["st"], cur["ld"] = (int(g) for g in m.groups())
            continue
        m = USED.search(line)
        if m:
            cur["regs"] = int(m.group(1))
            s = SMEM.search(line)
            cur["smem"] = int(s.group(1)) if s else 0
    return rows


def demangle(names):
    if not names:
        return {}
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True).stdout.split("\n")
    return dict(zip(names, out))


def cut_params(name):
    """Drops the parameter list: the first '(' outside template arguments."""
    depth = 0
    for i, ch in enumerate(name):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            return name[:i]
    return name


def short_name(demangled):
    """The kernel as it reads in the source: no return type, namespaces or parameter list."""
    name = demangled.replace("(anonymous namespace)::", "")
    if name.startswith("void "):
        name = name[5:]
    for prefix in ("seg::cuda::tc::", "seg::cuda::", "seg::"):
        name = name.replace(prefix, "")
    return cut_params(name)


def base_name(demangled):
    """The function name alone (what a hot-kernel marker names)."""
    name = short_name(demangled)
    depth, cut = 0, len(name)
    for i, ch in enumerate(name):
        if ch == "<":
            if depth == 0:
                cut = min(cut, i)
            depth += 1
        elif ch == ">":
            depth -= 1
    return name[:cut].split("::")[-1].split(" ")[-1]


# --- the tensor-core block kernel: label and launch configuration -----------------------------

# Matched with seg::cuda::tc:: taken out of the name: ptxas's log names kernels in full, the
# simulator's profile as Nsight does, without namespaces (tests/tools/python/test_ptxas_report_smem.py
# reads the latter).
TC_NAMESPACE = "seg::cuda::tc::"
TC = re.compile(r"^(?:void )?gemm_tc_kernel<GemmKernel<([^,]+), TileShape<(\d+), (\d+), (\d+), (\d+), (\d+), (\d+)>, "
                r"\(Major\)(\d), \(Major\)(\d), \(SmemKind\)(\d), "
                r"(\w+), (\w+)<[^>]*>, (\w+)<[^>]*>, "
                r"\(Plant\)(\d), \(MainLoop\)(\d)(?:, (?:true|false))?(?:, (-?\d+))?>")
ELEMENT = {"__half": ("f16", 2), "__nv_bfloat16": ("bf16", 2), "float": ("tf32", 4)}
SMEM_KIND = {"0": "plain", "1": "padded", "2": "swizzled", "3": "skewed"}
STAGE_PAD = {"MmaSyncWarpTile": 8, "MmaSyncTf32WarpTile": 8, "WmmaWarpTile": 4}  # warp_tile.h, kStagePad (floats)
# GemmKernel's InsideK_ (block_tile.h's two-part main loop) is matched but left out of the label: it
# changes nothing where neither source has the inside form, and `diff` compares kernels across it.
# Its last argument, MinBlocks_, is labelled only when it overrides the rule (>= 0: the lab's A/B
# kernels); -1 (min_blocks_per_sm decides) is every product kernel's.


def tc_kernel(demangled):
    """(label, threads, dynamic smem bytes) of a gemm_tc_kernel, else None."""
    m = TC.search(demangled.replace(TC_NAMESPACE, ""))
    if not m:
        return None
    elem, bm, bn, bk, warps_m, warps_n, stages, ma, mb, kind, warp, src_a, src_b, plant, loop, min_blocks = m.groups()
    bm, bn, bk, warps_m, warps_n, stages = map(int, (bm, bn, bk, warps_m, warps_n, stages))
    ename, size = ELEMENT[elem]
    chunk = 16 // size
    kind = SMEM_KIND[kind]

    # block_tile.h: OperandTile<Kind, Major, MN, BK> = SmemTile<Kind, Rows, Cols> with
    # (Rows, Cols) = (MN, BK) for Major::k (0), (BK, MN) for Major::mn (1); a padded row has one
    # more 16-byte chunk; a skewed tile (tile_config.h) is swizzled (no pad) when K-contiguous
    # (rows of a power-of-two >= 2 chunks; else padded by one), padded by two chunks when
    # MN-contiguous.
    # kSmemBytes = max(STAGES * (A + B) elements * sizeof(T), WM * (BN + pad) * 4).
    def tile_elements(major, mn):
        rows, cols = (mn, bk) if major == "0" else (bk, mn)
        if kind == "padded":
            pad = chunk
        elif kind == "skewed":
            row_chunks = bk // chunk  # OperandTileOf<skewed>::kSwizzle: a power of two >= 2
            swizzled = row_chunks >= 2 and row_chunks & (row_chunks - 1) == 0
            pad = (0 if swizzled else chunk) if major == "0" else 2 * chunk
        else:
            pad = 0
        return rows * (cols + pad)

    pipeline = stages * (tile_elements(ma, bm) + tile_elements(mb, bn)) * size
    epilogue = (bm // warps_m) * (bn + STAGE_PAD[warp]) * 4
    threads = 32 * warps_m * warps_n
    family = "mma.sync" if warp in ("MmaSyncWarpTile", "MmaSyncTf32WarpTile") else "wmma"
    major = {"0": "K", "1": "MN"}  # tile_config.h: Major::k, Major::mn (the operand's contiguous dimension)
    sources = "+".join(s.replace("Source", "") for s in (src_a, src_b))
    label = f"{family} {ename} {bm}x{bn}x{bk} {stages}st {kind} A:{major[ma]} B:{major[mb]} {sources}"
    if loop != "0":  # block_tile.h, MainLoop: 1 = prefetch_fragments
        label += " prefetch"
    if plant != "0":
        label += f" plant {plant}"
    if min_blocks is not None and int(min_blocks) >= 0:
        label += f" min-blocks {min_blocks}"
    return label, threads, max(pipeline, epilogue)


def launch_config(demangled):
    """(label, threads, dynamic smem) where the launch configuration follows from the name."""
    tc = tc_kernel(demangled)
    if tc:
        return tc
    m = re.match(r"void seg::cuda::tc::splitk_reduce_kernel<(\d+)>", demangled)
    if m:
        return short_name(demangled), int(m.group(1)), 0
    return short_name(demangled), None, None


def occupancy_sm90(regs, smem_bytes, threads):
    """(blocks per SM, warps per SM, limit), as kernels/sim/roofline.cpp models an H100/H200 SM."""
    warps = (threads + 31) // 32
    blocks, limit = 32, "blocks"
    if 64 // warps < blocks:
        blocks, limit = 64 // warps, "threads"
    smem = (smem_bytes + 1024 + 127) // 128 * 128
    if 233472 // smem < blocks:
        blocks, limit = 233472 // smem, "smem"
    if regs > 0:
        per_warp = (regs * 32 + 255) // 256 * 256
        by_regs = 4 * (65536 // 4 // per_warp) // warps
        if by_regs < blocks:
            blocks, limit = by_regs, "regs"
    return blocks, blocks * warps, limit


# --- the report -------------------------------------------------------------------------------

def collect(log_dir, sources, archs):
    """{source: [kernel dict with per-arch rows]} and the failures found while reading."""
    failures, table = [], {}
    for src in sources:
        log = Path(log_dir) / log_name(src)
        if not log.exists():
            failures.append(f"{src}: no ptxas log ({log}); build seg_kernels_cuda with -DSEG_PTXAS_REPORT=ON, "
                            f"or use `tools/ptxas_report.py compile {src}`")
            continue
        rows = parse(log.read_text())
        names = demangle(sorted({r["name"] for r in rows}))
        kernels = {}
        for r in rows:
            k = kernels.setdefault(r["name"], {"demangled": names.get(r["name"], r["name"]), "arch": {}})
            k["arch"][r["arch"]] = r
        hot = set(HOT.findall((ROOT / src).read_text() if (ROOT / src).exists() else Path(src).read_text()))
        found_hot = set()
        for k in kernels.values():
            k["base"] = base_name(k["demangled"])
            k["hot"] = k["base"] in hot
            if k["hot"]:
                found_hot.add(k["base"])
            k["label"], k["threads"], k["dyn"] = launch_config(k["demangled"])
            for arch in archs:
                r = k["arch"].get(arch)
                if r is None:
                    failures.append(f"{src}: {k['label']} has no sm_{arch} entry in the log (built for which archs?)")
                elif k["hot"] and (r["st"] or r["ld"]):
                    failures.append(f"{src}: hot kernel {k['label']} spills on sm_{arch} "
                                    f"({r['st']} bytes stored, {r['ld']} bytes loaded)")
        for b in sorted(hot - found_hot):
            failures.append(f"{src}: '// hot-kernel: {b}' names no kernel ptxas compiled from this file")
        table[src] = list(kernels.values())
    return table, failures


def occupancy_text(k):
    r = k["arch"].get("90")
    if k["threads"] is None or r is None:
        return ("-", "-", "-", "-")
    blocks, warps, limit = occupancy_sm90(r["regs"], r["smem"] + k["dyn"], k["threads"])
    return (str(k["threads"]), str(k["dyn"]), f"{blocks} ({warps} warps, {100 * warps // 64}%)", limit)


def print_text(table, archs):
    total = 0
    for src, kernels in table.items():
        if not kernels:
            continue
        print(f"\n{src}  (hot: marked // hot-kernel, must not spill; smem B: static; dyn smem: of its launch)")
        print(f"  {'kernel':<70} {'hot':<3} {'arch':<6} {'regs':>4} {'smem B':>6} {'stack':>5} {'spill st/ld':>11}  "
              f"{'thr':>4} {'dyn smem':>8} {'sm_90 blocks/SM':<22} limit")
        for k in kernels:
            label = k["label"] if len(k["label"]) <= 70 else k["label"][:67] + "..."
            occ = occupancy_text(k)
            for i, arch in enumerate(a for a in archs if a in k["arch"]):
                r = k["arch"][arch]
                tail = f"  {occ[0]:>4} {occ[1]:>8} {occ[2]:<22} {occ[3]}" if i == 0 else ""
                hot = "yes" if k["hot"] and i == 0 else ""
                print(f"  {label if i == 0 else '':<70} {hot:<3} sm_{arch:<3} {r['regs']:>4} {r['smem']:>6} {r['stack']:>5} "
                      f"{r['st']:>5}/{r['ld']:<5}{tail}")
                total += 1
    print(f"\n{total} kernel compilations reported")


def print_markdown(table, archs):
    cols = " | ".join(f"regs sm_{a}" for a in archs)
    spills = "/".join(f"sm_{a}" for a in archs)
    print(f"| file | kernel | {cols} | static smem (B) | spills st/ld B ({spills}) | threads | dynamic smem (B) "
          f"| sm_90 blocks/SM (warps, occupancy) | limited by |")
    print("|---|---|" + "---|" * len(archs) + "---|---|---|---|---|---|")
    for src, kernels in table.items():
        for k in kernels:
            r = [k["arch"].get(a) for a in archs]
            regs = " | ".join(str(x["regs"]) if x else "-" for x in r)
            smem = "/".join(sorted({str(x["smem"]) for x in r if x}))
            sp = " ".join(f"{x['st']}/{x['ld']}" if x else "-" for x in r)
            occ = occupancy_text(k)
            print(f"| {Path(src).name} | {k['label']}{' (hot)' if k['hot'] else ''} | {regs} | {smem} | {sp} | "
                  f"{occ[0]} | {occ[1]} | {occ[2]} | {occ[3]} |")


def report(log_dir, sources, archs, markdown):
    sources = [relative(s) for s in sources]
    table, failures = collect(log_dir, sources, archs)
    if markdown:
        print_markdown(table, archs)
    else:
        print_text(table, archs)
    if failures:
        print("FAILED:", file=sys.stderr if markdown else sys.stdout)
        for f in failures:
            print("  " + f, file=sys.stderr if markdown else sys.stdout)
        return 1
    if not markdown:
        print("no hot kernel spills")
    return 0


def compile_and_report(sources, archs, nvcc_flags, markdown):
    nvcc = os.environ.get("NVCC") or ("nvcc" if subprocess.run(["sh", "-c", "command -v nvcc"], capture_output=True).returncode == 0
                                      else "/usr/local/cuda/bin/nvcc")
    sources = [relative(s) for s in sources]
    with tempfile.TemporaryDirectory() as log_dir:
        for src in sources:
            # seg_kernels_cuda's flags in a Release build (kernels/CMakeLists.txt), so the numbers are CI's.
            cmd = [nvcc, "-std=c++20", "-O3", "-DNDEBUG", "-DSEG_WITH_CUDA=1", f"-I{ROOT}", "-Werror", "all-warnings",
                   "-Xptxas", "-v", *nvcc_flags]
            for a in archs:
                cmd.append(f"-gencode=arch=compute_{a},code=sm_{a}")
            cmd += ["-c", str(ROOT / src), "-o", os.devnull]
            res = subprocess.run(cmd, capture_output=True, text=True)
            if res.returncode:
                sys.stderr.write(res.stdout + res.stderr)
                print(f"{src}: nvcc failed (exit {res.returncode}): {' '.join(cmd)}", file=sys.stderr)
                return 2
            (Path(log_dir) / log_name(src)).write_text(res.stdout + res.stderr)
        return report(log_dir, sources, archs, markdown)


def read_table(path):
    """{(file, kernel): cells} from the Markdown table rows in path (the --markdown layout)."""
    rows = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) != 10 or cells[0] in ("file", "") or set(cells[0]) <= set("-"):
                continue
            rows[(cells[0], cells[1])] = cells
    return rows


def blocks(cell):
    m = re.match(r"(\d+)", cell)
    return int(m.group(1)) if m else None


def diff_tables(old_path, new_path):
    old, new = read_table(old_path), read_table(new_path)
    if not old or not new:
        print(f"ptxas_report diff: no table in {old_path if not old else new_path}", file=sys.stderr)
        return 2
    gained = lost = changed = 0
    for key in sorted(set(old) | set(new)):
        if key not in old or key not in new:
            print(f"{'added' if key not in old else 'removed'}: {key[0]} | {key[1]}")
            continue
        a, b = old[key], new[key]
        if (a[2], a[3], a[5], a[8]) == (b[2], b[3], b[5], b[8]):
            continue
        changed += 1
        ba, bb = blocks(a[8]), blocks(b[8])
        if ba is not None and bb is not None:
            gained += bb > ba
            lost += bb < ba
        print(f"{key[0]} | {key[1]}: regs sm_80 {a[2]} -> {b[2]}, sm_90 {a[3]} -> {b[3]}; spills {a[5]} -> {b[5]}; "
              f"sm_90 blocks/SM {a[8]} -> {b[8]}")
    print(f"{changed} of {len(new)} kernels changed: {gained} gained blocks per SM, {lost} lost some")
    return 0


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "diff":
        if len(sys.argv) != 4:
            print("usage: ptxas_report.py diff OLD NEW (files holding --markdown tables)", file=sys.stderr)
            return 2
        return diff_tables(sys.argv[2], sys.argv[3])
    if len(sys.argv) >= 2 and sys.argv[1] == "capture":
        if len(sys.argv) < 5 or sys.argv[3] != "--":
            print("usage: ptxas_report.py capture LOGDIR -- COMPILER ARGS...", file=sys.stderr)
            return 2
        return capture(sys.argv[2], sys.argv[4:])
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = ap.add_subparsers(dest="mode", required=True)
    rep = sub.add_parser("report", help="the table from the logs of a SEG_PTXAS_REPORT=ON build")
    rep.add_argument("log_dir")
    rep.add_argument("files", nargs="+")
    com = sub.add_parser("compile", help="compile the files with nvcc -Xptxas -v here, then report")
    com.add_argument("--nvcc-flag", action="append", default=[], help="an extra nvcc flag (e.g. -maxrregcount=32)")
    com.add_argument("files", nargs="*")
    for p in (rep, com):
        p.add_argument("--arch", action="append", help="80, 90 (default: both)")
        p.add_argument("--markdown", action="store_true", help="the Markdown table of docs/tensor-cores.md")
    sub.add_parser("capture", help="CMake's compiler launcher: capture LOGDIR -- COMPILER ARGS...")
    sub.add_parser("diff", help="what changed between two --markdown tables: diff OLD NEW")
    args = ap.parse_args()
    archs = tuple(args.arch or ARCHS)
    if args.mode == "report":
        return report(args.log_dir, args.files, archs, args.markdown)
    files = args.files or sorted(relative(f) for f in glob.glob(str(ROOT / "kernels/cuda/gemm_tc_*.cu")) +
                                 glob.glob(str(ROOT / "kernels/cuda/conv2d_tc_*.cu")))
    return compile_and_report(files, archs, args.nvcc_flag, args.markdown)


if __name__ == "__main__":
    sys.exit(main())
