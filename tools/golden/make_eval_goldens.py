#!/usr/bin/python3
"""Golden files for the evaluation arithmetic (mIoU, pixel accuracy), made with upstream's own code.

Runs `accuracy`, `intersectionAndUnion` and `AverageMeter` of upstream's mit_semseg/utils.py
(exported at run time from the bare mirror, or from a checkout given with --upstream; never
committed; utils.py needs only NumPy) the way upstream's eval.py does, on prediction/label maps made
here, and stores maps and results under tests/golden/eval/<case>/. tests/tools/test_evaluate.cpp
feeds the same maps to tools/evaluate.cpp and compares.

    /usr/bin/python3 tools/golden/make_eval_goldens.py [--upstream DIR] [--out tests/golden/eval]

Cases (labels as eval.py sees them: class index, -1 = unlabeled):
  hand      5 classes, 3 maps written out below: ignore pixels, a class predicted but absent from
            the labels, a class in the labels never predicted, a class absent from both, and an
            all-ignore map
  random    150 classes (ADE20K), 4 random 29x31 maps, ~20% ignore, predictions right ~60% of the
            time, plus an all-ignore map

What is written per case: pred_<i>.npy and label_<i>.npy (i32 [H, W]) and results.json:
  num_class, images: per map upstream's (acc, pix) and (area_intersection, area_union);
  dataset: the meters' sums, iou = sum_I / (sum_U + 1e-10) per class, miou = iou.mean(),
  accuracy = acc_meter.average() (eval.py prints it x100).
"""
import argparse
import importlib.util
import json
import os
import subprocess
import tempfile

import numpy as np

MIRROR = "/work/.mirror/CSAILVision+semantic-segmentation-pytorch/repo"


def upstream_utils(checkout):
    """upstream's mit_semseg/utils.py as a module (loaded from its file: the package __init__ is not needed)."""
    if checkout is None:
        checkout = tempfile.mkdtemp(prefix="mit_semseg_")
        text = subprocess.run(["git", "-C", MIRROR, "show", "HEAD:mit_semseg/utils.py"], check=True,
                              capture_output=True).stdout
        os.makedirs(os.path.join(checkout, "mit_semseg"))
        with open(os.path.join(checkout, "mit_semseg", "utils.py"), "wb") as f:
            f.write(text)
    spec = importlib.util.spec_from_file_location("mit_semseg_utils", os.path.join(checkout, "mit_semseg", "utils.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def hand_maps():
    """(pred, label) pairs with 5 classes; -1 = unlabeled."""
    a_label = np.array([[0, 0, 1, 1],
                        [0, -1, 1, 4],
                        [-1, -1, 4, 4]], dtype=np.int32)
    a_pred = np.array([[0, 1, 1, 1],    # one 0 predicted as 1
                       [0, 2, 1, 0],    # class 2 predicted on an unlabeled pixel (not counted)
                       [3, 2, 4, 1]], dtype=np.int32)  # 3 and 2 on unlabeled pixels, 4 -> 1
    b_label = np.full((2, 3), -1, dtype=np.int32)  # all unlabeled
    b_pred = np.array([[0, 1, 2], [3, 4, 0]], dtype=np.int32)
    c_label = np.array([[2, 2, 2],
                        [1, 1, -1]], dtype=np.int32)
    c_pred = np.array([[2, 0, 2],       # class 2 predicted as 0 once; class 0 absent from c's labels
                       [1, 2, 4]], dtype=np.int32)
    return [(a_pred, a_label), (b_pred, b_label), (c_pred, c_label)]


def random_maps(rng, num_class, n, h, w):
    out = []
    for _ in range(n):
        label = rng.integers(0, num_class, size=(h, w)).astype(np.int32)
        label[rng.random((h, w)) < 0.2] = -1
        pred = np.where(rng.random((h, w)) < 0.6, np.maximum(label, 0),
                        rng.integers(0, num_class, size=(h, w))).astype(np.int32)
        out.append((pred, label))
    out.append((out[0][0].copy(), np.full((h, w), -1, dtype=np.int32)))
    return out


def run_case(utils, root, name, num_class, maps):
    """eval.py's loop over the maps (its lines 80-85 and 98-104) with upstream's functions."""
    folder = os.path.join(root, name)
    os.makedirs(folder, exist_ok=True)
    acc_meter, intersection_meter, union_meter = utils.AverageMeter(), utils.AverageMeter(), utils.AverageMeter()
    images = []
    for i, (pred, label) in enumerate(maps):
        np.save(os.path.join(folder, "pred_%d.npy" % i), pred)
        np.save(os.path.join(folder, "label_%d.npy" % i), label)
        acc, pix = utils.accuracy(pred, label)
        intersection, union = utils.intersectionAndUnion(pred, label, num_class)
        acc_meter.update(acc, pix)
        intersection_meter.update(intersection)
        union_meter.update(union)
        images.append({"acc": float(acc), "pix": int(pix), "intersection": [int(v) for v in intersection],
                       "union": [int(v) for v in union]})
    iou = intersection_meter.sum / (union_meter.sum + 1e-10)
    result = {"num_class": num_class, "images": images,
              "dataset": {"intersection": [int(v) for v in intersection_meter.sum],
                          "union": [int(v) for v in union_meter.sum], "iou": [float(v) for v in iou],
                          "miou": float(iou.mean()), "accuracy": float(acc_meter.average())}}
    with open(os.path.join(folder, "results.json"), "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    print("%-8s %d maps: Mean IoU: %.4f, Accuracy: %.2f%%" % (name, len(maps), iou.mean(), acc_meter.average() * 100))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream", help="a checkout of semantic-segmentation-pytorch (default: HEAD of " + MIRROR + ")")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "..", "tests", "golden", "eval"))
    args = parser.parse_args()
    root = os.path.abspath(args.out)
    utils = upstream_utils(args.upstream)
    run_case(utils, root, "hand", 5, hand_maps())
    run_case(utils, root, "random", 150, random_maps(np.random.default_rng(150), 150, 4, 29, 31))
    print("golden files written to", root)


if __name__ == "__main__":
    main()
