#!/usr/bin/python3
"""Times whole training steps of an upstream model in PyTorch, for `segtrain bench` to compare with.

Builds the model with upstream's own code (mit_semseg, from a checkout given with --upstream, or
exported from the fetched mirror), channels_last (or NCHW with --memory-format nchw), float32, SGD with momentum, and times
forward + backward + step on random images, at the given batch, size and thread count:

    /usr/bin/python3 tools/bench/torch_step.py --model mobilenetv2dilated-c1_deepsup --size 256 --batch 4 --threads 2
    build/bin/segtrain bench --model mobilenetv2dilated-c1_deepsup --size 256 --batch 4 --threads 2

Needs Debian's python3-torch; nothing in segtrain's build or tests depends on it.
"""
import argparse
import atexit
import collections
import collections.abc
import os
import shutil
import subprocess
import sys
import tempfile
import time

import torch

MIRROR = "/work/.mirror/CSAILVision+semantic-segmentation-pytorch/repo"
FC_DIM = {"mobilenetv2dilated": 320, "resnet18dilated": 512, "resnet18": 512, "hrnetv2": 720}


def import_upstream(path):
    # Python >= 3.10 removed the collections aliases upstream's lib/nn uses (spec section 9).
    collections.Sequence = collections.abc.Sequence
    collections.Mapping = collections.abc.Mapping
    sys.path.insert(0, path)
    from mit_semseg.models import models
    return models


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="mobilenetv2dilated-c1_deepsup")
    p.add_argument("--size", type=int, default=256)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--num-class", type=int, default=150)
    p.add_argument("--upstream", help="a checkout of CSAILVision/semantic-segmentation-pytorch")
    p.add_argument("--memory-format", choices=["channels_last", "nchw"], default="channels_last",
                   help="PyTorch's activation layout (which is faster depends on the machine and version)")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    path = args.upstream
    if not path:
        path = tempfile.mkdtemp(prefix="mit_semseg_")
        atexit.register(shutil.rmtree, path, True)
        archive = subprocess.run(["git", "-C", MIRROR, "archive", "HEAD"], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", path], input=archive, check=True)
    models = import_upstream(path)
    enc_arch, dec_arch = args.model.split("-", 1)
    fc = FC_DIM.get(enc_arch, 2048)
    scratch = tempfile.mkdtemp(prefix="torch_step_")
    atexit.register(shutil.rmtree, scratch, True)
    empty = os.path.join(scratch, "empty.pth")
    torch.save({}, empty)  # build_encoder downloads ImageNet weights when `weights` is empty
    enc = models.ModelBuilder.build_encoder(arch=enc_arch, fc_dim=fc, weights=empty)
    dec = models.ModelBuilder.build_decoder(arch=dec_arch, fc_dim=fc, num_class=args.num_class)
    crit = torch.nn.NLLLoss(ignore_index=-1)
    deep = 0.4 if dec_arch.endswith("deepsup") else None
    layout = torch.channels_last if args.memory_format == "channels_last" else torch.contiguous_format
    module = models.SegmentationModule(enc, dec, crit, deep).to(memory_format=layout)
    module.train()
    opt = torch.optim.SGD(module.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    stride = 4 if dec_arch.startswith("upernet") or enc_arch == "hrnetv2" else 8
    img = torch.randn(args.batch, 3, args.size, args.size).contiguous(memory_format=layout)
    lab = torch.randint(0, args.num_class, (args.batch, (args.size + stride - 1) // stride, (args.size + stride - 1) // stride))
    feed = {"img_data": img, "seg_label": lab}
    times = []
    for s in range(args.warmup + args.steps):
        t0 = time.perf_counter()
        opt.zero_grad()
        loss, acc = module(feed)
        loss.backward()
        opt.step()
        if s >= args.warmup:
            times.append(time.perf_counter() - t0)
    step = sum(times) / len(times)
    print("pytorch %s %s: %s batch %d x %dx%d, %d threads: %.1f ms per training step, %.2f images/s"
          % (torch.__version__, args.model, args.memory_format + " f32", args.batch, args.size, args.size, args.threads,
             1e3 * step, args.batch / step))


if __name__ == "__main__":
    main()
