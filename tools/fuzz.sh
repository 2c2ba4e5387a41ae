#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang (-fsanitize=fuzzer,address,undefined) and runs
# each for a bounded time on a copy of its seed corpus.
#
#   tools/fuzz.sh                      # every target, 60 s each
#   SEG_FUZZ_SECONDS=600 tools/fuzz.sh odgt npy
#
# Environment: SEG_FUZZ_SECONDS (per target, default 60), SEG_FUZZ_BUILD_DIR (default build-fuzz),
# SEG_FUZZ_WORK_DIR (grown corpora and crash files, default $SEG_FUZZ_BUILD_DIR/work), SEG_JOBS.
# A crash, leak, UB report, timeout or out-of-memory stops the target; the input is written to
# WORK/<target>/crash-* (or leak-*, timeout-*, oom-*), the script prints it and exits 1. Fix the bug,
# then keep the input: copy it to tests/fuzz/regressions/<target>/ (test_fuzz_replay replays it in
# every normal build). docs/reliability.md says what the targets check and what they found.
# SEG_JOBS targets run at a time (default 2), each for SEG_FUZZ_SECONDS.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${SEG_FUZZ_SECONDS:-60}"
build="${SEG_FUZZ_BUILD_DIR:-build-fuzz}"
work="${SEG_FUZZ_WORK_DIR:-$build/work}"
jobs="${SEG_JOBS:-2}"
all_targets="odgt config_json config_yaml safetensors npy image"
targets="${*:-$all_targets}"

command -v clang++ >/dev/null || { echo "fuzz: clang++ not found (Debian package clang)"; exit 1; }
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DSEG_FUZZ=ON -DSEG_CUDA=OFF -DSEG_SIM=OFF -DSEG_BUILD_TESTS=OFF >"$build.configure.log" 2>&1 \
  || { cat "$build.configure.log"; exit 1; }
# shellcheck disable=SC2086
cmake --build "$build" -j "$jobs" --target $(for t in $targets; do echo "fuzz_$t"; done)

# One target: its report goes to WORK/<target>.report, its result to WORK/<target>.status, so that
# SEG_JOBS targets can run side by side (each libFuzzer process uses one core) and the reports
# still print in order.
fuzz_one() {
  local t="$1" corpus="$work/$1/corpus" t0
  mkdir -p "$corpus"
  cp -n tests/fuzz/corpus/"$t"/* "$corpus"/ 2>/dev/null || true
  # Regression inputs seed the search too, except those that take 100 ms or more to run: a header
  # claiming 134 megapixels (the image target's memory and timeout findings) makes every mutation
  # of it as slow, and seeding them cut CI's 60 s image round from about 560 000 runs to 2 158 on
  # 2026-12-03. test_fuzz_replay still runs every one of them in every build.
  local r ms
  for r in tests/fuzz/regressions/"$t"/*; do
    [ -f "$r" ] || continue
    ms=$("$build/bin/fuzz_$t" -runs=1 "$r" 2>&1 | sed -n 's/^Executed .* in \([0-9]*\) ms$/\1/p')
    if [ -n "$ms" ] && [ "$ms" -lt 100 ]; then cp -n "$r" "$corpus"/; fi
  done
  {
    echo "=== fuzz $t: ${seconds} s, corpus $(ls "$corpus" | wc -l) inputs"
    t0=$(date +%s)
    # -rss_limit_mb: a decoder that believes a header claiming gigapixels is a bug (data/image_codec.cpp
    # refuses > 2^27 pixels before decoding); -timeout: one input may not take 10 s.
    if ! "$build/bin/fuzz_$t" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
         -artifact_prefix="$work/$t/" "$corpus" >"$work/$t.log" 2>&1; then
      echo 1 >"$work/$t.status"
      echo "fuzz $t: FAILED after $(( $(date +%s) - t0 )) s; the input:"
      ls "$work/$t"/crash-* "$work/$t"/leak-* "$work/$t"/timeout-* "$work/$t"/oom-* 2>/dev/null || true
      grep -E "ERROR|SUMMARY|property failed|terminate|==[0-9]+==" "$work/$t.log" | head -20 || true
      echo "(full log: $work/$t.log)"
    else
      echo 0 >"$work/$t.status"
      echo "fuzz $t: ok in $(( $(date +%s) - t0 )) s; $(grep -E '^stat::number_of_executed_units' "$work/$t.log" | awk '{print $2}') runs, " \
           "corpus now $(ls "$corpus" | wc -l) inputs, coverage: $(grep -oE 'cov: [0-9]+' "$work/$t.log" | tail -1)"
    fi
  } >"$work/$t.report" 2>&1
}

mkdir -p "$work"
for t in $targets; do
  rm -f "$work/$t.status" "$work/$t.report"
  fuzz_one "$t" &
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
done
wait
status=0
for t in $targets; do
  cat "$work/$t.report" 2>/dev/null || echo "fuzz $t: no report"
  [ "$(cat "$work/$t.status" 2>/dev/null)" = 0 ] || status=1
done
exit $status
