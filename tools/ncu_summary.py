#!/usr/bin/python3
"""One line per profiled kernel from Nsight Compute's raw metrics: where the time of a tensor-core
kernel goes (tools/gpu_check.sh, stage ncu; docs/performance.md, "Why a kernel is slow: the ncu
stage").

    tools/ncu_summary.py [--markdown] CSV[@FLOP] ...

Each CSV is what `ncu --import REPORT --page raw --csv` prints: a header row of metric names (with
"Kernel Name" among them), usually a row of units, then one row per profiled kernel. FLOP, when
given, is the kernel's floating-point operations (2*M*N*K for a GEMM), for a TFLOP/s column. The
label of a row is the file's name without its directory, "ncu_" and ".csv".

The columns, and the question each answers (the metric it reads; "-" when the report lacks it):
  time        how long the profiled launch ran, in us (gpu__time_duration.sum)
  TFLOP/s     FLOP / time
  tensor%     how busy the tensor pipe was, in % of its peak (sm__pipe_tensor*_cycles_active
              ...pct_of_peak_sustained_active; the first such metric): the number to raise
  issue%      how often a scheduler issued an instruction, in % of cycles
              (smsp__issue_active.avg.pct_of_peak_sustained_active): near 100 means issue-bound
              (too many instructions per HMMA: tools/sass_loop_report.py), low means stalled
  warps       warps resident per scheduler, on average (smsp__warps_active.avg.per_cycle_active)
  regs        registers per thread (launch__registers_per_thread)
  cpi         cycles between two issues of one warp (smsp__average_warps_active_per_issue_active)
  stalls      the largest parts of cpi, by reason, in cycles per issue
              (smsp__average_warps_issue_stalled_REASON_per_issue_active.ratio): barrier = waiting
              at __syncthreads, long_scoreboard = waiting for global memory, short_scoreboard =
              shared memory (ldmatrix) results, math_pipe_throttle = the tensor pipe is full (the
              good stall), mio_throttle = the shared-memory queue is full, wait = fixed latency,
              not_selected = another warp issued (also good)
  conflicts   shared-memory bank conflicts per wavefront, loads/stores
              (l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{ld,st}.sum over
              l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{ld,st}.sum)
  dram%       DRAM throughput in % of peak (gpu__dram_throughput or dram__throughput
              .avg.pct_of_peak_sustained_elapsed)

Exit 0 when every file gave at least one kernel, 1 otherwise (a file ncu did not write, or whose
layout this parser does not know: its first lines are printed so that the next session can see it).
"""
import argparse
import csv
import os
import re
import sys

# Time units ncu prints in the units row, in microseconds.
TIME_UNITS = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3, "second": 1e6, "s": 1e6}


def number(text):
    """A metric value as a float: ncu may print thousands separators ("1,234.5"); None if not a number."""
    try:
        return float(text.replace(",", "").strip())
    except (ValueError, AttributeError):
        return None


def read_report(path):
    """(rows, units): rows = one {metric: text} per kernel, units = {metric: unit} (maybe empty)."""
    with open(path, newline="", encoding="utf-8", errors="replace") as f:
        lines = list(csv.reader(f))
    header_at = next((i for i, r in enumerate(lines) if "Kernel Name" in r), None)
    if header_at is None:
        return [], {}
    header = lines[header_at]
    units, rows = {}, []
    id_col = header.index("ID") if "ID" in header else None
    for r in lines[header_at + 1:]:
        if len(r) != len(header):
            continue
        # The units row: no kernel id (its ID cell is empty) and no kernel name.
        if (id_col is not None and number(r[id_col]) is None) or r[header.index("Kernel Name")] == "":
            units = dict(zip(header, r))
            continue
        rows.append(dict(zip(header, r)))
    return rows, units


def pick(row, pattern):
    """(name, value) of the first metric whose name matches pattern and whose value is a number."""
    for name, text in row.items():
        if re.search(pattern, name):
            v = number(text)
            if v is not None:
                return name, v
    return None, None


