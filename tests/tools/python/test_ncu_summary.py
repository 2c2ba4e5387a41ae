#!/usr/bin/python3
"""tools/ncu_summary.py on hand-written files laid out as `ncu --import R --page raw --csv` prints
them: a header of metric names after the launch columns, a units row, one row per kernel, values
quoted and sometimes with thousands separators. No ncu needed (this machine has none). The layout
is read from Nsight Compute's documentation, not from a file a real ncu wrote here: the GPU check
keeps the raw files beside the summary, so a first real run can correct it.
Run by ctest as test_ncu_summary.
"""
import contextlib
import io
import pathlib
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[3]
sys.dont_write_bytecode = True
sys.path.insert(0, str(ROOT / "tools"))
import ncu_summary  # noqa: E402

HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
          '"Device","CC","gpu__time_duration.sum","launch__registers_per_thread",'
          '"sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",'
          '"smsp__issue_active.avg.pct_of_peak_sustained_active","smsp__warps_active.avg.per_cycle_active",'
          '"smsp__average_warps_active_per_issue_active.ratio",'
          '"smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",'
          '"smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",'
          '"smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio",'
          '"smsp__average_warps_issue_stalled_barrier_not_issued_per_issue_active.ratio",'
          '"smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio",'
          '"smsp__average_warps_issue_stalled_wait_per_issue_active.ratio",'
          '"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",'
          '"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",'
          '"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",'
          '"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",'
          '"gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"')
UNITS_US = '"","","","","","","","","","","","usecond","register/thread","%","%","warp","ratio","ratio","ratio","ratio","ratio","ratio","ratio","","","","","%"'
ROW_V14 = ('"0","123","lab_tc","gpu","void seg::cuda::tc::gemm_tc_kernel<...>(...)","1","7","(256, 1, 1)",'
           '"(32, 32, 1)","0","9.0","250.5","127","61.2","40.5","3.9","9.6","3.1","0.4","2.2","7.0",'
           '"1.8","0.9","0","12,288","2,048","8,192","18.2"')
UNITS_NS = UNITS_US.replace("usecond", "nsecond")
ROW_NS = ROW_V14.replace('"250.5"', '"1,000,000"')


def run(files):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = ncu_summary.main(files)
    return rc, out.getvalue(), err.getvalue()


def markdown_row(out, i):
    """Row i (0 = the first kernel) of a --markdown table, as {column: cell}."""
    line = out.strip().splitlines()[2 + i]
    return dict(zip(["kernel"] + ncu_summary.COLUMNS, (c.strip() for c in line.strip().strip("|").split("|"))))


def write(folder, name, lines):
    p = pathlib.Path(folder) / name
    p.write_text("\n".join(lines) + "\n")
    return str(p)


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def main():
    with tempfile.TemporaryDirectory() as d:
        # One kernel, times in microseconds, 2*4096^3 FLOP.
        f = write(d, "ncu_gemm_v14.csv", ["==PROF== Connected to process", HEADER, UNITS_US, ROW_V14])
        rc, out, err = run(["--markdown", f + "@137438953472"])
        check(rc == 0, f"rc {rc}, stderr {err}")
        lines = out.strip().splitlines()
        check(len(lines) == 3, f"a header, a rule and one row: {out}")
        row = markdown_row(out, 0)
        check(row["kernel"] == "gemm_v14", row)
        check(row["time"] == "250.5", row)
        check(row["TFLOP/s"] == "548.7", row)  # 137438953472 / 250.5e-6 / 1e12
        check(row["tensor%"] == "61.2" and row["issue%"] == "40.5" and row["warps"] == "3.9", row)
        check(row["regs"] == "127" and row["cpi"] == "9.6", row)
        # The largest reasons first, at most four; barrier_not_issued (7.0, the largest value) is a
        # variant of barrier, not a reason of its own.
        check(row["stalls"] == "barrier 3.1, math_pipe_throttle 2.2, short_scoreboard 1.8, wait 0.9", row)
        # 0 conflicts over 12288 load wavefronts; 2048 over 8192 store wavefronts.
        check(row["conflicts"] == "0.00/0.25", row)
        check(row["dram%"] == "18.2", row)

        # Nanoseconds with thousands separators: 1,000,000 ns = 1000 us. No FLOP: no TFLOP/s.
        g = write(d, "ncu_conv_fwd.csv", [HEADER, UNITS_NS, ROW_NS, ROW_NS.replace('"0","123"', '"1","123"')])
        rc, out, err = run([g])
        check(rc == 0, err)
        rows = out.strip().splitlines()[1:]
        check(len(rows) == 2 and rows[0].split()[0] == "conv_fwd#1" and rows[1].split()[0] == "conv_fwd#2", out)
        check(rows[0].split()[1] == "1000.0" and rows[0].split()[2] == "-", out)

        # A metric the report lacks reads "-", not 0.
        short_header = HEADER.replace("gpu__dram_throughput", "some_other_metric")
        h = write(d, "ncu_x.csv", [short_header, UNITS_US, ROW_V14])
        rc, out, _ = run(["--markdown", h])
        check(rc == 0 and markdown_row(out, 0)["dram%"] == "-" and markdown_row(out, 0)["tensor%"] == "61.2", out)

        # A file that is not a raw page (ncu failed): exit 1, its first line shown.
        bad = write(d, "ncu_bad.csv", ["==ERROR== Failed to initialize the profiler: LibraryNotLoaded"])
        rc, _, err = run([bad, f])
        check(rc == 1 and "LibraryNotLoaded" in err, err)
        rc, _, err = run([str(pathlib.Path(d) / "missing.csv")])
        check(rc == 1 and "no such file" in err, err)
    print("test_ncu_summary: ok")


if __name__ == "__main__":
    main()
