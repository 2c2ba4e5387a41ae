#!/usr/bin/python3
"""Times the ops recorded by `segtrain bench --ops-json FILE` in PyTorch, same shapes, same threads.

segtrain's profiler writes every op call of a training step (op, phase, shapes, hyper-parameters,
mean seconds). This script rebuilds each forward op in PyTorch (oneDNN, channels_last for 4-D
tensors, float32), times forward and forward+backward, and prints per-op times side by side with
the ratio segtrain/PyTorch, plus the totals:

    build/bin/segtrain bench --model mobilenetv2dilated-c1_deepsup --size 256 --batch 4 --ops-json /tmp/ops.json
    /usr/bin/python3 tools/bench/torch_ops.py /tmp/ops.json --threads 2

Needs Debian's python3-torch; nothing in segtrain's build or tests depends on it.
"""
import argparse
import json
import time

import torch
import torch.nn.functional as F


def make(shape, requires_grad=True):
    t = torch.randn(tuple(int(s) for s in shape))  # () for the scalar loss terms
    if t.dim() == 4:  # ours are NHWC; PyTorch wants NCHW with channels_last memory
        t = t.permute(0, 3, 1, 2).contiguous(memory_format=torch.channels_last)
    return t.requires_grad_(requires_grad)


def build(op, a):
    """Returns (forward closure, input tensors) for one recorded op."""
    if op == "conv2d":
        x = make(a["x"]["shape"])
        o, kh, kw, ig = a["w"]
        w = torch.randn(o, ig, kh, kw).contiguous(memory_format=torch.channels_last).requires_grad_()
        b = torch.randn(o).requires_grad_() if a["bias"] else None
        return (lambda: F.conv2d(x, w, b, a["stride"], a["pad"], a["dilation"], a["groups"])), [x, w]
    if op in ("batch_norm", "batch_norm_relu", "batch_norm_relu6"):
        # segtrain's fused BatchNorm+activation against PyTorch's two ops (its eager mode does not fuse)
        x = make(a["x"]["shape"])
        c = x.shape[1]
        g, b = torch.ones(c, requires_grad=True), torch.zeros(c, requires_grad=True)
        rm, rv = torch.zeros(c), torch.ones(c)
        act = {"batch_norm": lambda t: t, "batch_norm_relu": F.relu, "batch_norm_relu6": F.relu6}[op]
        return (lambda: act(F.batch_norm(x, rm, rv, g, b, training=a["training"], momentum=0.1))), [x]
    if op in ("relu", "relu6"):
        x = make(a["x"]["shape"])
        return (lambda: F.relu(x) if op == "relu" else F.relu6(x)), [x]
    if op == "max_pool2d":
        x = make(a["x"]["shape"])
        return (lambda: F.max_pool2d(x, a["kernel"], a["stride"], a["pad"])), [x]
    if op == "adaptive_avg_pool2d":
        x = make(a["x"]["shape"])
        return (lambda: F.adaptive_avg_pool2d(x, tuple(a["out"]))), [x]
    if op == "resize_bilinear":
        x = make(a["x"]["shape"])
        return (lambda: F.interpolate(x, size=tuple(a["out"]), mode="bilinear", align_corners=False)), [x]
    if op in ("softmax", "log_softmax"):
        x = make(a["x"]["shape"])
        fn = F.softmax if op == "softmax" else F.log_softmax
        return (lambda: fn(x, dim=1 if x.dim() == 4 else -1)), [x]
    if op == "softmax_nll_loss":
        x = make(a["x"]["shape"])
        n, c, h, w = x.shape
        y = torch.randint(-1, c, (n, h, w))
        return (lambda: F.nll_loss(F.log_softmax(x, dim=1), y, ignore_index=-1)), [x]
    if op == "concat_channels":
        xs = [make(t["shape"]) for t in a["xs"]]
        return (lambda: torch.cat(xs, dim=1)), xs
    if op == "add":
        x, y = make(a["x"]["shape"]), make(a["x"]["shape"])
        return (lambda: x + y), [x, y]
    if op == "dropout2d":
        x = make(a["x"]["shape"])
        return (lambda: F.dropout2d(x, a["p"], training=True)), [x]
    return None, None


def timed(fn, reps):
    fn()
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - t0) / reps


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("ops_json")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--reps", type=int, default=5)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    data = json.load(open(args.ops_json))
    entries = data["ops"]
    # Pair forward and backward records of the same op and arguments.
    ours = {}
    order = []
    for e in entries:
        key = (e["op"], json.dumps(e["args"], sort_keys=True))
        if key not in ours:
            ours[key] = {"forward": 0.0, "backward": 0.0, "calls": e["calls"], "args": e["args"]}
            order.append(key)
        if e["phase"] in ("forward", "backward"):
            ours[key][e["phase"]] += e["seconds_per_call"] * e["calls"]
    print("%-20s %-44s %9s %9s %7s" % ("op", "shape", "ours ms", "torch ms", "ratio"))
    tot_ours = tot_torch = 0.0
    by_op = {}
    for key in order:
        op, _ = key
        rec = ours[key]
        fn, inputs = build(op, rec["args"])
        if fn is None:
            continue
        fwd = timed(fn, args.reps)
        needs_bwd = rec["backward"] > 0

        def fwd_bwd():
            out = fn()
            out.float().sum().backward()
        total = timed(fwd_bwd, args.reps) if needs_bwd else fwd
        t_ours = rec["forward"] + rec["backward"]
        t_torch = total * rec["calls"]
        tot_ours += t_ours
        tot_torch += t_torch
        agg = by_op.setdefault(op, [0.0, 0.0])
        agg[0] += t_ours
        agg[1] += t_torch
        shape = rec["args"].get("x", {}).get("shape", "") if isinstance(rec["args"].get("x"), dict) else ""
        if op == "conv2d":  # NHWC input, then the layer: kernel, outputs, stride, dilation, groups
            a = rec["args"]
            shape = "%s k%d o%d s%d d%d g%d" % ("x".join(str(v) for v in shape), a["w"][1], a["w"][0],
                                               a["stride"], a["dilation"], a["groups"])
        print("%-20s %-44s %9.2f %9.2f %7.2f" % (op, str(shape)[:44], t_ours * 1e3, t_torch * 1e3,
                                                  t_ours / t_torch if t_torch > 0 else float("nan")))
    print()
    print("%-20s %9s %9s %7s" % ("by op", "ours ms", "torch ms", "ratio"))
    for op, (o, t) in sorted(by_op.items(), key=lambda kv: -kv[1][0]):
        print("%-20s %9.1f %9.1f %7.2f" % (op, o * 1e3, t * 1e3, o / t))
    print("%-20s %9.1f %9.1f %7.2f" % ("TOTAL (fwd+bwd)", tot_ours * 1e3, tot_torch * 1e3, tot_ours / tot_torch))


if __name__ == "__main__":
    main()
