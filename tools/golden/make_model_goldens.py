#!/usr/bin/python3
"""Golden files for the models, made with upstream's own model code and PyTorch.

Runs the unmodified `mit_semseg` package of CSAILVision/semantic-segmentation-pytorch (exported at
run time from the bare mirror, or any checkout given with --upstream; never committed) with weights
from the closed-form formula of closed_form.py, and stores inputs and outputs under
tests/golden/models/. The C++ tests (tests/models/test_model_goldens.cpp) build our models, fill them
with the same formula and compare. Because upstream's code runs on one side and ours on the other, a
misreading of the spec cannot hide on both sides.

    /usr/bin/python3 tools/golden/make_model_goldens.py [--upstream DIR] [--out tests/golden/models]

What is written (activations channels-last [N, H, W, C], conv-weight gradients [O, KH, KW, I/g], the
layouts segtrain uses; float32):

  input.npy                     [2, 49, 41, 3] normalised images shared by every case (odd sizes: every
                                stride-2 step rounds up)
  labels_s8.npy, labels_s4.npy  i32 [2, 7, 6] / [2, 13, 11] labels at stride 8 / 4, -1 = ignore
  architectures.json            per architecture (num_class 150): state_dict entry count, parameter
                                count and an FNV-1a digest of the lines "name dtype shape [conv k s p d g]"
  <case>/eval_prob.npy          [1, 37, 30, K] inference of image 0: softmax after upsampling to 37x30
  <case>/train_logprob.npy      [2, h, w, K] train-mode decoder output (log_softmax), main head
  <case>/train_logprob_deepsup.npy   the deep-supervision head, where there is one
  <case>/metrics.npy            f64 [loss, acc, main_loss, deepsup_loss (0 if none)]
  <case>/grad.<param>.npy       gradients of a few parameters after loss.backward()
  <case>/after.<buffer>.npy     a few BN running statistics after the train-mode forward
  <case>/f32_error.json         PyTorch's own float32 error on this case, per result above: the same
                                case run again in float32 (same float32 weights and input), max
                                |f32 - f64| over each tensor with max |f64| beside it, and the relative
                                L2 error ||f32 - f64|| / ||f64||; for the metrics,
                                loss, main_loss and deepsup_loss as relative errors and acc as the
                                difference in pixels. The C++ bounds are multiples of these.

Settings: one train-mode forward/backward first, with every BatchNorm at momentum 0.9
(MODEL.bn_momentum; the running statistics start from the formula's values, not the identity, and end
near this batch's) and the Dropout2d layers switched off (their masks are random); then inference on
the running statistics the step left. The reference runs in float64 on weights rounded to float32;
the stored tensors are its results rounded to float32.
"""
import argparse
import collections
import collections.abc
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import closed_form  # noqa: E402

MIRROR = "/work/.mirror/CSAILVision+semantic-segmentation-pytorch/repo"
NUM_CLASS = 17
SEG_SIZE = (37, 30)
BN_MOMENTUM = 0.9

