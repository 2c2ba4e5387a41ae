#!/usr/bin/python3
"""Checkpoint fixtures: upstream .pth files converted by tools/convert_pth.py, for the C++ tests.

Builds upstream's own c1_deepsup decoder (fc_dim 32, num_class 5: small enough to commit) with the
closed-form weights of closed_form.py and num_batches_tracked = 7, saves it with torch.save in both
pickle formats (zip, and the legacy one of PyTorch < 1.6 that the released upstream models use),
converts each with tools/convert_pth.py, and checks that converting back gives the same state_dict.
tests/models/test_checkpoint.cpp loads the two .safetensors files into our decoder.
Also converts a .pth holding every dtype segtrain reads (f32 f64 f16 bf16 i32 i64 u8; a vector, a
scalar and an empty tensor each) for tests/core/test_safetensors.cpp.

    /usr/bin/python3 tools/golden/make_checkpoint_fixtures.py [--upstream DIR] [--out tests/golden/checkpoints]
"""
import argparse
import collections
import os
import subprocess
import sys
import tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import closed_form  # noqa: E402
import make_model_goldens  # noqa: E402

CONVERT = os.path.join(HERE, "..", "convert_pth.py")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream")
    parser.add_argument("--out", default=os.path.join(HERE, "..", "..", "tests", "golden", "checkpoints"))
    args = parser.parse_args()
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix="ckpt_")
    models = make_model_goldens.import_upstream(args.upstream or make_model_goldens.export_upstream())
    up = make_model_goldens.Upstream(models, scratch)

    dec = up.decoder("c1_deepsup", 32, 5)
    closed_form.fill_state_dict(dec)
    for name, t in dec.state_dict(keep_vars=True).items():
        if name.endswith("num_batches_tracked"):
            t.fill_(7)
    sd = dec.state_dict()
    for fmt, zipfile in (("zip", True), ("legacy", False)):
        pth = os.path.join(scratch, "decoder_%s.pth" % fmt)
        torch.save(sd, pth, _use_new_zipfile_serialization=zipfile)
        st = os.path.join(out, "c1_deepsup_fc32_k5_from_%s_pth.safetensors" % fmt)
        subprocess.run([sys.executable, CONVERT, "to-safetensors", pth, st], check=True)
        # And back: both pickle formats must give the original state_dict, entry for entry.
        for back_legacy in (False, True):
            back = os.path.join(scratch, "back.pth")
            cmd = [sys.executable, CONVERT, "to-pth", st, back] + (["--legacy"] if back_legacy else [])
            subprocess.run(cmd, check=True)
            again = torch.load(back)
            assert list(again.keys()) == list(sd.keys()), "names or order changed"
            for k in sd:
                assert again[k].dtype == sd[k].dtype and torch.equal(again[k], sd[k]), k
            up.decoder("c1_deepsup", 32, 5).load_state_dict(again, strict=True)
    # Every dtype: values -3..3 (0..6 for u8), a scalar 5, an empty [0, 3].
    sd = collections.OrderedDict()
    for dt in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64, torch.uint8):
        name = str(dt).split(".")[-1]
        sd[name + ".vec"] = (torch.arange(7) - (0 if dt == torch.uint8 else 3)).to(dt)
        sd[name + ".scalar"] = torch.tensor(5, dtype=dt)
        sd[name + ".empty"] = torch.zeros(0, 3, dtype=dt)
    pth = os.path.join(scratch, "dtypes.pth")
    torch.save(sd, pth, _use_new_zipfile_serialization=False)
    subprocess.run([sys.executable, CONVERT, "to-safetensors", pth, os.path.join(out, "all_dtypes_from_pth.safetensors")],
                   check=True)
    print("fixtures written to", out)


if __name__ == "__main__":
    main()
