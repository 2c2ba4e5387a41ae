#!/usr/bin/python3
"""Writes the seed corpora of the fuzz targets (tests/fuzz/corpus/<target>/) from the repository's
fixtures and configs. Run from the repository root; the output is committed, so this is needed only
when the fixtures change. Every seed is small (the largest is a 16 KB safetensors fixture).

    tests/fuzz/make_corpus.py
"""
import glob
import json
import os
import shutil

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "fuzz", "corpus")


def write(target, name, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def copy(target, src):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    shutil.copy(os.path.join(ROOT, src), os.path.join(d, os.path.basename(src).replace("/", "_")))


def overrides(*pairs):
    return "".join("\0" + p for p in pairs)


def yaml_of(cfg):
    # upstream's YAML layout: sections of scalars, tuples written as "(a, b)" strings
    lines = []
    for section, value in cfg.items():
        if isinstance(value, dict):
            lines.append(section + ":")
            for k, v in value.items():
                if isinstance(v, list):
                    v = "(" + ", ".join(str(x) for x in v) + ")"
                elif isinstance(v, bool):
                    v = "True" if v else "False"
                elif isinstance(v, str):
                    v = json.dumps(v)
                lines.append("  %s: %s" % (k, v))
        else:
            lines.append("%s: %s" % (section, json.dumps(value)))
    return "\n".join(lines) + "\n"


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    # odgt: the first byte picks the read options (fuzz_odgt.cpp)
    pipeline = open(os.path.join(ROOT, "tests/data/golden/pipeline.odgt")).read()
    write("odgt", "pipeline_train", "\x06" + pipeline)
    write("odgt", "pipeline_val", "\x02" + pipeline)
    write("odgt", "pipeline_sliced", "\x5e" + pipeline)
    write("odgt", "test_list", "\x00" + '{"fpath_img": "a.jpg"}\n\n{"fpath_img": "/abs/b.png", "width": 3}\n')
    write("odgt", "crlf_and_blank", "\x07" + '{"fpath_img": "x/a.jpg", "fpath_segm": "y/a.png", "width": 640, "height": 480}\r\n \t\r\n')
    # configs: JSON as shipped, with and without overrides; YAML in upstream's layout
    for path in sorted(glob.glob(os.path.join(ROOT, "configs", "*.json"))):
        name = os.path.splitext(os.path.basename(path))[0]
        text = open(path).read()
        write("config_json", name, text)
        cfg = json.loads(text)
        write("config_yaml", name, yaml_of(cfg))
    write("config_json", "with_overrides",
          open(os.path.join(ROOT, "configs/synth-mobilenetv2dilated-c1_deepsup.json")).read() +
          overrides("TRAIN.num_epoch", "3", "DATASET.imgSizes", "(128, 160)", "TRAIN.lr_encoder", "1e-3",
                    "TRAIN.fix_bn", "True", "DIR", "'quoted'"))
    write("config_yaml", "upstream_test_config",
          'DATASET:\n  imgSizes: (300, 375)\n  random_flip: True\nMODEL:\n  arch_encoder: "resnet18dilated"\n'
          '  fc_dim: 512\nTRAIN:\n  weight_decay: 1e-4\n  fix_bn: False\nDIR: "ckpt/x"\n' +
          overrides("TRAIN.num_epoch", "3", "VAL.checkpoint", "epoch_5.pth"))
    write("config_yaml", "flow_style", "{DATASET: {imgSizes: [300, 375], num_class: 150}, TRAIN: {seed: 7}}\n")
    # safetensors and .npy: the committed golden files
    for f in sorted(glob.glob(os.path.join(ROOT, "tests/golden/checkpoints/*.safetensors"))):
        copy("safetensors", os.path.relpath(f, ROOT))
    small_npy = sorted(f for f in glob.glob(os.path.join(ROOT, "tests/golden/ops/*/*.npy")) if os.path.getsize(f) <= 2048)
    os.makedirs(os.path.join(OUT, "npy"), exist_ok=True)
    for f in small_npy[:8]:
        op = os.path.basename(os.path.dirname(f))
        shutil.copy(f, os.path.join(OUT, "npy", op + "_" + os.path.basename(f)))
    # hand-made arrays of the other dtypes and ranks (numpy's own layout: format 1.0, header padded to 64)
    def npy_bytes(descr, shape, data, version=1):
        dims = "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"
        header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, dims)
        prefix = 10 if version == 1 else 12
        header += " " * ((64 - (prefix + len(header) + 1) % 64) % 64) + "\n"
        length = len(header).to_bytes(2 if version == 1 else 4, "little")
        return b"\x93NUMPY" + bytes([version, 0]) + length + header.encode() + data
    write("npy", "i8_2x3", npy_bytes("<i8", [2, 3], bytes(range(48))))
    write("npy", "u1_5", npy_bytes("|u1", [5], bytes([1, 2, 3, 250, 255])))
    write("npy", "f8_scalar", npy_bytes("<f8", [], b"\x00" * 7 + b"\x40"))
    write("npy", "f2_1x2x2_v2", npy_bytes("<f2", [1, 2, 2], b"\x00\x3c" * 4, version=2))
    write("npy", "b1_empty", npy_bytes("|b1", [0, 4], b""))
    # images: label PNGs, a photo JPEG, small RGB PNGs
    for f in ["pipe_a_label.png", "pipe_b_label.png", "pipe_c_label.png", "jpeg_photo_q90.jpg",
              "resize_bilinear_src_noise_rgb_5x3.png", "resize_bilinear_src_noise_rgb_1x1.png",
              "resize_bilinear_src_noise_label_17x11.png"]:
        copy("image", "tests/data/golden/" + f)


if __name__ == "__main__":
    main()
