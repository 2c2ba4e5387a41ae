#!/usr/bin/python3
"""tools/convert_pth.py must never run code from a .pth file (it loads with weights_only=True).

A .pth whose pickle would create a marker file when unpickled is refused with the script's message,
the marker is not created and no output is written; a plain state_dict next to it converts, so the
check would also notice a script that refuses everything. Needs PyTorch (Debian python3-torch);
without it the test reports itself skipped (exit 77). Run by ctest as test_convert_pth_safety.
"""
import os
import pathlib
import subprocess
import sys
import tempfile

try:
    import torch
except ImportError:
    print("SKIPPED: no PyTorch (apt-get install python3-torch) for tools/convert_pth.py")
    sys.exit(77)

ROOT = pathlib.Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "tools" / "convert_pth.py"


class Payload:
    """Unpickling this calls Path.touch(marker): what a malicious checkpoint would do."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (pathlib.Path.touch, (pathlib.Path(self.marker),))


def convert(src, dst):
    return subprocess.run([sys.executable, str(SCRIPT), "to-safetensors", str(src), str(dst)],
                          capture_output=True, text=True)


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        marker = tmp / "code_ran"
        for legacy in (False, True):
            evil = tmp / ("evil_legacy.pth" if legacy else "evil.pth")
            torch.save({"conv.weight": torch.zeros(2, 3), "x": Payload(str(marker))}, evil,
                       _use_new_zipfile_serialization=not legacy)
            out = tmp / (evil.stem + ".safetensors")
            r = convert(evil, out)
            what = "%s pickle" % ("legacy" if legacy else "zip")
            if r.returncode == 0:
                failures.append("%s: converted, expected a refusal" % what)
            if "refused to unpickle" not in r.stderr:
                failures.append("%s: no refusal message in stderr: %r" % (what, r.stderr[-400:]))
            if marker.exists():
                failures.append("%s: the pickle's code ran (marker file created)" % what)
                marker.unlink()
            if out.exists():
                failures.append("%s: an output file was written" % what)
        plain = tmp / "plain.pth"
        torch.save({"conv.weight": torch.arange(6.0).reshape(2, 3)}, plain)
        r = convert(plain, tmp / "plain.safetensors")
        if r.returncode != 0 or not (tmp / "plain.safetensors").exists():
            failures.append("a plain state_dict did not convert: %s" % r.stderr[-400:])
    for f in failures:
        print("FAIL:", f)
    print("test_convert_pth_safety: %d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
