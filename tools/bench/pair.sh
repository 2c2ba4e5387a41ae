#!/usr/bin/env bash
# Side-by-side training-step benchmark: segtrain against PyTorch running upstream's own model code,
# in alternating pairs in one session, so that both sides see the same machine state (load, clock,
# thermal). Prints every pair and, per model, the median of each side and of the ratio.
#
#   tools/bench/pair.sh [--rounds R] [--size S] [--batch B] [--threads T] [--num-class K]
#                       [--steps N] [--warmup W] [--torch-memory-format channels_last|nchw]
#                       [--isa avx2] [MODEL ...]
#
# Defaults: 3 rounds, 256x256, batch 4, 2 threads, 150 classes, 5 measured steps after 2 warm-up
# steps, the models MobileNetV2dilated-C1_deepsup and ResNet50dilated-PPM_deepsup (issue 20's pair).
# Needs build/bin/segtrain (tools/build.sh) and a Python with PyTorch for tools/bench/torch_step.py:
# $SEG_TORCH_PYTHON if set, else the PyTorch 2.x venv of tools/bench/torch_venv.sh when it exists
# ($HOME/.cache/segtrain-torch-venv), else Debian's python3-torch (1.13) as /usr/bin/python3;
# nothing in the build or the tests depends on it. The ratio is segtrain's step time divided by
# PyTorch's: below 1 means segtrain is faster. PyTorch runs channels_last unless told otherwise;
# which layout is faster for PyTorch depends on the model and machine, so measure both.
# --isa avx2 caps both sides to AVX2 on an AVX-512 CPU: SEG_CPU_ISA=avx2 for segtrain, and for
# PyTorch ATEN_CPU_CAPABILITY=avx2 with ONEDNN_MAX_CPU_ISA=AVX2 (DNNL_ for older oneDNN); oneDNN's
# verbose mode confirms it (`isa:Intel AVX2`). It stands in for an AVX2-only machine's instruction
# set, not for its cores and caches.
set -euo pipefail
cd "$(dirname "$0")/../.."

rounds=3 size=256 batch=4 threads=2 num_class=150 steps=5 warmup=2 layout=channels_last isa=""
models=()
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds="$2"; shift 2 ;;
    --size) size="$2"; shift 2 ;;
    --batch) batch="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --num-class) num_class="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --warmup) warmup="$2"; shift 2 ;;
    --torch-memory-format) layout="$2"; shift 2 ;;
    --isa) isa="$2"; shift 2 ;;
    -h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --*) echo "pair.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) models+=("$1"); shift ;;
  esac
done
[ ${#models[@]} -gt 0 ] || models=(mobilenetv2dilated-c1_deepsup resnet50dilated-ppm_deepsup)
for n in "$rounds" "$size" "$batch" "$threads" "$num_class" "$steps" "$warmup"; do
  [[ $n =~ ^[0-9]+$ ]] || { echo "pair.sh: '$n' is not a non-negative integer" >&2; exit 2; }
done
case "$isa" in
  "") ;;
  avx2) export SEG_CPU_ISA=avx2 ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 DNNL_MAX_CPU_ISA=AVX2 ;;
  *) echo "pair.sh: --isa takes avx2 (a cap both sides honour), not '$isa'" >&2; exit 2 ;;
esac
segtrain="${SEG_BUILD_DIR:-build}/bin/segtrain"
[ -x "$segtrain" ] || { echo "pair.sh: $segtrain not found: run tools/build.sh first" >&2; exit 1; }
# One import of torch per candidate (a few seconds each): its version doubles as the "can import" check.
torch_version() { "$1" -c 'import torch; print(torch.__version__)' 2>/dev/null; }
venv_python="$HOME/.cache/segtrain-torch-venv/bin/python"
if [ -n "${SEG_TORCH_PYTHON:-}" ]; then python="$SEG_TORCH_PYTHON" version=$(torch_version "$python" || true)
elif [ -x "$venv_python" ] && version=$(torch_version "$venv_python"); then python="$venv_python"
else python=/usr/bin/python3 version=$(torch_version "$python" || true); fi
[ -n "$version" ] || { echo "pair.sh: $python cannot import torch (tools/bench/torch_venv.sh for PyTorch 2.x, or apt-get install python3-torch for 1.13)" >&2; exit 1; }

common=(--model MODEL --size "$size" --batch "$batch" --threads "$threads" --num-class "$num_class" --steps "$steps" --warmup "$warmup")
echo "pair.sh: $rounds rounds, batch $batch x ${size}x${size}, $threads threads, $num_class classes, $steps steps after $warmup warm-up"
echo "  segtrain: $segtrain bench ${common[*]}"
echo "  pytorch : $python tools/bench/torch_step.py ${common[*]} --memory-format $layout (PyTorch $version)"
[ -z "$isa" ] || echo "  ISA capped to $isa: SEG_CPU_ISA=$SEG_CPU_ISA ATEN_CPU_CAPABILITY=$ATEN_CPU_CAPABILITY ONEDNN_MAX_CPU_ISA=$ONEDNN_MAX_CPU_ISA"
echo "  $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"

median() { sort -g | awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

summary=()
for model in "${models[@]}"; do
  args=("${common[@]}")
  args[1]="$model"
  ours=() theirs=() ratios=()
  for ((r = 1; r <= rounds; ++r)); do
    # segtrain prints "per step: ... total X ms", torch_step.py "X ms per training step".
    out=$("$segtrain" bench "${args[@]}" 2>&1) || { echo "$out" >&2; exit 1; }
    a=$(sed -n 's/^per step: .*total \([0-9.]*\) ms.*/\1/p' <<<"$out")
    out=$("$python" tools/bench/torch_step.py "${args[@]}" --memory-format "$layout" 2>&1) || { echo "$out" >&2; exit 1; }
    b=$(sed -n 's/.*: \([0-9.]*\) ms per training step.*/\1/p' <<<"$out")
    [ -n "$a" ] && [ -n "$b" ] || { echo "pair.sh: could not read a step time for $model" >&2; exit 1; }
    ratio=$(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.3f", a / b}')
    printf '%-34s round %d: segtrain %9.1f ms  pytorch %9.1f ms  ratio %s\n' "$model" "$r" "$a" "$b" "$ratio"
    ours+=("$a") theirs+=("$b") ratios+=("$ratio")
  done
  summary+=("$(printf '| %s | %.1f ms | %.1f ms | %.3f |' "$model" \
    "$(printf '%s\n' "${ours[@]}" | median)" "$(printf '%s\n' "${theirs[@]}" | median)" \
    "$(printf '%s\n' "${ratios[@]}" | median)")")
done
echo
echo "| model (median of $rounds pairs) | segtrain | PyTorch $version ($layout) | segtrain / PyTorch |"
echo "|---|---|---|---|"
printf '%s\n' "${summary[@]}"
