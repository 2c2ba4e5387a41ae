#!/usr/bin/python3
"""Golden files for the CPU ops, made with PyTorch (Debian's python3-torch).

Every case runs one PyTorch op on fixed random inputs (NumPy seed per case), with a random output
gradient, twice: in float64 (the reference) and in float32 (what PyTorch itself gets in the
production dtype). It stores the float32 inputs, the float64 outputs and input gradients (rounded
to float32 for storage) as .npy files in tests/golden/ops/<case>/, and in f32_error.json, for each
stored output, PyTorch's own float32 error: max |torch f32 - torch f64| over the tensor, with
max |torch f64| beside it, and the relative L2 error ||f32 - f64|| / ||f64||. Activations are stored channels-last ([N, H, W, C]) and conv weights as
[O, KH, KW, I/groups], the layouts segtrain uses, so the C++ tests compare element by element.

The C++ tests (tests/layers/test_golden_ops.cpp) hold our float32 result to a small multiple of
PyTorch's float32 error, and our float64 result to the storage rounding of the files.

The committed files are what the tests read; torch is needed only to regenerate them:

    /usr/bin/python3 tools/golden/make_op_goldens.py [--out tests/golden/ops]
"""
import argparse
import json
import os

import numpy as np
import torch
import torch.nn.functional as F


def nhwc(t):
    return t.detach().permute(0, 2, 3, 1).contiguous().numpy()


def nchw(a, dtype):
    return torch.from_numpy(np.ascontiguousarray(a)).permute(0, 3, 1, 2).contiguous().to(dtype)


def leaf(a, dtype):
    return torch.from_numpy(np.ascontiguousarray(a)).to(dtype).requires_grad_()


class Case:
    """One golden folder: float32 inputs, the float64 results, PyTorch's float32 error per result."""

    def __init__(self, root, name, seed):
        self.name = name
        self.dir = os.path.join(root, name)
        os.makedirs(self.dir, exist_ok=True)
        self.rng = np.random.default_rng(seed)

    def randn(self, *shape, scale=1.0):
        return (self.rng.standard_normal(shape) * scale).astype(np.float32)

    def save(self, **arrays):
        for key, value in arrays.items():
            value = np.asarray(value) if np.ndim(value) == 0 else np.ascontiguousarray(value)
            np.save(os.path.join(self.dir, key + ".npy"), value)

    def results(self, compute):
        """compute(dtype) -> {key: array}; saves the float64 results and the float32 errors."""
        ref, f32 = compute(torch.float64), compute(torch.float32)
        errors = {}
        for key, value in ref.items():
            value = np.asarray(value, dtype=np.float64)
            err = np.abs(np.asarray(f32[key], dtype=np.float64) - value)
            errors[key] = {"max_abs_err": float(err.max()), "max_abs_ref": float(np.abs(value).max()),
                           "rel_l2_err": float(np.linalg.norm(err) / max(np.linalg.norm(value), 1e-300))}
            self.save(**{key: value.astype(np.float32)})
        with open(os.path.join(self.dir, "f32_error.json"), "w") as f:
            json.dump(errors, f, indent=1, sort_keys=True)
            f.write("\n")
        worst = max(errors, key=lambda k: errors[k]["max_abs_err"] / max(errors[k]["max_abs_ref"], 1e-30))
        print("%-22s torch f32 error, worst: %-18s %.2e (max|ref| %.2e)" % (
            self.name, worst, errors[worst]["max_abs_err"], errors[worst]["max_abs_ref"]))


