#!/usr/bin/env python3
"""Runs a `segtrain export` ONNX file in ONNX Runtime (CPU) and compares it with segtrain.

    onnx_check.py MODEL.onnx IMAGE.png [--npy PROBS.npy] [--atol 1e-5] [--batch N] [--min-agree F]

IMAGE is normalised as the model's metadata says (x/255 - mean)/std in float32, exactly as
segtrain's data pipeline does; the probabilities are compared with PROBS.npy, the file
`segtrain predict --npy` wrote for the same image at the same size (one scale). Prints one line:

    onnx_check: 1x150x64x64 max|ort - segtrain| 1.2e-07 (atol 1e-05), argmax agrees on 4096/4096 pixels (0 of them ties within 2*atol)

and exits 0 when max|diff| <= atol and the argmax agrees on at least --min-agree of the pixels
(1.0: every pixel; a pixel where the argmaxes differ but segtrain's probabilities of the two
classes are within 2*atol of each other is a tie and counts as agreeing), 1 otherwise, 2 on bad usage. --batch N feeds the image N times (a model exported
with --dynamic-batch) and checks every copy. Without --npy it only runs the model and prints the
output's shape: the smallest use of an exported file,

    sess = onnxruntime.InferenceSession("model.onnx"); probs = sess.run(None, {"image": x})[0]

Needs numpy, Pillow and onnxruntime (pip install onnxruntime numpy pillow, in a venv).
"""
import argparse
import json
import sys

import numpy as np


def load_image(path, mean, std):
    from PIL import Image
    rgb = np.asarray(Image.open(path).convert("RGB"), dtype=np.float32)  # H, W, 3
    x = (rgb / np.float32(255.0) - np.asarray(mean, dtype=np.float32)) / np.asarray(std, dtype=np.float32)
    return x.transpose(2, 0, 1)[None].astype(np.float32)  # 1, 3, H, W


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("image")
    ap.add_argument("--npy")
    ap.add_argument("--ref64", help="float64 truth for the same image (NCHW .npy): also checked against atol")
    ap.add_argument("--atol", type=float, default=1e-5)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--min-agree", type=float, default=1.0)
    a = ap.parse_args()

    import onnxruntime as ort
    sess = ort.InferenceSession(a.model, providers=["CPUExecutionProvider"])
    meta = sess.get_modelmeta().custom_metadata_map
    mean = json.loads(meta.get("segtrain.mean", "[0.485, 0.456, 0.406]"))
    std = json.loads(meta.get("segtrain.std", "[0.229, 0.224, 0.225]"))
    x = load_image(a.image, mean, std)
    if a.batch > 1:
        x = np.repeat(x, a.batch, axis=0)
    probs = sess.run(["probabilities"], {"image": x})[0]
    shape = "x".join(str(d) for d in probs.shape)
    if not a.npy:
        print(f"onnx_check: {shape} probabilities, sum over classes {probs.sum(axis=1).mean():.6f}")
        return 0
    want = np.load(a.npy)
    if want.shape[1:] != probs.shape[1:]:
        print(f"onnx_check: shape {shape} but {a.npy} is {'x'.join(str(d) for d in want.shape)}")
        return 1
    worst, agree, ties, total = 0.0, 0, 0, 0
    for b in range(probs.shape[0]):
        got = probs[b:b + 1].astype(np.float64)
        diff = np.abs(got - want.astype(np.float64))
        if not np.all(np.isfinite(got)):
            worst = float("inf")  # a NaN or inf from ONNX Runtime is a mismatch, never an error of 0
        else:
            worst = max(worst, float(diff.max()))
        gi, wi = got.argmax(axis=1), want.argmax(axis=1)
        same = gi == wi
        # Where the two argmaxes differ, segtrain's own probabilities of the two classes may be
        # within the tolerance of each other (a tie the comparison cannot resolve): counted apart.
        w64 = want.astype(np.float64)
        p_g = np.take_along_axis(w64, gi[:, None], axis=1)[:, 0]
        p_w = np.take_along_axis(w64, wi[:, None], axis=1)[:, 0]
        tie = ~same & (p_w - p_g <= 2 * a.atol)
        agree += int(same.sum()) + int(tie.sum())
        ties += int(tie.sum())
        total += want.shape[2] * want.shape[3]
    truth_err = 0.0
    if a.ref64:
        truth = np.load(a.ref64).astype(np.float64)
        for b in range(probs.shape[0]):
            d = np.abs(probs[b:b + 1].astype(np.float64) - truth)
            truth_err = max(truth_err, float(d.max()) if np.all(np.isfinite(d)) else float("inf"))
    print(f"onnx_check: {shape} max|ort - segtrain| {worst:.3g}"
          + (f", max|ort - f64| {truth_err:.3g}" if a.ref64 else "")
          + f" (atol {a.atol:.3g}), argmax agrees on {agree}/{total} pixels ({ties} of them ties within 2*atol)")
    return 0 if worst <= a.atol and truth_err <= a.atol and agree >= a.min_agree * total else 1


if __name__ == "__main__":
    sys.exit(main())
