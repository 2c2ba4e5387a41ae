"""Closed-form model weights shared by the golden-file scripts and the C++ tests.

Every floating tensor of an upstream state_dict gets values from its name and its element index
alone, so golden files need to hold only inputs and outputs. The C++ twin is
tests/models/closed_form.h; both must compute bit-identical float32 values:

    key  = fnv1a64(name)                                   (UTF-8 bytes of the state_dict key)
    z    = splitmix64_finalise((i + 1) * 0x9E3779B97F4A7C15 + key)    (all mod 2^64)
    u    = (z >> 11) * 2^-52 - 1                           uniform in [-1, 1), exact in float64

and, by kind of tensor (PyTorch layout, C order, element index i):

    4-D (conv weight [O, I/g, KH, KW])   sqrt(6 / (I/g*KH*KW)) * u     He-uniform: activations stay O(1)
    1-D named ...weight (BatchNorm)      1 + 0.2 * u
    1-D named ...bias (conv or BN)       0.1 * u
    running_mean                         0.1 * u
    running_var                          1 + 0.3 * u                   (not the identity: eval bugs show)
    anything else (num_batches_tracked, the SyncBN _tmp_* / _running_iter buffers): left as it is

computed in float64 and rounded once to float32.
"""
import math

import numpy as np

MASK64 = (1 << 64) - 1


def fnv1a64(text):
    h = 14695981039346656037
    for b in text.encode("utf-8"):
        h ^= b
        h = (h * 1099511628211) & MASK64
    return h


def uniform(name, count):
    """u in [-1, 1) for element indices 0..count-1 of the tensor called `name` (float64)."""
    i = np.arange(1, count + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = i * np.uint64(0x9E3779B97F4A7C15) + np.uint64(fnv1a64(name))
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) * 2.0 ** -52 - 1.0


def value(name, shape):
    """The float32 array for state_dict entry `name` of `shape` (PyTorch layout), or None to leave it."""
    leaf = name.rsplit(".", 1)[-1]
    count = int(np.prod(shape)) if len(shape) else 1
    if len(shape) == 4:
        fan_in = shape[1] * shape[2] * shape[3]
        v = math.sqrt(6.0 / fan_in) * uniform(name, count)
    elif leaf == "running_mean":
        v = 0.1 * uniform(name, count)
    elif leaf == "running_var":
        v = 1.0 + 0.3 * uniform(name, count)
    elif leaf == "weight" and len(shape) == 1:
        v = 1.0 + 0.2 * uniform(name, count)
    elif leaf == "bias" and len(shape) == 1:
        v = 0.1 * uniform(name, count)
    else:
        return None
    return v.astype(np.float32).reshape(shape)


def fill_state_dict(module):
    """Overwrites `module`'s floating state with the closed-form values (in place, any dtype)."""
    import torch

    with torch.no_grad():
        for name, t in module.state_dict(keep_vars=True).items():
            if not t.is_floating_point():
                continue
            v = value(name, tuple(t.shape))
            if v is not None:
                t.copy_(torch.from_numpy(v).to(t.dtype))