def conv_case(root, name, seed, n, h, w, c, o, k, stride, pad, dil, groups, bias):
    cs = Case(root, name, seed)
    x = cs.randn(n, h, w, c)
    wt = cs.randn(o, k, k, c // groups, scale=0.3)  # OHWI
    b = cs.randn(o) if bias else None
    ho = (h + 2 * pad - dil * (k - 1) - 1) // stride + 1
    wo = (w + 2 * pad - dil * (k - 1) - 1) // stride + 1
    dy = cs.randn(n, ho, wo, o)
    cs.save(x=x, w=wt, dy=dy, params=np.array([stride, pad, dil, groups], dtype=np.int32), **({"b": b} if bias else {}))

    def compute(dtype):
        xt = nchw(x, dtype).requires_grad_()
        wtt = torch.from_numpy(wt).permute(0, 3, 1, 2).contiguous().to(dtype).requires_grad_()
        bt = leaf(b, dtype) if bias else None
        y = F.conv2d(xt, wtt, bt, stride=stride, padding=pad, dilation=dil, groups=groups)
        y.backward(nchw(dy, dtype))
        out = dict(y=nhwc(y), dx=nhwc(xt.grad), dw=wtt.grad.permute(0, 2, 3, 1).contiguous().numpy())
        if bias:
            out["db"] = bt.grad.numpy()
        return out

    cs.results(compute)


def bn_case(root, name, seed, training):
    cs = Case(root, name, seed)
    x = cs.randn(2, 5, 7, 4, scale=2.0) + 0.5
    gamma, beta = cs.randn(4), cs.randn(4)
    rm, rv = cs.randn(4), (np.abs(cs.randn(4)) + 0.5).astype(np.float32)
    dy = cs.randn(2, 5, 7, 4)
    cs.save(x=x, gamma=gamma, beta=beta, running_mean=rm, running_var=rv, dy=dy)

    def compute(dtype):
        xt = nchw(x, dtype).requires_grad_()
        gt, btt = leaf(gamma, dtype), leaf(beta, dtype)
        rmt, rvt = torch.from_numpy(rm.copy()).to(dtype), torch.from_numpy(rv.copy()).to(dtype)
        y = F.batch_norm(xt, rmt, rvt, gt, btt, training=training, momentum=0.1, eps=1e-5)
        y.backward(nchw(dy, dtype))
        return dict(y=nhwc(y), dx=nhwc(xt.grad), dgamma=gt.grad.numpy(), dbeta=btt.grad.numpy(),
                    running_mean_after=rmt.numpy(), running_var_after=rvt.numpy())

    cs.results(compute)


def unary_case(root, name, seed, x, fn):
    cs = Case(root, name, seed)
    y_shape = nhwc(fn(nchw(x, torch.float64))).shape
    dy = cs.randn(*y_shape)
    cs.save(x=x, dy=dy)

    def compute(dtype):
        xt = nchw(x, dtype).requires_grad_()
        y = fn(xt)
        y.backward(nchw(dy, dtype))
        return dict(y=nhwc(y), dx=nhwc(xt.grad))

    cs.results(compute)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "..", "tests", "golden", "ops"))
    root = os.path.abspath(parser.parse_args().out)
    torch.manual_seed(0)
    torch.set_num_threads(2)
    # Convolutions: a dilated 3x3 (layer4 of the dilated ResNets), a strided grouped one, a depthwise
    # stride-2 one (MobileNetV2), a strided 1x1 (downsample).
    conv_case(root, "conv_dilated", 1, 2, 9, 11, 8, 6, 3, 1, 2, 2, 1, True)
    conv_case(root, "conv_strided_grouped", 2, 1, 10, 9, 6, 4, 3, 2, 1, 1, 2, False)
    conv_case(root, "conv_depthwise_s2", 3, 2, 9, 8, 12, 12, 3, 2, 1, 1, 12, False)
    conv_case(root, "conv_1x1_s2", 4, 2, 7, 7, 5, 9, 1, 2, 0, 1, 1, True)
    bn_case(root, "batchnorm_train", 5, True)
    bn_case(root, "batchnorm_eval", 6, False)
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 9, 10, 3)).astype(np.float32)
    unary_case(root, "maxpool_3x3_s2_p1", 8, x, lambda t: F.max_pool2d(t, 3, 2, 1))
    x = rng.standard_normal((2, 9, 11, 4)).astype(np.float32)
    for s in (1, 2, 3, 6):
        unary_case(root, "adaptive_avgpool_%d" % s, 10 + s, x, lambda t, s=s: F.adaptive_avg_pool2d(t, s))
    x = rng.standard_normal((2, 5, 7, 3)).astype(np.float32)
    unary_case(root, "resize_up_13x17", 20, x,
               lambda t: F.interpolate(t, size=(13, 17), mode="bilinear", align_corners=False))
    x = rng.standard_normal((2, 13, 17, 3)).astype(np.float32)
    unary_case(root, "resize_down_5x7", 21, x,
               lambda t: F.interpolate(t, size=(5, 7), mode="bilinear", align_corners=False))
    x = (rng.standard_normal((2, 4, 5, 6)) * 3).astype(np.float32)
    unary_case(root, "softmax", 22, x, lambda t: F.softmax(t, dim=1))
    unary_case(root, "log_softmax", 23, x, lambda t: F.log_softmax(t, dim=1))
    # The loss: NLL(log_softmax) with ignore_index=-1, mean over valid pixels.
    cs = Case(root, "softmax_nll", 24)
    logits = cs.randn(2, 4, 5, 6, scale=3.0)
    labels = cs.rng.integers(-1, 6, size=(2, 4, 5)).astype(np.int32)
    cs.save(logits=logits, labels=labels)

    def nll(dtype):
        lt = nchw(logits, dtype).requires_grad_()
        loss = F.nll_loss(F.log_softmax(lt, dim=1), torch.from_numpy(labels).long(), ignore_index=-1)
        loss.backward()
        return dict(loss=np.array(loss.item()), dlogits=nhwc(lt.grad))

    cs.results(nll)
    print("golden files written to", root)


if __name__ == "__main__":
    main()
