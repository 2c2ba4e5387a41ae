#!/usr/bin/python3
"""tools/ptxas_report.py's launch configuration of the tensor-core kernels against the launches.

ptxas_report.py computes each gemm_tc_kernel's threads and dynamic shared memory from its name
(tc_kernel: the tile shape, the orientations, the shared-memory layout), re-deriving in Python what
kernels/cuda/gemm/block_tile.h computes as GemmKernel::kSmemBytes; its occupancy column (blocks per
SM in docs/tensor-cores.md) rests on that number. Here the simulator launches the kernels (the
lab's GEMM and convolution versions, f16 and f32, both tiles) with SEG_SIM_PROFILE=1, whose
per-launch line names the kernel instance and the block and dynamic shared memory it was launched
with; every instance's numbers must equal ptxas_report's. Each shared-memory layout (plain, padded,
swizzled, skewed) must be among those checked.

    test_ptxas_report_smem.py LAB_TC_SIM    (ctest: test_ptxas_report_smem)
"""
import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[3]
sys.dont_write_bytecode = True  # no __pycache__ left in the source tree's tools/
sys.path.insert(0, str(ROOT / "tools"))
import ptxas_report as report  # noqa: E402

LAUNCH = re.compile(r"^seg::sim profile: (gemm_tc_kernel<.*>) <<<grid \([0-9,]+\), block \((\d+),1,1\), "
                    r"(\d+) B dynamic shared>>>")
RUNS = [
    ["gemm"],
    ["conv", "--tile", "large"],
    ["conv", "--tile", "small"],
    ["conv", "--dtype", "f32", "--tile", "large"],
    ["conv", "--dtype", "f32", "--tile", "small"],
]


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    lab = sys.argv[1]
    env = dict(os.environ, SEG_SIM_PROFILE="1")
    seen = {}  # kernel name -> the set of (threads, dynamic smem) it was launched with
    for args in RUNS:
        run = subprocess.run([lab] + args, env=env, capture_output=True, text=True)
        if run.returncode != 0:
            print(f"FAIL: {lab} {' '.join(args)} exited {run.returncode}\n{run.stdout[-2000:]}{run.stderr[-2000:]}")
            return 1
        if "(no counters: sanitizer build)" in run.stdout:
            print("SKIP: this lab_tc_sim has no counters (a sanitizer build): no profile to read")
            return 77
        for line in run.stderr.splitlines():
            m = LAUNCH.match(line)
            if m:
                seen.setdefault(m.group(1), set()).add((int(m.group(2)), int(m.group(3))))
    failures, kinds = [], set()
    for name, launched in sorted(seen.items()):
        got = report.tc_kernel(name)
        if got is None:
            failures.append(f"ptxas_report.tc_kernel does not parse {name}")
            continue
        label, threads, dyn = got
        kinds.add(label.split()[4])  # "mma.sync tf32 64x64x16 3st skewed ...": the layout
        if launched != {(threads, dyn)}:
            failures.append(f"{label}: launched with (threads, dynamic smem) {sorted(launched)}, "
                            f"ptxas_report says ({threads}, {dyn})\n    {name}")
    missing = {"plain", "padded", "swizzled", "skewed"} - kinds
    if missing:
        failures.append(f"no kernel with the layout(s) {sorted(missing)} was launched: the check does not cover them")
    if len(seen) < 20:
        failures.append(f"only {len(seen)} kernel instances launched (expected the lab's 39 or so)")
    for f in failures:
        print("FAIL:", f)
    print(f"{len(seen)} kernel instances, layouts {sorted(kinds)}: "
          f"{'all match' if not failures else str(len(failures)) + ' failure(s)'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
