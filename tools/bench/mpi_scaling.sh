#!/usr/bin/env bash
# CPU data-parallel scaling: 2 MPI ranks of T threads each against 1 process of T threads, at the
# same global batch (the one process runs both sub-batches per step: TRAIN.sub_batches_per_rank 2),
# in alternating rounds in one session. A third run per round gives the ceiling: two independent
# processes of one sub-batch each at the same time (2 ranks with free communication; what the
# machine itself costs when two run at once). Prints each round's seconds per step and the medians.
# Issue 16's goal: 2 ranks x 1 thread >= 1.7x one process of 1 thread on the 2-core machine.
#
#   tools/bench/mpi_scaling.sh [--rounds R] [--steps N] [--threads T] [--batch B] [--size S]
#                              [--model ENCODER-DECODER] [--sync-bn]
#
# --sync-bn: the 2 ranks run SyncBN (TRAIN.sync_bn true, the training default: one more all-reduce
# pair per BatchNorm, forward and backward); without it BatchNorm is per rank, as the one process's
# per sub-batch BatchNorm. Either way the two sides do the same arithmetic work per step.
#
# Defaults: 3 rounds, 12 steps (the first 2 not timed), 1 thread, batch 2 per sub-batch, 128-px
# images of the generated dataset, MobileNetV2dilated-C1_deepsup. Needs build/bin/segtrain built
# with MPI and mpirun (tools/install-deps.sh). The step time is wall-clock from history.csv rows
# (images per second of each logged step, averaged over the timed steps).
set -euo pipefail
cd "$(dirname "$0")/../.."

rounds=3 steps=12 threads=1 batch=2 size=128 model=mobilenetv2dilated-c1_deepsup sync_bn=false
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --batch) batch="$2"; shift 2 ;;
    --size) size="$2"; shift 2 ;;
    --model) model="$2"; shift 2 ;;
    --sync-bn) sync_bn=true; shift ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "mpi_scaling.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
for n in "$rounds" "$steps" "$threads" "$batch" "$size"; do
  [[ $n =~ ^[0-9]+$ ]] || { echo "mpi_scaling.sh: '$n' is not a non-negative integer" >&2; exit 2; }
done
[ "$steps" -gt 2 ] || { echo "mpi_scaling.sh: --steps must be > 2 (2 warm-up steps)" >&2; exit 2; }
segtrain="${SEG_BUILD_DIR:-build}/bin/segtrain"
[ -x "$segtrain" ] || { echo "mpi_scaling.sh: $segtrain not found: run tools/build.sh first" >&2; exit 1; }
command -v mpirun >/dev/null || { echo "mpi_scaling.sh: mpirun not found (tools/install-deps.sh)" >&2; exit 1; }
encoder="${model%-*}" decoder="${model#*-}"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$segtrain" data synth --out "$work/ds" --train 64 --val 4 --size "$size-$size" --threads 2 >/dev/null
fc_dim=2048
case "$encoder" in mobilenet*) fc_dim=320 ;; resnet18*) fc_dim=512 ;; hrnet*) fc_dim=720 ;; esac
common=(--cfg configs/synth-mobilenetv2dilated-c1_deepsup.json --threads "$threads"
  MODEL.arch_encoder "$encoder" MODEL.arch_decoder "$decoder" MODEL.fc_dim "$fc_dim"
  DATASET.root_dataset "$work/ds" DATASET.list_train "$work/ds/training.odgt" DATASET.list_val "$work/ds/validation.odgt"
  DATASET.num_class 10 DATASET.imgSizes "($size,)" DATASET.imgMaxSize "$size"
  TRAIN.batch_size_per_gpu "$batch" TRAIN.num_epoch 1 TRAIN.epoch_iters "$steps" TRAIN.disp_iter 1 TRAIN.workers 1
  TRAIN.sync_bn false)

# Mean seconds per step over the rows after the first two: (images per step) / (images per second).
step_seconds() {
  awk -F, -v images="$2" 'NR > 3 { s += images / $7; n++ } END { printf "%.4f", s / n }' "$1/history.csv"
}
echo "model $model, ${size}px, global batch $((2 * batch)), $steps steps (2 warm-up), $threads thread(s) per process, 2 ranks with TRAIN.sync_bn $sync_bn"
printf "%-6s %14s %13s %17s %9s %9s\n" round "1 process (s)" "2 ranks (s)" "2 independent (s)" speed-up ceiling
ratios=() ceilings=()
for r in $(seq 1 "$rounds"); do
  "$segtrain" train "${common[@]}" DIR "$work/one$r" TRAIN.sub_batches_per_rank 2 >/dev/null
  mpirun --allow-run-as-root --oversubscribe -np 2 "$segtrain" train "${common[@]}" DIR "$work/two$r" TRAIN.sync_bn "$sync_bn" >/dev/null
  # The ceiling: two independent processes of one sub-batch each, at the same time.
  "$segtrain" train "${common[@]}" DIR "$work/a$r" >/dev/null &
  "$segtrain" train "${common[@]}" DIR "$work/b$r" TRAIN.seed 305 >/dev/null
  wait
  one=$(step_seconds "$work/one$r" $((2 * batch))) two=$(step_seconds "$work/two$r" $((2 * batch)))
  a=$(step_seconds "$work/a$r" "$batch") b=$(step_seconds "$work/b$r" "$batch")
  free=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.4f", (a > b ? a : b) }')  # a step waits for the slower rank
  ratio=$(awk -v a="$one" -v b="$two" 'BEGIN { printf "%.3f", a / b }')
  ceiling=$(awk -v a="$one" -v b="$free" 'BEGIN { printf "%.3f", a / b }')
  ratios+=("$ratio") ceilings+=("$ceiling")
  printf "%-6s %14s %13s %17s %9s %9s\n" "$r" "$one" "$two" "$free" "${ratio}x" "${ceiling}x"
done
median() { printf "%s\n" "$@" | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo "median speed-up of 2 ranks over 1 process: $(median "${ratios[@]}")x (ceiling, two independent processes: $(median "${ceilings[@]}")x)"