# name, encoder, decoder, fc_dim, gradients to store (besides the first conv and the classifier)
CASES = [
    ("mobilenetv2dilated-c1_deepsup", "mobilenetv2dilated", "c1_deepsup", 320,
     ["encoder.features.10.conv.4.weight", "decoder.conv_last_deepsup.weight"]),
    ("mobilenetv2dilated-c1", "mobilenetv2dilated", "c1", 320, ["encoder.features.14.conv.7.weight"]),
    ("mobilenetv2dilated-ppm", "mobilenetv2dilated", "ppm", 320, ["decoder.ppm.3.2.weight"]),
    ("resnet18dilated-ppm_deepsup", "resnet18dilated", "ppm_deepsup", 512,
     ["encoder.layer3.1.bn2.weight", "decoder.conv_last_deepsup.bias"]),
    ("resnet50dilated-ppm_deepsup", "resnet50dilated", "ppm_deepsup", 2048,
     ["encoder.layer4.0.downsample.1.weight", "decoder.conv_last_deepsup.bias"]),
    ("resnet101dilated-ppm_deepsup", "resnet101dilated", "ppm_deepsup", 2048,
     ["encoder.layer3.22.bn3.weight", "decoder.conv_last_deepsup.bias"]),
    ("resnet50-upernet", "resnet50", "upernet", 2048, ["encoder.layer2.0.bn2.weight", "decoder.fpn_in.0.1.weight"]),
    ("resnet101-upernet", "resnet101", "upernet", 2048, ["encoder.layer3.10.bn1.bias", "decoder.ppm_conv.2.1.weight"]),
    ("hrnetv2-c1", "hrnetv2", "c1", 720,
     ["encoder.stage4.2.fuse_layers.0.3.1.weight", "encoder.transition3.3.0.1.weight"]),
]
FIRST_CONV = {"mobilenetv2dilated": "encoder.features.0.0.weight"}  # else encoder.conv1.weight
LAST_CONV = {"ppm": "decoder.conv_last.4", "ppm_deepsup": "decoder.conv_last.4", "upernet": "decoder.conv_last.1"}
# BN whose running statistics are checked after the train-mode forward: first encoder BN, first decoder BN.
FIRST_BN = {"mobilenetv2dilated": "encoder.features.0.1", "hrnetv2": "encoder.bn1"}
DECODER_BN = {"c1": "decoder.cbr.1", "c1_deepsup": "decoder.cbr.1", "ppm": "decoder.ppm.0.2",
              "ppm_deepsup": "decoder.ppm.0.2", "upernet": "decoder.ppm_conv.0.1"}

# Architectures whose state_dict layout is summarised in architectures.json (num_class 150).
ENCODERS = ["mobilenetv2dilated", "resnet18", "resnet18dilated", "resnet50", "resnet50dilated", "resnet101",
            "resnet101dilated", "hrnetv2"]
DECODERS = [("c1", 720), ("c1_deepsup", 320), ("ppm", 512), ("ppm_deepsup", 512), ("ppm_deepsup", 2048),
            ("upernet", 2048), ("upernet_lite", 2048)]


def import_upstream(path):
    # Python >= 3.10 removed the collections aliases upstream's lib/nn uses (spec section 9).
    collections.Sequence = collections.abc.Sequence
    collections.Mapping = collections.abc.Mapping
    sys.path.insert(0, path)
    from mit_semseg.models import models  # noqa: E402
    return models


