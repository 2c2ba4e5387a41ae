#!/usr/bin/python3
"""tools/sass_loop_report.py on a hand-written SASS listing whose main loop has the shape nvcc gives
the tensor-core kernels: a branch that skips the copies (no next tile), the 16-byte path (LDGSTS),
the element-wise fallback entered by the aligned/unaligned branch (divisions first, then a load
skipped when the element is outside, then a shared store), the join, and the MMAs.

The 16-byte path must keep the copy, the fragment load and the MMA and leave out the whole fallback,
including its divisions before the first LDG: the rule before 2026-12-06 counted those (a test of
that rule fails here).

A second listing has the later shape: the copies in two forms (the inside-K form, short, and the
last tile's form with the byte-count work, ZFILL), the fallback, and a cursor carry taken now and
then. The steady trip must go through the short form, skip the carry and the fallback, and still
issue the copy and the MMA; the 16-byte path (the union of blocks) keeps both forms and the carry.
Pure Python, no cuobjdump needed. Run by ctest as test_sass_loop_report.
"""
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[3]
sys.dont_write_bytecode = True  # no __pycache__ left in the source tree's tools/
sys.path.insert(0, str(ROOT / "tools"))
import sass_loop_report as report  # noqa: E402

LISTING = """
\t\tFunction : _Z6kernelv
        /*0000*/                   ISETP.GE.AND P0, PT, R1, R2, PT ;
        /*0010*/               @P0 BRA 0xc0 ;
        /*0020*/              @!P3 BRA 0x60 ;
        /*0030*/                   IMAD R4, R5, R6, R7 ;
        /*0040*/                   LDGSTS.E.BYPASS.128 [R8], desc[UR4][R4.64], P1 ;
        /*0050*/                   BRA 0xc0 ;
        /*0060*/                   I2F.RP R9, R10 ;
        /*0070*/                   MUFU.RCP R9, R9 ;
        /*0080*/               @P1 BRA 0xa0 ;
        /*0090*/                   LDG.E.U16 R11, desc[UR4][R12.64] ;
        /*00a0*/                   STS.128 [R8], R12 ;
        /*00b0*/                   BRA 0xc0 ;
        /*00c0*/                   LDGDEPBAR ;
        /*00d0*/                   LDSM.16.M88.4 R16, [R20] ;
        /*00e0*/                   HMMA.16816.F32 R24, R16, R18, R24 ;
        /*00f0*/               @P2 BRA 0x0 ;
        /*0100*/                   EXIT ;
"""

TWO_FORMS = """
\t\tFunction : _Z6kernelv
        /*0000*/                   ISETP.GE.AND P0, PT, R1, R2, PT ;
        /*0010*/               @P0 BRA 0x100 ;
        /*0020*/              @!P4 BRA 0x60 ;
        /*0030*/                   IADD3 R4, P1, R5, R6, RZ ;
        /*0040*/                   LDGSTS.E.BYPASS.128 [R8], desc[UR4][R4.64], P1 ;
        /*0050*/                   BRA 0xd0 ;
        /*0060*/              @!P3 BRA 0xb0 ;
        /*0070*/                   IMAD R4, R5, R6, R7 ;
        /*0080*/                   LOP3.LUT R7, R9, 0xf, RZ, 0xc0, !PT ;
        /*0090*/                   LDGSTS.E.BYPASS.128.ZFILL [R8], desc[UR4][R4.64], P1 ;
        /*00a0*/                   BRA 0xd0 ;
        /*00b0*/                   LDG.E.U16 R11, desc[UR4][R12.64] ;
        /*00c0*/                   STS.128 [R8], R12 ;
        /*00d0*/                   ISETP.GE.AND P5, PT, R13, R14, PT ;
        /*00e0*/              @!P5 BRA 0x100 ;
        /*00f0*/                   IMAD.X R15, RZ, RZ, R15, P6 ;
        /*0100*/                   LDGDEPBAR ;
        /*0110*/                   LDSM.16.M88.4 R16, [R20] ;
        /*0120*/                   HMMA.16816.F32 R24, R16, R18, R24 ;
        /*0130*/               @P2 BRA 0x0 ;
        /*0140*/                   EXIT ;
"""


def check_two_forms(failures):
    _, insns = list(report.functions(TWO_FORMS))[0]
    body = [i for i in insns if 0x0 <= i[0] <= 0x130]
    steady = report.steady_path(body)
    if steady is None:
        failures.append("steady trip: none found")
        return
    ops = [op for _, op, _, _ in steady]
    for want in ("IADD3", "LDGSTS.E.BYPASS.128", "LDSM.16.M88.4", "HMMA.16816.F32", "LDGDEPBAR"):
        if want not in ops:
            failures.append(f"steady trip lacks {want}: {ops}")
    for unwanted in ("LOP3.LUT", "LDGSTS.E.BYPASS.128.ZFILL", "IMAD.X", "LDG.E.U16", "STS.128"):
        if unwanted in ops:
            failures.append(f"steady trip holds {unwanted}: {ops}")
    # head (2) + inside-K branch (1) + inside copy (3) + carry test (2) + join to the back edge (4)
    if len(steady) != 12:
        failures.append(f"steady trip: {len(steady)} instructions, want 12: {ops}")
    union = [op for _, op, _, _ in report.aligned_path(body)]
    for want in ("LDGSTS.E.BYPASS.128", "LDGSTS.E.BYPASS.128.ZFILL", "IMAD.X"):
        if want not in union:
            failures.append(f"16-byte path (union) lacks {want}: {union}")
    if "LDG.E.U16" in union:
        failures.append("16-byte path (union) holds the fallback's LDG")


def main():
    funcs = list(report.functions(LISTING))
    failures = []
    if len(funcs) != 1:
        print(f"FAILED: expected one function, parsed {len(funcs)}")
        return 1
    _, insns = funcs[0]
    loop = report.main_loop(insns)
    if loop != (1, 0x0, 0xF0):
        failures.append(f"main loop: got {loop}, want (1 HMMA, 0x0, 0xf0)")
    body = [i for i in insns if 0x0 <= i[0] <= 0xF0]
    fast = report.aligned_path(body)
    ops = [op for _, op, _, _ in fast]
    for want in ("LDGSTS.E.BYPASS.128", "LDSM.16.M88.4", "HMMA.16816.F32", "LDGDEPBAR"):
        if want not in ops:
            failures.append(f"16-byte path lacks {want}")
    for unwanted in ("I2F.RP", "MUFU.RCP", "LDG.E.U16", "STS.128"):
        if unwanted in ops:
            failures.append(f"16-byte path holds the fallback's {unwanted}")
    # head (2) + the aligned branch (1) + the copy (3) + join to the back edge (4)
    if len(fast) != 10:
        failures.append(f"16-byte path: {len(fast)} instructions, want 10: {ops}")
    check_two_forms(failures)
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        return 1
    print(f"ok: main loop 0x0-0xf0, 16-byte path {len(fast)} instructions, the fallback's {len(body) - len(fast)} left out; "
          "steady trip of the two-form listing: 12 instructions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
