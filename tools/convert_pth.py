#!/usr/bin/python3
"""Convert upstream PyTorch checkpoints (.pth) to segtrain's safetensors files, and back.

Users of CSAILVision/semantic-segmentation-pytorch can bring their trained models:

    # a trained model: both files of an upstream checkpoint folder
    tools/convert_pth.py to-safetensors ckpt/ade20k-resnet50dilated-ppm_deepsup/encoder_epoch_20.pth \\
        run/encoder_epoch_20.safetensors
    tools/convert_pth.py to-safetensors ckpt/ade20k-resnet50dilated-ppm_deepsup/decoder_epoch_20.pth \\
        run/decoder_epoch_20.safetensors
    # or a whole folder: every encoder_/decoder_epoch_N.pth becomes the .safetensors beside it
    tools/convert_pth.py to-safetensors ckpt/ade20k-resnet50dilated-ppm_deepsup/

    # an ImageNet-pretrained encoder (pretrained/resnet50-imagenet.pth, mobilenet_v2.pth.tar,
    # hrnetv2_w48-imagenet.pth): its classifier tensors (fc.*, classifier.*, ...) are kept; segtrain
    # skips them when it loads the encoder non-strictly, as upstream's strict=False does
    tools/convert_pth.py to-safetensors pretrained/resnet50-imagenet.pth pretrained/resnet50-imagenet.safetensors

    # back to PyTorch, for upstream's eval.py / test.py (zip format; --legacy for PyTorch < 1.6)
    tools/convert_pth.py to-pth run/encoder_epoch_20.safetensors ckpt/x/encoder_epoch_20.pth

Safety: a .pth file is a Python pickle, and unpickling an arbitrary pickle can run any code. This
script loads with torch.load(..., weights_only=True), which only rebuilds tensors and plain
containers (dict, list, str, numbers) and refuses anything else, so a .pth downloaded from the
internet cannot run code here. A file that needs more (a pickled model object rather than a
state_dict) is refused with a message; load it in PyTorch yourself, if you trust it, and save its
state_dict().

Reads both pickle formats torch.load understands (the zip format of PyTorch >= 1.6 and the legacy one
the released upstream models were written in). A file holding {"state_dict": ...} (some .pth.tar files)
is unwrapped, and --strip-prefix module. removes DataParallel prefixes. Tensors keep upstream's
names, shapes (conv weights OIHW) and dtypes; nothing is renamed or reordered. Needs only torch
(Debian python3-torch); the safetensors format is written by hand (8-byte little-endian header length,
JSON header, 8-byte aligned data), so the `safetensors` package is not needed.
"""
import argparse
import collections
import json
import os
import struct
import sys

import torch

DTYPES = {torch.float32: "F32", torch.float64: "F64", torch.float16: "F16", torch.bfloat16: "BF16",
          torch.int32: "I32", torch.int64: "I64", torch.uint8: "U8"}
CODES = {code: dt for dt, code in DTYPES.items()}


def load_state_dict(path, strip_prefix):
    # weights_only=True: tensors and plain containers only, never arbitrary pickled objects (which
    # could run code while loading). PyTorch >= 1.13 has it (Debian bookworm ships 1.13.1).
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except OSError as e:
        sys.exit("%s: %s" % (path, e))
    except TypeError as e:
        sys.exit("%s: this PyTorch (%s) has no torch.load(weights_only=...); use PyTorch >= 1.13 (%s)"
                 % (path, torch.__version__, e))
    except Exception as e:  # pickle.UnpicklingError and friends, for objects weights_only refuses
        sys.exit("%s: refused to unpickle (torch.load with weights_only=True: only tensors and plain "
                 "containers are loaded, so a .pth cannot run code): %s\n"
                 "If you trust the file, load it in PyTorch and save its state_dict() instead." % (path, e))
    if isinstance(obj, dict) and "state_dict" in obj and isinstance(obj["state_dict"], dict):
        obj = obj["state_dict"]
    if not isinstance(obj, dict):
        sys.exit("%s: expected a state_dict (a dict of tensors), found %s" % (path, type(obj).__name__))
    out = collections.OrderedDict()
    for name, t in obj.items():
        if not torch.is_tensor(t):
            print("%s: skipping non-tensor entry %r" % (path, name), file=sys.stderr)
            continue
        if strip_prefix and name.startswith(strip_prefix):
            name = name[len(strip_prefix):]
        if t.dtype not in DTYPES:
            sys.exit("%s: tensor %r has dtype %s, which segtrain does not read" % (path, name, t.dtype))
        out[name] = t.detach().contiguous()
    return out


