#!/usr/bin/env bash
# The measurement behind the CPU conv dispatcher's smallest channel count for Winograd
# (kernels/cpu/conv2d_dispatch.cpp, winograd_tile): square C -> C 3x3 stride-1 layers at S/4
# (lab_winograd --channels), each pass through the implicit GEMM and through F(2x2), counted in
# instructions by callgrind (repeatable on a busy machine, unlike seconds) and, with --time, also in
# CPU seconds of one thread (only meaningful on an idle machine).
#
#   tools/bench/winograd_channels.sh [--channels 8,16,24,32,48,64] [--size 256] [--batch 4] [--time]
#
# Prints one line per channel count and pass: instructions of each path and their ratio
# (F(2x2) / implicit GEMM; below 1: Winograd is cheaper). valgrind runs AVX2 code (it does not
# emulate AVX-512), which is the ISA of issue 20's target machine. About 1-3 minutes per channel count.
set -euo pipefail
cd "$(dirname "$0")/../.."
channels=8,16,24,32,48,64 size=256 batch=4 timing=0
while [ $# -gt 0 ]; do
  case "$1" in
    --channels) channels="$2"; shift 2 ;;
    --size) size="$2"; shift 2 ;;
    --batch) batch="$2"; shift 2 ;;
    --time) timing=1; shift ;;
    *) echo "usage: $0 [--channels LIST] [--size S] [--batch B] [--time]" >&2; exit 2 ;;
  esac
done
lab=${SEG_BUILD_DIR:-build}/bin/lab_winograd
[ -x "$lab" ] || { echo "$lab not built (cmake --build build --target lab_winograd)" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "valgrind not installed (apt-get install valgrind)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# instructions C ALGO: callgrind's inclusive counts of the three pass functions, "fwd bwd_data bwd_weight"
instructions() {
  local c=$1 algo=$2 fn
  case $algo in
    gemm) fn=gemm ;;
    *) fn=winograd ;;
  esac
  valgrind --tool=callgrind --callgrind-out-file="$work/cg.$c.$algo" --collect-atstart=no \
    --toggle-collect="*conv2d_forward_$fn*" --toggle-collect="*conv2d_backward_data_$fn*" \
    --toggle-collect="*conv2d_backward_weight_$fn*" \
    "$lab" time --size "$size" --batch "$batch" --threads 1 --reps 1 --channels "$c" --algos "$algo" \
    >"$work/lab.$c.$algo" 2>"$work/vg.$c.$algo"
  local out=""
  for pass in forward backward_data backward_weight; do
    # the outermost frame of each pass: the largest inclusive count among its function's entries
    local n
    n=$(callgrind_annotate --inclusive=yes "$work/cg.$c.$algo" 2>/dev/null |
      grep "conv2d_${pass}_$fn" | sed 's/^ *\([0-9,]*\).*/\1/' | tr -d , | sort -n | tail -1)
    out="$out ${n:-0}"
  done
  echo "$out"
}

echo "lab_winograd --channels sweep: C -> C 3x3 stride 1 at $((size / 4))x$((size / 4)), batch $batch, 1 thread (callgrind, AVX2)"
printf '%-6s %-16s %16s %16s %8s\n' C pass "implicit GEMM" "F(2x2)" ratio
for c in ${channels//,/ }; do
  read -r -a g <<<"$(instructions "$c" gemm)"
  read -r -a w <<<"$(instructions "$c" winograd2)"
  passes=(forward "backward data" "backward weight")
  for i in 0 1 2; do
    printf '%-6s %-16s %16s %16s %8s\n' "$c" "${passes[$i]}" "${g[$i]}" "${w[$i]}" \
      "$(awk -v a="${w[$i]}" -v b="${g[$i]}" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')"
  done
done
if [ "$timing" = 1 ]; then
  echo
  echo "CPU seconds, one thread (lab_winograd time --reps 5):"
  "$lab" time --size "$size" --batch "$batch" --threads 1 --reps 5 --channels "$channels" --algos gemm,winograd2
fi
