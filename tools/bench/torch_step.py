#!/usr/bin/python3
"""Times whole training steps of an upstream model in PyTorch, for `segtrain bench` to compare with.

Builds the model with upstream's own code (mit_semseg, from a checkout given with --upstream, or
exported from the fetched mirror), channels_last (or NCHW with --memory-format nchw), SGD with
momentum, and times forward + backward + step on random images, at the given batch, size and thread
count, on the CPU or on a CUDA GPU:

    /usr/bin/python3 tools/bench/torch_step.py --model mobilenetv2dilated-c1_deepsup --size 256 --batch 4 --threads 2
    build/bin/segtrain bench --model mobilenetv2dilated-c1_deepsup --size 256 --batch 4 --threads 2

    python3 tools/bench/torch_step.py --device cuda:0 --size 512 --batch 8 --amp O0,autocast \
        --model mobilenetv2dilated-c1_deepsup,resnet50dilated-ppm_deepsup --upstream gpu-carry/upstream

--model and --amp take comma-separated lists: every (model, amp) pair runs in one process, so torch
and upstream's code are imported once (tools/gpu_check.sh uses this on the lent GPU). Each pair
prints one line "... : X ms per training step ..." (tools/bench/pair.sh and gpu_check.sh read it).

Precision (--amp): O0 is float32 with PyTorch's own defaults (on CUDA: cuDNN convolutions may use
TF32, matmuls do not; segtrain's O0 also runs convolutions on TF32 tensor cores); `autocast` is
PyTorch's AMP, torch.autocast (float16 on CUDA, bfloat16 on the CPU) with torch.amp.GradScaler:
per-op casts with float32 weights. It is the PyTorch counterpart gpu_check.sh sets beside
segtrain's O2 (model in f16, f32 master weights), not the same recipe.

Timing: on the CPU, wall time per step. On CUDA, CUDA events recorded before and after each step on
the current stream (what `segtrain bench --device cuda:0` does), read after one synchronize at the
end; the wall time of the measured steps (synchronize before and after) is printed beside it.

Needs a Python with PyTorch (Debian's python3-torch, tools/bench/torch_venv.sh, or the GPU machine's);
nothing in segtrain's build or tests depends on it.
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
AMP_CHOICES = ("O0", "autocast")


def import_upstream(path):
    # Python >= 3.10 removed the collections aliases upstream's lib/nn uses (spec section 9).
    collections.Sequence = collections.abc.Sequence
    collections.Mapping = collections.abc.Mapping
    sys.path.insert(0, path)
    from mit_semseg.models import models
    return models


def upstream_path(given):
    if given:
        if not os.path.isdir(os.path.join(given, "mit_semseg", "models")):
            sys.exit("torch_step.py: --upstream %s has no mit_semseg/models: give a checkout of "
                     "CSAILVision/semantic-segmentation-pytorch (or the folder tools/gpu_prepare.sh carries)" % given)
        return given
    path = tempfile.mkdtemp(prefix="mit_semseg_")
    atexit.register(shutil.rmtree, path, True)
    archive = subprocess.run(["git", "-C", MIRROR, "archive", "HEAD"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", path], input=archive, check=True)
    return path


def build_module(models, model, num_class, layout, scratch):
    enc_arch, dec_arch = model.split("-", 1)
    fc = FC_DIM.get(enc_arch, 2048)
    empty = os.path.join(scratch, "empty.pth")
    torch.save({}, empty)  # build_encoder downloads ImageNet weights when `weights` is empty
    enc = models.ModelBuilder.build_encoder(arch=enc_arch, fc_dim=fc, weights=empty)
    dec = models.ModelBuilder.build_decoder(arch=dec_arch, fc_dim=fc, num_class=num_class)
    crit = torch.nn.NLLLoss(ignore_index=-1)
    deep = 0.4 if dec_arch.endswith("deepsup") else None
    stride = 4 if dec_arch.startswith("upernet") or enc_arch == "hrnetv2" else 8
    return models.SegmentationModule(enc, dec, crit, deep).to(memory_format=layout), stride


def time_steps(args, models, model, amp, device, scratch):
    """Builds `model`, runs warm-up + measured steps; returns (ms per step, wall ms per step, peak MiB)."""
    torch.manual_seed(1)
    layout = torch.channels_last if args.memory_format == "channels_last" else torch.contiguous_format
    module, stride = build_module(models, model, args.num_class, layout, scratch)
    module = module.to(device)
    module.train()
    opt = torch.optim.SGD(module.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    img = torch.randn(args.batch, 3, args.size, args.size).contiguous(memory_format=layout).to(device)
    label_size = (args.size + stride - 1) // stride
    lab = torch.randint(0, args.num_class, (args.batch, label_size, label_size)).to(device)
    feed = {"img_data": img, "seg_label": lab}
    cuda = device.type == "cuda"
    autocast = amp == "autocast"
    half = torch.float16 if cuda else torch.bfloat16
    scaler = None
    if autocast and cuda:  # float16 needs loss scaling; bfloat16 (the CPU's autocast type) does not
        scaler = torch.amp.GradScaler("cuda") if hasattr(torch.amp, "GradScaler") else torch.cuda.amp.GradScaler()

    def step():
        opt.zero_grad()
        with torch.autocast(device_type=device.type, dtype=half, enabled=autocast):
            loss, _ = module(feed)
        if scaler is None:
            loss.backward()
            opt.step()
        else:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()

    for _ in range(args.warmup):
        step()
    if cuda:
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(args.steps)]
    times = []
    wall0 = time.perf_counter()
    for s in range(args.steps):
        if cuda:
            events[s][0].record()
            step()
            events[s][1].record()
        else:
            t0 = time.perf_counter()
            step()
            times.append(time.perf_counter() - t0)
    if cuda:
        torch.cuda.synchronize(device)
        times = [a.elapsed_time(b) / 1e3 for a, b in events]
    wall = (time.perf_counter() - wall0) / args.steps
    peak = torch.cuda.max_memory_allocated(device) / 2**20 if cuda else 0.0
    del module, opt, feed, img, lab
    if cuda:
        torch.cuda.empty_cache()
    return 1e3 * sum(times) / len(times), 1e3 * wall, peak


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="mobilenetv2dilated-c1_deepsup", help="ENCODER-DECODER, or a comma-separated list")
    p.add_argument("--size", type=int, default=256)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--num-class", type=int, default=150)
    p.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    p.add_argument("--amp", default="O0", help="O0 or autocast, or a comma-separated list (see the module's help)")
    p.add_argument("--cudnn-benchmark", action="store_true",
                   help="torch.backends.cudnn.benchmark = True (off by default, as in upstream's train.py)")
    p.add_argument("--upstream", help="a checkout of CSAILVision/semantic-segmentation-pytorch")
    p.add_argument("--memory-format", choices=["channels_last", "nchw"], default="channels_last",
                   help="PyTorch's activation layout (which is faster depends on the machine and version)")
    args = p.parse_args()
    amps = args.amp.split(",")
    for a in amps:
        if a not in AMP_CHOICES:
            p.error("--amp takes %s (comma-separated), not '%s'" % (" or ".join(AMP_CHOICES), a))
    if args.steps < 1 or args.warmup < 0:
        p.error("--steps must be at least 1 and --warmup at least 0")
    device = torch.device(args.device)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            print("torch_step.py: --device %s but PyTorch %s sees no CUDA GPU (torch.version.cuda %s)"
                  % (args.device, torch.__version__, torch.version.cuda), file=sys.stderr)
            sys.exit(4)
        if device.index is None:
            device = torch.device("cuda", torch.cuda.current_device())
        torch.cuda.set_device(device)
        torch.backends.cudnn.benchmark = args.cudnn_benchmark
        where = "%s %s, CUDA events, cuDNN %s, TF32 convs %s, TF32 matmuls %s" % (
            device, torch.cuda.get_device_name(device), torch.backends.cudnn.version(),
            torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32)
    elif device.type == "cpu":
        torch.set_num_threads(args.threads)
        where = "%d threads" % args.threads
    else:
        p.error("--device takes cpu, cuda or cuda:N, not '%s'" % args.device)
    models = import_upstream(upstream_path(args.upstream))
    scratch = tempfile.mkdtemp(prefix="torch_step_")
    atexit.register(shutil.rmtree, scratch, True)
    failed = 0
    for model in args.model.split(","):
        for amp in amps:
            try:
                ms, wall, peak = time_steps(args, models, model, amp, device, scratch)
            except Exception as e:  # one pair's failure (out of memory, a bad name) leaves the others' lines
                print("pytorch %s %s: %s FAILED: %s: %s" % (torch.__version__, model, amp, type(e).__name__, e), flush=True)
                failed = 1
                continue
            precision = "f32" if amp == "O0" else ("autocast f16 + GradScaler" if device.type == "cuda" else "autocast bf16")
            extra = ", wall %.1f ms, peak %.0f MiB" % (wall, peak) if device.type == "cuda" else ""
            print("pytorch %s %s: %s %s batch %d x %dx%d, %s: %.1f ms per training step, %.2f images/s%s"
                  % (torch.__version__, model, args.memory_format, precision, args.batch, args.size, args.size, where,
                     ms, 1e3 * args.batch / ms, extra), flush=True)
    sys.exit(failed)


if __name__ == "__main__":
    main()
