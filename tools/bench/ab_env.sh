#!/usr/bin/env bash
# A/B of one segtrain build under two environment settings, in alternating rounds in one session
# (A, B, A, B, ...), so that both see the same machine state. Prints every run's step time and peak
# memory, then the medians and the ratio B/A (below 1: B is faster).
#
#   tools/bench/ab_env.sh [--rounds R] [--bin PATH] A_SETTING B_SETTING -- SEGTRAIN_BENCH_ARGS...
#
# A setting is VAR=VALUE (or "-" for the environment as it is). Example, BatchNorm+ReLU6 fusion off
# against on (docs/performance.md "BatchNorm + ReLU(6)"):
#
#   tools/bench/ab_env.sh --rounds 3 SEG_FUSE_BN_ACT=0 SEG_FUSE_BN_ACT=1 -- \
#       --model mobilenetv2dilated-c1_deepsup --size 256 --batch 4 --threads 2 --steps 5 --num-class 150
set -euo pipefail
cd "$(dirname "$0")/../.."

rounds=3 bin=build/bin/segtrain
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds="$2"; shift 2 ;;
    --bin) bin="$2"; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) break ;;
  esac
done
[ $# -ge 3 ] && [ "$3" = "--" ] || { echo "ab_env.sh: usage: ab_env.sh [--rounds R] [--bin PATH] A B -- BENCH_ARGS (see --help)" >&2; exit 2; }
a="$1" b="$2"
shift 3
[ -x "$bin" ] || { echo "ab_env.sh: $bin not found or not executable (build with tools/build.sh)" >&2; exit 2; }
for s in "$a" "$b"; do
  [ "$s" = "-" ] || [[ "$s" == *=* ]] || { echo "ab_env.sh: '$s' is not VAR=VALUE or -" >&2; exit 2; }
done

run() {  # run SETTING -> prints "total_ms peak_MiB"
  local out
  if [ "$1" = "-" ]; then out=$("$bin" bench "${@:2}" 2>&1); else out=$(env "$1" "$bin" bench "${@:2}" 2>&1); fi
  local total peak
  total=$(sed -n 's/.*total \([0-9.]*\) ms.*/\1/p' <<<"$out" | head -1)
  peak=$(sed -n 's/^peak memory \([0-9.]*\) MiB.*/\1/p' <<<"$out" | head -1)
  [ -n "$total" ] || { echo "ab_env.sh: segtrain bench printed no step time:" >&2; echo "$out" >&2; exit 1; }
  echo "$total $peak"
}

median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

ta=() tb=()
echo "segtrain bench $*"
for ((r = 1; r <= rounds; ++r)); do
  read -r x xm <<<"$(run "$a" "$@")"
  read -r y ym <<<"$(run "$b" "$@")"
  ta+=("$x") tb+=("$y")
  printf 'round %d: A (%s) %s ms, %s MiB   B (%s) %s ms, %s MiB\n' "$r" "$a" "$x" "$xm" "$b" "$y" "$ym"
done
ma=$(printf '%s\n' "${ta[@]}" | median)
mb=$(printf '%s\n' "${tb[@]}" | median)
awk -v a="$ma" -v b="$mb" -v sa="$a" -v sb="$b" \
  'BEGIN {printf "median: A (%s) %.1f ms, B (%s) %.1f ms, B/A %.3f\n", sa, a, sb, b, b / a}'
