#!/usr/bin/python3
"""Golden files for the data pipeline tests (tests/data/), made with Debian's Pillow 9.4 and numpy.

The C++ data pipeline must reproduce what upstream's mit_semseg/dataset.py computes with PIL and
numpy (spec/upstream.md section 2). This script is the independent reference: it runs PIL's own
resize and a plain Python transcription of upstream's formulas on small inputs, and writes the
results next to the inputs. The tests read the files and never need Python.

    apt-get install python3-pil python3-numpy
    /usr/bin/python3 tools/golden/make_data_goldens.py        # rewrites tests/data/golden/

Inputs: tests/data/fixtures/ADE_val_00000278_teaser.png (a real ADE20K photo and its ground truth
coloured with the palette), data/ade20k/color150.csv, data/ade20k/validation.odgt.
Everything is deterministic (fixed numpy seeds), so re-running gives the same files.
"""
import csv
import json
import os
import sys

import numpy as np
import PIL
from PIL import Image

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(ROOT, "tests", "data", "fixtures")
OUT = os.path.join(ROOT, "tests", "data", "golden")
PANEL_W = 739  # the teaser holds three 739x512 panels side by side

# torchvision Normalize as upstream uses it (ImageNet statistics).
MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]


def out(name):
    return os.path.join(OUT, name)


def save_png(array_or_image, name):
    img = array_or_image if isinstance(array_or_image, Image.Image) else Image.fromarray(array_or_image)
    img.save(out(name), optimize=True)


# ---------------------------------------------------------------- real photo and label
def teaser_panels():
    teaser = Image.open(os.path.join(FIXTURES, "ADE_val_00000278_teaser.png")).convert("RGB")
    photo = teaser.crop((0, 0, PANEL_W, 512))
    gt = np.array(teaser.crop((PANEL_W, 0, 2 * PANEL_W, 512)))
    # Palette colour -> 1-based class index; black = 0 (unlabeled). Two classes share a colour in
    # color150 (road and class 48); the first one in the file wins, as in the C++ decoder.
    palette = {}
    with open(os.path.join(ROOT, "data", "ade20k", "color150.csv")) as f:
        for row in csv.DictReader(f):
            palette.setdefault((int(row["r"]), int(row["g"]), int(row["b"])), int(row["class"]) + 1)
    label = np.zeros(gt.shape[:2], np.uint8)
    flat = gt.reshape(-1, 3)
    lab = label.reshape(-1)
    for i, rgb in enumerate(map(tuple, flat)):
        if rgb == (0, 0, 0):
            continue
        if rgb not in palette:
            sys.exit(f"ground-truth colour {rgb} is not in the palette")
        lab[i] = palette[rgb]
    return photo, Image.fromarray(label, "L")


