#!/usr/bin/env python3
"""Static evidence of the tensor-core kernels: what ptxas says about each kernel, per architecture.

    python3 kernels/lab/tc_static_evidence.py                 # every kernels/cuda/{gemm,conv2d}_tc*.cu
    python3 kernels/lab/tc_static_evidence.py --arch 90 FILE.cu ...

Compiles each file with nvcc -Xptxas -v (the flags of CI's compile stage) and prints one row per
kernel: registers per thread, stack frame and spill bytes, static shared memory, the dynamic shared
memory of its launch (from the tile shape in the kernel's name, as block_tile.h computes it), and
the occupancy those allow (blocks and warps per SM; registers, shared memory, threads, whichever
binds). Exits 1 if a kernel named by a `// hot-kernel: NAME` line of its file spills.
"""
import argparse
import glob
import math
import re
import subprocess
import sys

SM = {  # per-SM limits: registers, shared memory per SM, max threads, max blocks
    "80": (65536, 164 * 1024, 2048, 32),
    "90": (65536, 228 * 1024, 2048, 32),
}


def demangle(names):
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True).stdout
    return out.splitlines()


def label(pretty):
    """A short name: family, element type, tile, orientations, smem layout, sources."""
    if "splitk_reduce_kernel" in pretty:
        return "splitk_reduce_kernel", None
    if "bias_grad" in pretty:
        return re.sub(r"seg::cuda::tc::|void |\(.*", "", pretty), None
    m = re.search(r"TileShape<(\d+), (\d+), (\d+), (\d+), (\d+), (\d+)>", pretty)
    if not m:
        return pretty[:100], None
    bm, bn, bk, wm, wn, st = map(int, m.groups())
    elem = re.search(r"GemmKernel<([^,]+),", pretty).group(1).replace("__nv_bfloat16", "bf16").replace("__half", "f16").replace("float", "tf32")
    majors = re.findall(r"\(seg::cuda::tc::Major\)(\d)", pretty)[:2]
    smem = {"0": "plain", "1": "padded", "2": "swizzled"}[re.search(r"\(seg::cuda::tc::SmemKind\)(\d)", pretty).group(1)]
    warp = "mma.sync" if "MmaSyncWarpTile" in pretty else "wmma"
    srcs = re.findall(r"seg::cuda::tc::(\w+Source)", pretty)
    src = "+".join(s.replace("Source", "") for s in srcs[:2])
    orient = "".join("K" if x == "0" else "N" for x in majors)
    tile = (bm, bn, bk, wm, wn, st, smem, elem, orient, warp)
    return f"{warp} {elem} {bm}x{bn}x{bk} {wm}x{wn}w {st}st {smem} {orient} {src}", tile


def dynamic_smem(tile):
    bm, bn, bk, wm_, wn_, stages, smem, elem, orient, warp = tile
    es = 4 if elem == "tf32" else 2
    pad = 16 // es if smem == "padded" else 0  # one 16-byte chunk per row
    # Major::k (K): [BM][BK] rows; Major::mn (N): [BK][BM] (tile_config.h, OperandTile).
    a = bm * (bk + pad) if orient[0] == "K" else bk * (bm + pad)
    b = bn * (bk + pad) if orient[1] == "K" else bk * (bn + pad)
    pipeline = stages * (a + b) * es
    epilogue = (bm // wm_) * (bn + (8 if warp == "mma.sync" else 4)) * 4  # block_tile.h kStagePad
    return max(pipeline, epilogue), 32 * wm_ * wn_


def occupancy(arch, regs, smem, threads):
    regs_sm, smem_sm, threads_sm, blocks_sm = SM[arch]
    warps = math.ceil(threads / 32)
    per_warp = math.ceil(regs * 32 / 256) * 256
    by_regs = regs_sm // (per_warp * warps) if regs else blocks_sm
    by_smem = smem_sm // (smem + 1024) if smem else blocks_sm
    by_threads = threads_sm // threads
    blocks = min(by_regs, by_smem, by_threads, blocks_sm)
    limit = min((by_regs, "regs"), (by_smem, "smem"), (by_threads, "threads"))[1]
    return blocks, blocks * warps, limit


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", action="append", help="80, 90 (default both)")
    ap.add_argument("files", nargs="*")
    args = ap.parse_args()
    archs = args.arch or ["80", "90"]
    files = args.files or sorted(glob.glob("kernels/cuda/gemm_tc_*.cu") + glob.glob("kernels/cuda/conv2d_tc_*.cu"))
    bad = False
    print(f"{'kernel':<78} {'sm':>3} {'regs':>4} {'stack':>5} {'spill':>5} {'smem':>7} {'thr':>4} {'blk/SM':>6} {'warps':>5} limit")
    for f in files:
        hot = set(re.findall(r"//\s*hot-kernel:\s*(\w+)", open(f).read()))
        for arch in archs:
            cmd = ["nvcc", "-std=c++20", "-I.", f"-gencode=arch=compute_{arch},code=sm_{arch}", "-Werror", "all-warnings",
                   "-c", f, "-o", "/dev/null", "-Xptxas", "-v"]
            res = subprocess.run(cmd, capture_output=True, text=True)
            if res.returncode:
                print(res.stderr)
                sys.exit(2)
            rows, cur = [], None
            for line in res.stderr.splitlines():
                m = re.search(r"Compiling entry function '(\w+)'", line)
                if m:
                    cur = {"mangled": m.group(1)}
                    rows.append(cur)
                    continue
                if cur is None:
                    continue
                m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
                if m:
                    cur["stack"], cur["spill"] = int(m.group(1)), int(m.group(2)) + int(m.group(3))
                m = re.search(r"Used (\d+) registers", line)
                if m:
                    cur["regs"] = int(m.group(1))
                    s = re.search(r"(\d+) bytes smem", line)
                    cur["static_smem"] = int(s.group(1)) if s else 0
            print(f"== {f} (sm_{arch})")
            for r, pretty in zip(rows, demangle([r["mangled"] for r in rows])):
                name, tile = label(pretty)
                smem, threads = (dynamic_smem(tile) if tile else (0, 256))
                smem += r.get("static_smem", 0)
                blocks, warps, limit = occupancy(arch, r.get("regs", 0), smem, threads)
                flag = ""
                if r.get("spill", 0) and any(h in pretty for h in hot):
                    flag, bad = "  SPILL IN HOT KERNEL", True
                print(f"{name:<78} {arch:>3} {r.get('regs', 0):>4} {r.get('stack', 0):>5} {r.get('spill', 0):>5} "
                      f"{smem:>7} {threads:>4} {blocks:>6} {warps:>5} {limit}{flag}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