def export_upstream():
    target = tempfile.mkdtemp(prefix="mit_semseg_")
    archive = subprocess.run(["git", "-C", MIRROR, "archive", "HEAD"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", target], input=archive, check=True)
    return target


class Upstream:
    def __init__(self, models, scratch):
        self.models = models
        # build_encoder downloads ImageNet weights when `weights` is empty; an empty state_dict file
        # turns that off and then loads nothing (strict=False), so the builders run unchanged.
        self.empty = os.path.join(scratch, "empty.pth")
        torch.save({}, self.empty)

    def encoder(self, arch):
        return self.models.ModelBuilder.build_encoder(arch=arch, fc_dim=0, weights=self.empty)

    def decoder(self, arch, fc_dim, num_class, use_softmax=False):
        return self.models.ModelBuilder.build_decoder(arch=arch, fc_dim=fc_dim, num_class=num_class,
                                                      use_softmax=use_softmax)


def nhwc(t):
    return t.detach().permute(0, 2, 3, 1).contiguous().double().numpy()


def layout_text(module):
    """One line per state_dict entry: name dtype shape, plus k s p d g for conv weights."""
    convs = {name + ".weight": m for name, m in module.named_modules() if isinstance(m, torch.nn.Conv2d)}
    dtypes = {torch.float32: "f32", torch.int64: "i64"}
    lines = []
    for name, t in module.state_dict().items():
        line = "%s %s [%s]" % (name, dtypes[t.dtype], ", ".join(str(s) for s in t.shape))
        if name in convs:
            c = convs[name]
            line += " k%d s%d p%d d%d g%d" % (c.kernel_size[0], c.stride[0], c.padding[0], c.dilation[0], c.groups)
        lines.append(line + "\n")
    return "".join(lines)


def architectures(up):
    out = {}
    for arch in ENCODERS:
        m = up.encoder(arch)
        out["encoder:" + arch] = summary(m)
    for arch, fc in DECODERS:
        m = up.decoder(arch, fc, 150)
        out["decoder:%s:%d" % (arch, fc)] = summary(m)
    return out


def summary(m):
    text = layout_text(m)
    return {"entries": len(m.state_dict()), "params": sum(p.numel() for p in m.parameters()),
            "digest": "%016x" % closed_form.fnv1a64(text)}


def run_case(up, name, enc_arch, dec_arch, fc_dim, extra_grads, images, labels, dtype):
    """One case in `dtype`: {result name: float64 numpy array}, the names of the files above."""
    results = {}

    def save(key, array):
        results[key] = np.asarray(array, dtype=np.float64)

    enc = up.encoder(enc_arch)
    dec = up.decoder(dec_arch, fc_dim, NUM_CLASS)
    closed_form.fill_state_dict(enc)
    closed_form.fill_state_dict(dec)
    enc.to(dtype)
    dec.to(dtype)
    deep_sup = dec_arch.endswith("deepsup")
    crit = torch.nn.NLLLoss(ignore_index=-1)
    seg = up.models.SegmentationModule(enc, dec, crit, 0.4 if deep_sup else None)
    x = torch.from_numpy(images).permute(0, 3, 1, 2).contiguous().to(dtype)
    label = torch.from_numpy(labels).long()

    # One training step's forward and backward. BN momentum 0.9: the running statistics move most of
    # the way from the formula's values to this batch's, so the eval pass below runs on statistics
    # that fit the activations (with the formula's alone, deep eval-mode nets saturate the softmax).
    seg.train()
    for m in seg.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            m.momentum = BN_MOMENTUM
        if isinstance(m, torch.nn.Dropout2d):
            m.eval()
    captured = []
    hook = dec.register_forward_hook(lambda mod, inp, o: captured.append(o))
    loss, acc = seg({"img_data": x, "seg_label": label})
    hook.remove()
    pred = captured[0][0] if deep_sup else captured[0]
    save("train_logprob", nhwc(pred))
    valid = int((label >= 0).sum())
    main_loss = crit(pred, label).item()
    ds_loss = 0.0
    if deep_sup:
        save("train_logprob_deepsup", nhwc(captured[0][1]))
        ds_loss = crit(captured[0][1], label).item()
    save("metrics", np.array([loss.item(), acc.item(), main_loss, ds_loss]))
    results["valid_pixels"] = valid
    loss.backward()

    first = FIRST_CONV.get(enc_arch, "encoder.conv1.weight")
    last = LAST_CONV.get(dec_arch, "decoder.conv_last")
    params = dict(seg.named_parameters())
    for pname in [first, last + ".weight", last + ".bias"] + extra_grads:
        g = params[pname].grad.detach()
        if g.dim() == 4:
            g = g.permute(0, 2, 3, 1)
        save("grad." + pname, g.contiguous().numpy())
    buffers = dict(seg.named_buffers())
    for bn in [FIRST_BN.get(enc_arch, "encoder.bn1"), DECODER_BN[dec_arch]]:
        for stat in ("running_mean", "running_var"):
            save("after.%s.%s" % (bn, stat), buffers[bn + "." + stat].numpy())

    # Inference of image 0 at SEG_SIZE (decoder use_softmax on, as eval.py builds it), with the
    # running statistics the step above left.
    seg.eval()
    dec.use_softmax = True
    with torch.no_grad():
        prob = seg({"img_data": x[:1]}, segSize=SEG_SIZE)
    save("eval_prob", nhwc(prob))
    print("%-30s %s loss %.6f acc %.4f  max|logprob| %.2f  max eval prob %.4f" % (
        name, str(dtype)[6:], loss.item(), acc.item(), pred.abs().max().item(), prob.max().item()))
    return results


def save_case(folder, ref, f32):
    """The float64 results as float32 files, and PyTorch's float32 error on each in f32_error.json."""
    os.makedirs(folder, exist_ok=True)
    errors = {}
    for key, value in ref.items():
        if key == "valid_pixels":
            continue
        if key == "metrics":  # f64 file: loss, acc, main_loss, deepsup_loss
            np.save(os.path.join(folder, key + ".npy"), value)
            for i, metric in enumerate(("loss", "acc", "main_loss", "deepsup_loss")):
                if metric == "acc":  # pixel accuracy: how many pixels' argmax float32 flips
                    errors["metrics.acc_pixels"] = float(round(abs(f32[key][i] - value[i]) * ref["valid_pixels"]))
                elif value[i] != 0:
                    errors["metrics." + metric] = float(abs(f32[key][i] - value[i]) / abs(value[i]))
            continue
        np.save(os.path.join(folder, key + ".npy"), value.astype(np.float32))
        err = np.abs(f32[key] - value)
        errors[key] = {"max_abs_err": float(err.max()), "max_abs_ref": float(np.abs(value).max()),
                       "rel_l2_err": float(np.linalg.norm(err) / max(np.linalg.norm(value), 1e-300))}
    with open(os.path.join(folder, "f32_error.json"), "w") as f:
        json.dump(errors, f, indent=1, sort_keys=True)
        f.write("\n")
    for key, e in sorted(errors.items()):
        if isinstance(e, dict):
            print("   %-48s torch f32 err %.2e  max|ref| %.2e  rel %.2e" % (
                key, e["max_abs_err"], e["max_abs_ref"], e["max_abs_err"] / max(e["max_abs_ref"], 1e-30)))
        else:
            print("   %-48s torch f32 %s %.2e" % (key, "pixels" if key.endswith("pixels") else "rel err", e))


def make_labels(rng, n, h, w):
    lab = rng.integers(0, NUM_CLASS, size=(n, h, w)).astype(np.int32)
    lab[rng.random((n, h, w)) < 0.15] = -1
    return lab


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream", help="a checkout of semantic-segmentation-pytorch (default: export HEAD of "
                        + MIRROR + ")")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "..", "tests", "golden", "models"))
    parser.add_argument("--only", nargs="*", help="case names to (re)generate")
    args = parser.parse_args()
    root = os.path.abspath(args.out)
    os.makedirs(root, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix="goldens_")
    up = Upstream(import_upstream(args.upstream or export_upstream()), scratch)
    torch.set_num_threads(2)

    rng = np.random.default_rng(2024)
    images = rng.standard_normal((2, 49, 41, 3)).astype(np.float32)
    labels = {8: make_labels(rng, 2, 7, 6), 4: make_labels(rng, 2, 13, 11)}
    np.save(os.path.join(root, "input.npy"), images)
    np.save(os.path.join(root, "labels_s8.npy"), labels[8])
    np.save(os.path.join(root, "labels_s4.npy"), labels[4])

    if not args.only:
        with open(os.path.join(root, "architectures.json"), "w") as f:
            json.dump(architectures(up), f, indent=1, sort_keys=True)
            f.write("\n")
    for name, enc, dec, fc, grads in CASES:
        if args.only and name not in args.only:
            continue
        stride = 4 if enc in ("hrnetv2", "resnet50", "resnet101") else 8
        ref = run_case(up, name, enc, dec, fc, grads, images, labels[stride], torch.float64)
        f32 = run_case(up, name, enc, dec, fc, grads, images, labels[stride], torch.float32)
        save_case(os.path.join(root, name), ref, f32)
    print("golden files written to", root)


if __name__ == "__main__":
    main()