# ---------------------------------------------------------------- upstream formulas
def round2nearest_multiple(x, p):
    return ((x - 1) // p + 1) * p


def train_size(w, h, short, max_size):
    # dataset.py TrainDataset: scale from the list's width/height, stored in an int32 array (truncation)
    scale = min(short / min(h, w), max_size / max(h, w))
    return int(np.int32(w * scale)), int(np.int32(h * scale))


def val_size(w, h, short, max_size, padding):
    # dataset.py ValDataset/TestDataset: int() truncation, then round up to the padding constant
    scale = min(short / float(min(h, w)), max_size / float(max(h, w)))
    th, tw = int(h * scale), int(w * scale)
    return round2nearest_multiple(tw, padding), round2nearest_multiple(th, padding)


def normalize_lut():
    # np.float32(img) / 255. then torchvision Normalize (sub mean, div std) in float32.
    values = np.arange(256, dtype=np.float32) / 255.0
    return [(values - np.float32(m)) / np.float32(s) for m, s in zip(MEAN, STD)]


# ---------------------------------------------------------------- golden sets
def make_palette_golden(label):
    save_png(label, "label_278.png")


def make_resize_goldens(photo, label):
    rng = np.random.RandomState(6)
    sources = {
        "src_noise_rgb.png": Image.fromarray(rng.randint(0, 256, (29, 41, 3), dtype=np.uint8), "RGB"),
        "src_photo_rgb.png": photo.crop((300, 180, 396, 244)),
        "src_noise_label.png": Image.fromarray(rng.randint(0, 151, (23, 37), dtype=np.uint8), "L"),
    }
    for name, img in sources.items():
        save_png(img, name)
    cases = [
        ("bilinear", "src_noise_rgb.png", [(17, 11), (13, 29), (41, 7), (5, 3), (1, 1), (83, 61), (100, 31),
                                           (20, 58), (41, 29), (40, 28), (123, 87), (7, 100)]),
        ("bilinear", "src_photo_rgb.png", [(48, 32), (37, 25), (150, 100), (96, 12), (24, 70)]),
        ("bilinear", "teaser:photo", [(92, 64), (138, 96), (57, 40)]),
        ("bilinear", "src_noise_label.png", [(17, 11), (74, 46)]),
        ("nearest", "src_noise_label.png", [(17, 11), (5, 3), (74, 46), (100, 7), (1, 1), (37, 23), (36, 24)]),
        ("nearest", "src_noise_rgb.png", [(17, 11), (83, 61)]),
        ("nearest", "label_278.png", [(92, 64), (185, 128), (91, 63), (1000, 700)]),
    ]
    lines = ["# kind source width height golden (made by tools/golden/make_data_goldens.py, Pillow %s)"
             % PIL.__version__]
    for kind, src, sizes in cases:
        img = photo if src == "teaser:photo" else Image.open(out(src))
        for w, h in sizes:
            name = "resize_%s_%s_%dx%d.png" % (kind, src.replace(".png", "").replace(":", "_"), w, h)
            resample = Image.BILINEAR if kind == "bilinear" else Image.NEAREST
            save_png(img.resize((w, h), resample), name)
            lines.append("%s %s %d %d %s" % (kind, src, w, h, name))
    with open(out("resize_cases.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


def make_jpeg_golden(photo):
    # JPEGs written by Pillow and Pillow's own decoding of each (upstream's Image.open(path).convert('RGB')):
    # segtrain decodes JPEG with the same libjpeg-turbo and must match every pixel. Baseline 4:2:0
    # colour, grey (replicated to RGB), Adobe CMYK (Pillow's "CMYK;I" and cmyk2rgb) and progressive.
    crop = photo.crop((200, 150, 360, 262))
    cases = [("jpeg_photo_q90.jpg", crop, dict(quality=90)),
             ("jpeg_grey_q85.jpg", crop.convert("L"), dict(quality=85)),
             ("jpeg_cmyk_q90.jpg", crop.convert("CMYK"), dict(quality=90)),
             ("jpeg_photo_progressive_q80.jpg", crop, dict(quality=80, progressive=True))]
    for name, img, options in cases:
        img.save(out(name), **options)
        save_png(Image.open(out(name)).convert("RGB"), name.replace(".jpg", "_pil.png"))


def make_scale_golden():
    sizes = [300, 375, 450, 525, 600]
    records = []
    with open(os.path.join(ROOT, "data", "ade20k", "validation.odgt")) as f:
        for i, line in enumerate(f):
            if i % 10 == 0:
                r = json.loads(line)
                records.append((r["width"], r["height"]))
    # A few shapes the real list lacks: squares, elongated, tiny and huge images.
    records += [(1, 1), (7, 5), (600, 600), (601, 599), (2000, 1500), (1500, 2000), (4000, 300), (333, 4000),
                (1000, 1000), (1001, 999), (299, 300), (256, 192)]
    lines = ["# w h | per imgSize (300 375 450 525 600), imgMaxSize 1000: train_w train_h val_w8 val_h8 val_w32 val_h32"]
    for w, h in records:
        cols = [str(w), str(h), "|"]
        for s in sizes:
            tw, th = train_size(w, h, s, 1000)
            v8 = val_size(w, h, s, 1000, 8)
            v32 = val_size(w, h, s, 1000, 32)
            cols += [str(tw), str(th), str(v8[0]), str(v8[1]), str(v32[0]), str(v32[1])]
        lines.append(" ".join(cols))
    with open(out("scales.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


def make_pipeline_goldens(photo, label):
    # Three small records cut from the real photo: two landscape, one portrait.
    crops = {"pipe_a": (200, 150, 360, 262), "pipe_b": (500, 300, 590, 430), "pipe_c": (40, 40, 160, 130)}
    records = []
    for name, box in crops.items():
        save_png(photo.crop(box), name + ".png")
        save_png(label.crop(box), name + "_label.png")
        records.append({"fpath_img": name + ".png", "fpath_segm": name + "_label.png",
                        "width": box[2] - box[0], "height": box[3] - box[1]})
    with open(out("pipeline.odgt"), "w") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")

    # TrainDataset.__getitem__ for a given sub-batch (records, short side, flips), transcribed from
    # upstream with one deliberate difference (DESIGN decision 12): the label padding beyond each
    # sample is -1 (ignore), not upstream HEAD's 0 ("wall"). Images are stored as the uint8 result of
    # the resize; the test applies the normalisation LUT checked separately.
    cases = [
        ("t0", [0, 2], 64, 100, 8, 8, [1, 0]),
        ("t1", [1, 1], 80, 120, 8, 4, [0, 1]),
        ("t2", [0], 48, 1000, 32, 4, [1]),
        ("t3", [2, 0], 100, 130, 8, 8, [0, 0]),
    ]
    lines = ["# case records(comma) short max_size padding rate flips(comma) | canvas_w canvas_h | per sample: w h"]
    for case, idx, short, max_size, padding, rate, flips in cases:
        sizes = [train_size(records[i]["width"], records[i]["height"], short, max_size) for i in idx]
        cw = round2nearest_multiple(max(s[0] for s in sizes), padding)
        ch = round2nearest_multiple(max(s[1] for s in sizes), padding)
        labels = np.full((len(idx), ch // rate, cw // rate), -1, np.int64)
        for j, i in enumerate(idx):
            img = Image.open(out(records[i]["fpath_img"])).convert("RGB")
            segm = Image.open(out(records[i]["fpath_segm"]))
            assert segm.mode == "L" and img.size == segm.size
            if flips[j]:
                img = img.transpose(Image.FLIP_LEFT_RIGHT)
                segm = segm.transpose(Image.FLIP_LEFT_RIGHT)
            w, h = sizes[j]
            img = img.resize((w, h), Image.BILINEAR)
            segm = segm.resize((w, h), Image.NEAREST)
            rounded = Image.new("L", (round2nearest_multiple(w, rate), round2nearest_multiple(h, rate)), 0)
            rounded.paste(segm, (0, 0, w, h))
            segm = rounded.resize((rounded.size[0] // rate, rounded.size[1] // rate), Image.NEAREST)
            seg = np.array(segm).astype(np.int64) - 1
            labels[j, :seg.shape[0], :seg.shape[1]] = seg
            save_png(img, "train_%s_%d_img.png" % (case, j))
        # label + 1 so that ignore (-1) is 0 and the PNG stays 8-bit; samples stacked vertically
        save_png((labels + 1).astype(np.uint8).reshape(-1, cw // rate), "train_%s_label.png" % case)
        lines.append("%s %s %d %d %d %d %s | %d %d | %s" % (
            case, ",".join(map(str, idx)), short, max_size, padding, rate, ",".join(map(str, flips)), cw, ch,
            " ".join("%d %d" % s for s in sizes)))
    with open(out("train_cases.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")

    # ValDataset: every short side, resized straight to multiples of the padding constant.
    vcases = [("v0", 0, [48, 64, 100], 150, 8), ("v1", 1, [40, 72], 1000, 32)]
    lines = ["# case record imgSizes(comma) max_size padding | per size: w h"]
    for case, i, shorts, max_size, padding in vcases:
        img = Image.open(out(records[i]["fpath_img"])).convert("RGB")
        sizes = []
        for s in shorts:
            tw, th = val_size(img.size[0], img.size[1], s, max_size, padding)
            save_png(img.resize((tw, th), Image.BILINEAR), "val_%s_%d.png" % (case, s))
            sizes.append((tw, th))
        lines.append("%s %d %s %d %d | %s" % (case, i, ",".join(map(str, shorts)), max_size, padding,
                                               " ".join("%d %d" % s for s in sizes)))
    with open(out("val_cases.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


def make_normalize_golden():
    with open(out("normalize_lut.txt"), "w") as f:
        f.write("# (np.float32(v)/255 - mean[c]) / std[c] in float32 for v = 0..255, one line per channel R G B\n")
        for channel in normalize_lut():
            f.write(" ".join("%.9g" % v for v in channel) + "\n")


def main():
    os.makedirs(OUT, exist_ok=True)
    photo, label = teaser_panels()
    make_palette_golden(label)
    make_resize_goldens(photo, label)
    make_jpeg_golden(photo)
    make_scale_golden()
    make_pipeline_goldens(photo, label)
    make_normalize_golden()
    print("wrote", len(os.listdir(OUT)), "files to", OUT, "with Pillow", PIL.__version__, "numpy", np.__version__)


if __name__ == "__main__":
    main()
