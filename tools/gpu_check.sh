#!/usr/bin/env bash
# One call on a machine with a GPU (the lent H200 of the `device` tool): build the CUDA backend for
# sm_90, run the GPU and simulator suites and the CUDA kernel lab (lab_tc; at most 6 more minutes),
# time a CPU training step for reference, print a short table. Designed to fit a few minutes of
# device time; every stage has its own time limit and the table says which stage failed, so one
# call answers "does it build, do the GPU tests pass".
#
#   tools/gpu_check.sh            # build into build-gpu/, then test
#   GPU_CHECK_JOBS=16 tools/gpu_check.sh
set -u
cd "$(dirname "$0")/.."
jobs=${GPU_CHECK_JOBS:-$(nproc)}
out=${OUT:-/tmp}/gpu_check
mkdir -p "$out"
declare -a rows

stage() {  # stage NAME LIMIT_S COMMAND...: runs, records status and seconds, keeps the log
  local name=$1 limit=$2
  shift 2
  local t0=$(date +%s)
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  local secs=$(($(date +%s) - t0))
  local status=ok
  [ $rc -eq 124 ] && status="timeout (${limit}s)"
  [ $rc -ne 0 ] && [ $rc -ne 124 ] && status="failed (rc $rc)"
  rows+=("$(printf '%-22s %-18s %5ss  %s' "$name" "$status" "$secs" "$out/$name.log")")
  return $rc
}

stage gpu_info 30 nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
stage configure 120 cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DSEG_CUDA=ON \
  -DSEG_CUDA_ARCHITECTURES=90 -DSEG_SIM=ON
stage build 420 cmake --build build-gpu -j "$jobs" &&
  {
    stage gpu_tests 120 ctest --test-dir build-gpu -L gpu --output-on-failure
    stage sim_tests 120 ctest --test-dir build-gpu -L sim --output-on-failure
    # The CUDA kernel lab (docs/tensor-cores.md): every version validated, timed warm and cold,
    # TFLOP/s and the share of cuBLASLt / cuDNN.
    stage lab_gemm 120 build-gpu/bin/lab_tc gemm
    stage lab_conv_resnet50 150 build-gpu/bin/lab_tc conv --model resnet50
    stage lab_conv_mobilenet 90 build-gpu/bin/lab_tc conv --model mobilenet
    stage cpu_step_bench 120 build-gpu/bin/segtrain bench --model mobilenetv2dilated-c1_deepsup \
      --size 256 --batch 4 --steps 3
  }

echo
echo "gpu_check: $(head -2 "$out/gpu_info.log" 2>/dev/null | tail -1)"
printf '%-22s %-18s %6s  %s\n' stage status time log
for r in "${rows[@]}"; do echo "$r"; done
grep -h "per step\|tests passed\|Skipped" "$out"/gpu_tests.log "$out"/sim_tests.log "$out"/cpu_step_bench.log 2>/dev/null
grep -h "reaches\|FAILED" "$out"/lab_*.log 2>/dev/null
