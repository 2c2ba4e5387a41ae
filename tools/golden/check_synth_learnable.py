#!/usr/bin/python3
"""Is the synthetic dataset a fair, learnable task? A reference check with PyTorch (not a test).

Trains upstream's MobileNetV2-dilated + C1 (from scratch, BN momentum 0.1) on a dataset written by
`segtrain data synth` for a fixed wall-clock budget on the CPU, then reports single-scale mIoU and
pixel accuracy on its validation split, computed as upstream's eval.py does (logits upsampled to the
label size, IoU from intersections and unions summed over the whole split). The numbers are what
the demo (issue 7) can expect from the same recipe in segtrain; docs/data-pipeline.md records them.

    apt-get install python3-torch python3-pil python3-numpy
    build/bin/segtrain data synth --out /tmp/synth --train 2000 --val 200
    /usr/bin/python3 tools/golden/check_synth_learnable.py /tmp/synth --seconds 300 --threads 2

Data handling follows upstream's TrainDataset in spirit (random short side from --sizes, long side
capped, padding to a multiple of 8, labels NEAREST-downsampled by 8, flips), with images decoded once
and kept in memory so that the budget goes to training.
"""
import argparse
import json
import os
import random
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from PIL import Image

MEAN = np.array([0.485, 0.456, 0.406], np.float32)
STD = np.array([0.229, 0.224, 0.225], np.float32)