def summarize(row, units, flop):
    """The columns of one kernel as a dict of strings."""
    out = {}
    name, t = pick(row, r"^gpu__time_duration\.sum$")
    us = t * TIME_UNITS.get(units.get(name, "nsecond"), 1e-3) if t is not None else None
    out["time"] = f"{us:.1f}" if us is not None else "-"
    out["TFLOP/s"] = f"{flop / (us * 1e-6) / 1e12:.1f}" if (flop and us) else "-"

    def pct(pattern):
        _, v = pick(row, pattern)
        return f"{v:.1f}" if v is not None else "-"

    out["tensor%"] = pct(r"^sm__pipe_tensor.*cycles_active.*pct_of_peak_sustained_active$")
    out["issue%"] = pct(r"^smsp__issue_active\.avg\.pct_of_peak_sustained_active$")
    _, warps = pick(row, r"^smsp__warps_active\.avg\.per_cycle_active$")
    out["warps"] = f"{warps:.1f}" if warps is not None else "-"
    _, regs = pick(row, r"^launch__registers_per_thread$")
    out["regs"] = f"{regs:.0f}" if regs is not None else "-"
    _, cpi = pick(row, r"^smsp__average_warps_active_per_issue_active\.ratio$")
    out["cpi"] = f"{cpi:.1f}" if cpi is not None else "-"
    stalls = []
    for m, text in row.items():
        s = re.match(r"^smsp__average_warps_issue_stalled_(\w+?)_per_issue_active\.ratio$", m)
        if s and not s.group(1).endswith("not_issued") and number(text) is not None:
            stalls.append((number(text), s.group(1)))
    stalls.sort(key=lambda x: (-x[0], x[1]))
    out["stalls"] = ", ".join(f"{n} {v:.1f}" for v, n in stalls[:4] if v >= 0.05) or "-"

    def ratio(op):
        _, c = pick(row, rf"^l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{op}\.sum$")
        _, w = pick(row, rf"^l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{op}\.sum$")
        return f"{c / w:.2f}" if (c is not None and w) else "-"

    out["conflicts"] = f"{ratio('ld')}/{ratio('st')}"
    out["dram%"] = pct(r"^(gpu__dram_throughput|dram__throughput)\.avg\.pct_of_peak_sustained_elapsed$")
    return out


COLUMNS = ["time", "TFLOP/s", "tensor%", "issue%", "warps", "regs", "cpi", "conflicts", "dram%", "stalls"]


def label_of(path):
    base = os.path.basename(path)
    base = re.sub(r"\.csv$", "", base)
    return re.sub(r"^ncu_", "", base)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--markdown", action="store_true", help="a Markdown table instead of aligned text")
    ap.add_argument("reports", nargs="+", metavar="CSV[@FLOP]")
    args = ap.parse_args(argv)
    table, ok = [], True
    for spec in args.reports:
        path, _, flop_text = spec.partition("@")
        flop = number(flop_text) if flop_text else None
        if not os.path.isfile(path):
            print(f"ncu_summary: {path}: no such file (the profile did not run or did not finish)", file=sys.stderr)
            ok = False
            continue
        rows, units = read_report(path)
        if not rows:
            with open(path, encoding="utf-8", errors="replace") as f:
                head = "".join(f.readlines()[:3])[:400]
            print(f"ncu_summary: {path}: no kernel rows found (no header with 'Kernel Name'). It begins:\n{head}",
                  file=sys.stderr)
            ok = False
            continue
        for i, row in enumerate(rows):
            label = label_of(path) + (f"#{i + 1}" if len(rows) > 1 else "")
            cells = summarize(row, units, flop)
            cells["kernel"] = label
            table.append(cells)
    cols = ["kernel"] + COLUMNS
    if args.markdown:
        print("| " + " | ".join(cols) + " |")
        print("|" + "---|" * len(cols))
        for c in table:
            print("| " + " | ".join(c[k] for k in cols) + " |")
    elif table:
        width = {k: max(len(k), *(len(c[k]) for c in table)) for k in cols}
        print("  ".join(k.ljust(width[k]) for k in cols).rstrip())
        for c in table:
            print("  ".join(c[k].ljust(width[k]) for k in cols).rstrip())
    return 0 if ok and table else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