def tensor_bytes(t):
    if t.dtype == torch.bfloat16:  # numpy has no bfloat16: reinterpret the bits
        t = t.view(torch.int16)
    return t.numpy().tobytes()


def write_safetensors(path, tensors, metadata=None):
    header = collections.OrderedDict()
    if metadata:
        header["__metadata__"] = metadata
    blobs, offset = [], 0
    for name, t in tensors.items():
        data = tensor_bytes(t)
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * ((8 - (8 + len(text)) % 8) % 8)  # data starts 8-byte aligned
    tmp = path + ".tmp.%d" % os.getpid()
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)  # atomic: the old file or the new one, never half of one


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        sys.exit("%s: not a safetensors file (too short)" % path)
    (n,) = struct.unpack("<Q", raw[:8])
    if n > len(raw) - 8:
        sys.exit("%s: truncated safetensors header" % path)
    header = json.loads(raw[8:8 + n].decode("utf-8"), object_pairs_hook=collections.OrderedDict)
    data = raw[8 + n:]
    metadata = header.pop("__metadata__", None)
    out = collections.OrderedDict()
    for name, e in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        begin, end = e["data_offsets"]
        if end > len(data):
            sys.exit("%s: truncated data for tensor %r" % (path, name))
        dt = CODES[e["dtype"]]
        buf = bytearray(data[begin:end])
        if dt == torch.bfloat16:
            t = torch.frombuffer(buf, dtype=torch.int16).view(torch.bfloat16) if buf else torch.empty(0, dtype=dt)
        else:
            t = torch.frombuffer(buf, dtype=dt) if buf else torch.empty(0, dtype=dt)
        out[name] = t.reshape(e["shape"]).clone()
    # Keep the header's order (upstream state_dict order when the file came from segtrain or from here).
    ordered = collections.OrderedDict((k, out[k]) for k in header.keys())
    return ordered, metadata


def to_safetensors(src, dst, strip_prefix):
    sd = load_state_dict(src, strip_prefix)
    write_safetensors(dst, sd, {"source": os.path.basename(src), "format": "upstream state_dict; conv weights OIHW"})
    print("%s -> %s (%d tensors)" % (src, dst, len(sd)))


def to_pth(src, dst, legacy):
    sd, _ = read_safetensors(src)
    torch.save(sd, dst, _use_new_zipfile_serialization=not legacy)
    print("%s -> %s (%d tensors, %s format)" % (src, dst, len(sd), "legacy" if legacy else "zip"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] +
                                     " .pth files are loaded with torch.load(weights_only=True): tensors "
                                     "and plain containers only, so a file cannot run code.",
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    a = sub.add_parser("to-safetensors", help=".pth (zip or legacy) -> .safetensors; loaded with "
                       "torch.load(weights_only=True), so the file cannot run code")
    a.add_argument("src", help="a .pth file, or a folder of encoder_/decoder_epoch_N.pth files")
    a.add_argument("dst", nargs="?", help="output file (default: src with .safetensors)")
    a.add_argument("--strip-prefix", default="", help="remove this prefix from every name (e.g. module.)")
    b = sub.add_parser("to-pth", help=".safetensors -> .pth")
    b.add_argument("src")
    b.add_argument("dst", nargs="?", help="output file (default: src with .pth)")
    b.add_argument("--legacy", action="store_true", help="the pre-1.6 (non-zip) pickle format")
    args = parser.parse_args()

    if args.command == "to-safetensors":
        if os.path.isdir(args.src):
            names = sorted(n for n in os.listdir(args.src)
                           if n.endswith(".pth") and n.startswith(("encoder_", "decoder_")))
            if not names:
                sys.exit("%s: no encoder_*.pth or decoder_*.pth files" % args.src)
            for n in names:
                p = os.path.join(args.src, n)
                to_safetensors(p, p[:-4] + ".safetensors", args.strip_prefix)
        else:
            dst = args.dst or os.path.splitext(args.src)[0] + ".safetensors"
            to_safetensors(args.src, dst, args.strip_prefix)
    else:
        to_pth(args.src, args.dst or os.path.splitext(args.src)[0] + ".pth", args.legacy)


if __name__ == "__main__":
    main()