# ----------------------------------------------------------------------------- model
def conv_bn(inp, oup, k, s, d=1, groups=1, relu=True, momentum=0.1):
    layers = [nn.Conv2d(inp, oup, k, s, d * (k // 2), dilation=d, groups=groups, bias=False),
              nn.BatchNorm2d(oup, momentum=momentum)]
    if relu:
        layers.append(nn.ReLU6(inplace=True))
    return layers


class InvertedResidual(nn.Module):
    def __init__(self, inp, oup, stride, t, dilation):
        super().__init__()
        hidden = inp * t
        self.use_res = stride == 1 and inp == oup
        layers = [] if t == 1 else conv_bn(inp, hidden, 1, 1)
        layers += conv_bn(hidden, hidden, 3, stride, dilation, groups=hidden)
        layers += conv_bn(hidden, oup, 1, 1, relu=False)
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        return x + self.conv(x) if self.use_res else self.conv(x)


class MobileNetV2Dilated(nn.Module):
    """features[:-1] of MobileNetV2 with blocks 7.. dilated by 2 and 14.. by 4 (output stride 8)."""

    def __init__(self):
        super().__init__()
        cfg = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]
        blocks = [nn.Sequential(*conv_bn(3, 32, 3, 2))]
        inp, index = 32, 1
        for t, c, n, s in cfg:
            for i in range(n):
                stride = s if i == 0 else 1
                dilation = 1
                if index >= 14:
                    dilation = 2 if index == 14 else 4
                    stride = 1
                elif index >= 7:
                    dilation = 1 if index == 7 else 2
                    stride = 1
                blocks.append(InvertedResidual(inp, c, stride, t, dilation))
                inp, index = c, index + 1
        self.features = nn.Sequential(*blocks)

    def forward(self, x):
        return self.features(x)


class C1(nn.Module):
    def __init__(self, num_class, fc_dim=320):
        super().__init__()
        self.cbr = nn.Sequential(*conv_bn(fc_dim, fc_dim // 4, 3, 1))
        self.conv_last = nn.Conv2d(fc_dim // 4, num_class, 1)

    def forward(self, x):
        return self.conv_last(self.cbr(x))


# ----------------------------------------------------------------------------- data
def load_split(root, list_name):
    samples = []
    with open(os.path.join(root, list_name)) as f:
        for line in f:
            r = json.loads(line)
            img = Image.open(os.path.join(root, r["fpath_img"])).convert("RGB")
            seg = Image.open(os.path.join(root, r["fpath_segm"]))
            samples.append((img, seg))
    return samples


def round_up(x, p):
    return ((x - 1) // p + 1) * p


def to_tensor(img):
    a = (np.asarray(img, np.float32) / 255.0 - MEAN) / STD
    return torch.from_numpy(a.transpose(2, 0, 1).copy())


def train_batch(samples, batch, sizes, max_size, rng):
    # one orientation per batch, one short side per batch (upstream's grouping and scale choice)
    portrait = rng.random() < 0.5
    group = [s for s in samples if (s[0].size[1] > s[0].size[0]) == portrait] or samples
    picks = [group[rng.randrange(len(group))] for _ in range(batch)]
    short = rng.choice(sizes)
    scaled = []
    for img, seg in picks:
        w, h = img.size
        s = min(short / min(w, h), max_size / max(w, h))
        scaled.append((int(w * s), int(h * s)))
    bw = round_up(max(w for w, _ in scaled), 8)
    bh = round_up(max(h for _, h in scaled), 8)
    x = torch.zeros(batch, 3, bh, bw)
    y = torch.full((batch, bh // 8, bw // 8), -1, dtype=torch.long)
    for i, ((img, seg), (w, h)) in enumerate(zip(picks, scaled)):
        if rng.random() < 0.5:
            img, seg = img.transpose(Image.FLIP_LEFT_RIGHT), seg.transpose(Image.FLIP_LEFT_RIGHT)
        img = img.resize((w, h), Image.BILINEAR)
        seg = seg.resize((w, h), Image.NEAREST)
        canvas = Image.new("L", (round_up(w, 8), round_up(h, 8)), 0)
        canvas.paste(seg, (0, 0))
        seg = canvas.resize((canvas.size[0] // 8, canvas.size[1] // 8), Image.NEAREST)
        x[i, :, :h, :w] = to_tensor(img)
        lab = torch.from_numpy(np.asarray(seg, np.int64)) - 1
        y[i, :lab.shape[0], :lab.shape[1]] = lab
    return x, y


# ----------------------------------------------------------------------------- main
def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("root")
    ap.add_argument("--seconds", type=float, default=300)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--sizes", default="128,144,160")
    ap.add_argument("--max-size", type=int, default=256)
    ap.add_argument("--eval-size", type=int, default=160)
    ap.add_argument("--lr", type=float, default=0.02)
    ap.add_argument("--iters", type=int, default=0, help="poly schedule length (0 = estimate from --seconds)")
    ap.add_argument("--seed", type=int, default=304)
    ap.add_argument("--eval-every", type=int, default=0, help="also evaluate every N iterations (0 = only at the end)")
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    num_class = sum(1 for _ in open(os.path.join(args.root, [f for f in os.listdir(args.root) if f.startswith("color")][0]))) - 1
    train = load_split(args.root, "training.odgt")
    val = load_split(args.root, "validation.odgt")
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"{len(train)} train / {len(val)} val images, {num_class} classes, sizes {sizes}, batch {args.batch}")

    encoder, decoder = MobileNetV2Dilated(), C1(num_class)
    for m in decoder.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight)
    params = list(encoder.parameters()) + list(decoder.parameters())
    opt = torch.optim.SGD(params, lr=args.lr, momentum=0.9, weight_decay=1e-4)

    # Estimate the iteration count that fits the budget from a few timed steps, for the poly schedule.
    start = time.time()
    it, max_iters = 0, args.iters or 10 ** 9
    encoder.train(), decoder.train()
    while time.time() - start < args.seconds and it < max_iters:
        lr = args.lr * (1 - it / max_iters) ** 0.9 if max_iters < 10 ** 9 else args.lr
        for g in opt.param_groups:
            g["lr"] = lr
        x, y = train_batch(train, args.batch, sizes, args.max_size, rng)
        logits = decoder(encoder(x))
        loss = F.cross_entropy(logits, y, ignore_index=-1)
        opt.zero_grad()
        loss.backward()
        opt.step()
        it += 1
        if it == 10 and not args.iters:
            per_iter = (time.time() - start) / it
            max_iters = int(args.seconds / per_iter)
            print(f"{per_iter:.2f} s/iter -> poly schedule of {max_iters} iterations")
        if it % 50 == 0:
            print(f"iter {it} loss {loss.item():.3f} lr {lr:.4f} {time.time() - start:.0f}s", flush=True)
        if args.eval_every and it % args.eval_every == 0 and it < max_iters:
            print(evaluate(encoder, decoder, val[:100], num_class, args.eval_size), flush=True)
    train_seconds = time.time() - start

    report = evaluate(encoder, decoder, val, num_class, args.eval_size)
    print(f"trained {it} iterations ({it * args.batch} images) in {train_seconds:.0f} s")
    print(report)


def evaluate(encoder, decoder, val, num_class, eval_size):
    encoder.eval(), decoder.eval()
    inter = np.zeros(num_class)
    union = np.zeros(num_class)
    correct = labelled = 0
    with torch.no_grad():
        for img, seg in val:
            w, h = img.size
            s = min(eval_size / min(w, h), 1000 / max(w, h))
            tw, th = round_up(int(w * s), 8), round_up(int(h * s), 8)
            logits = decoder(encoder(to_tensor(img.resize((tw, th), Image.BILINEAR))[None]))
            pred = F.interpolate(logits, size=(h, w), mode="bilinear", align_corners=False).argmax(1)[0].numpy()
            lab = np.asarray(seg, np.int64) - 1
            valid = lab >= 0
            correct += (pred[valid] == lab[valid]).sum()
            labelled += valid.sum()
            for c in range(num_class):
                p, t = (pred == c) & valid, lab == c
                inter[c] += (p & t).sum()
                union[c] += (p | t).sum()
    encoder.train(), decoder.train()
    iou = inter / np.maximum(union, 1)
    return ("per-class IoU: " + " ".join(f"{v:.3f}" for v in iou) +
            f"\nmIoU {iou.mean():.4f}  pixel accuracy {correct / labelled:.4f}")


if __name__ == "__main__":
    main()
