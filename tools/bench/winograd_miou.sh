#!/usr/bin/env bash
# Does Winograd F(2x2) in the 3x3 convolutions change what the demo model learns? Trains the demo's
# model and data (configs/synth-mobilenetv2dilated-c1_deepsup.json on data-gen/synth, 1000 steps)
# for each SEED and each conv algorithm (SEG_CONV_ALGO: auto = the dispatcher's choice, which runs
# the C1 head's 3x3 as Winograd; no-winograd = the same choice with Winograd taken out, so the C1
# head's 3x3 runs the implicit GEMM and the depthwise layers keep their kernel), evaluates the last
# epoch, and prints one mIoU / pixel-accuracy line per run (issue 20's "two seeds" check, the AMP
# report's method). About 6-10 minutes per run on 2 cores.
#
#   tools/bench/winograd_miou.sh [--threads T] SEED:ALGO ...
#     e.g. 304:auto 304:no-winograd 2:auto 2:no-winograd
#
# Needs build/bin/segtrain and the demo's dataset (segtrain demo writes it to data-gen/synth).
set -euo pipefail
cd "$(dirname "$0")/../.."
threads=2
if [ "${1:-}" = "--threads" ]; then threads="$2"; shift 2; fi
[ $# -gt 0 ] || { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
segtrain="${SEG_BUILD_DIR:-build}/bin/segtrain"
data=data-gen/synth
[ -f "$data/training.odgt" ] || { echo "winograd_miou.sh: $data not found: run segtrain demo once" >&2; exit 1; }
cfg=configs/synth-mobilenetv2dilated-c1_deepsup.json
mkdir -p runs/winograd-miou
for run in "$@"; do
  seed="${run%%:*}" algo="${run#*:}"
  [[ $seed =~ ^[0-9]+$ ]] && [[ $algo =~ ^(auto|no-winograd|winograd|winograd2)$ ]] || { echo "winograd_miou.sh: bad run '$run' (SEED:ALGO)" >&2; exit 2; }
  dir="runs/winograd-miou/seed${seed}-${algo}"
  rm -rf "$dir"
  common=(--cfg "$cfg" --threads "$threads" DIR "$dir" DATASET.root_dataset "$data"
          DATASET.list_train "$data/training.odgt" DATASET.list_val "$data/validation.odgt" TRAIN.seed "$seed")
  env_algo=()
  [ "$algo" = auto ] || env_algo=(SEG_CONV_ALGO="$algo")
  start=$(date +%s)
  env "${env_algo[@]}" "$segtrain" train "${common[@]}" >"$dir.train.log" 2>&1 || { tail -20 "$dir.train.log" >&2; exit 1; }
  env "${env_algo[@]}" "$segtrain" eval "${common[@]}" VAL.checkpoint epoch_10.pth >"$dir.eval.log" 2>&1 || { tail -20 "$dir.eval.log" >&2; exit 1; }
  printf 'seed %-5s %-11s %s (%d s)\n' "$seed" "$algo" "$(grep -o 'Mean IoU: [0-9.]*, Accuracy: [0-9.]*%' "$dir.eval.log")" \
    "$(( $(date +%s) - start ))"
done
