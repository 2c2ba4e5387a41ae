#!/usr/bin/env bash
# One call on a machine with a GPU (the lent H200 of the `device` tool: one command, at most 600 s,
# no package registry, no network) that measures everything at once, with binaries built elsewhere:
#
#   1. HERE, on the build machine (no GPU needed):  tools/gpu_prepare.sh
#      builds the CUDA configuration for sm_90 into build-gpu/, and collects into gpu-carry/ the
#      stripped binaries and the shared libraries the GPU machine may lack (one xz archive, about
#      8 MiB, unpacked here into a scratch folder), the gpu test list, the simulator's roofline
#      estimates for the lab's small shapes and upstream's model code; it prints the exact device
#      call (command, carry list, timeout).
#   2. THERE, the one call:                          bash tools/gpu_check.sh
#
# Stages, in order, each with its own time limit (seconds). Their limits sum to 695 s; a global
# budget (--budget, 540) shortens or skips the later stages when the earlier ones ran long, so a
# 600 s call ends with the table printed even if every stage runs out its limit (the first H200
# call's stages took 310 s in all):
#   probe               20  nvidia-smi, glibc, the carried binaries' libraries resolve, segtrain info
#   allreduce           30  lab_allreduce 8 B..1 GiB: nccl-tests-style algbw/busbw, every element checked
#   <gpu suites>       100  every ctest of label gpu (test_gpu, test_kernels_cuda_gpu, test_cuda_gpu...),
#                           run directly (ctest's files hold the build machine's paths), 100 s in
#                           all, at most 60 s each
#   bench_<model>_<amp> 120 segtrain bench --device cuda:0, MobileNetV2dilated-C1_deepsup (25 s each)
#                           and ResNet50dilated-PPM_deepsup (35 s each), batch 8, 512x512, O0 and O2
#   torch               45  tools/bench/torch_step.py, the same four steps in the machine's PyTorch
#                           (channels_last; O0 f32, and torch.autocast f16 + GradScaler beside O2)
#   lab_small           20  lab_tc on the shapes the simulator estimated (gpu-carry/lab_estimates.txt)
#   lab_gemm            50  lab_tc gemm: square 4096, 8192 and a thin deep shape vs cuBLASLt
#   ncu                100  Nsight Compute on one launch each: GEMM v14 (the product's), cuBLASLt, v4,
#                           v7 at 4096^3; the product's dilated 3x3 convolution, forward, backward
#                           data and backward weight (and backward data with K-major weights, conv
#                           v6; backward weight split the old way, conv v4);
#                           tools/ncu_summary.py's table (tensor pipe, issue, stalls, conflicts)
#   lab_conv_mobilenet  60  lab_tc conv --model mobilenet vs cuDNN (it ran out of 40 s on the first H200)
#   lab_conv_resnet50   90  lab_tc conv --model resnet50 vs cuDNN
#   lab_conv_resnet50_f32 60 lab_tc conv 3,8,9 --dtype f32 --model resnet50: O0's TF32 convolutions,
#                           the product (v3, mma.sync m16n8k8) against its backward kernels as before
#                           2026-12-07 (v8, one block per SM), TF32 WMMA (v9) and cuDNN (or more: all
#                           the budget left); the three lab_conv
#                           stages
#                           print the auto engine's table rows (--emit-auto-table) at the end
# The lab runs with --reps 10 --warmup 3 --slow-cap 4: the SIMT versions (GEMM v1/v2, conv v1) only
# on shapes of at most 4 GFLOP. Then it prints: segtrain against PyTorch per step, the simulator's
# estimate beside the measured time for the same kernels (model error, issue 13), the all-reduce
# table, and last one table of every stage (status, seconds, limit, result).
#
# $OUT (the device tool's output folder; default a temporary folder) receives two files:
# gpu_check_report.txt (what was printed, plus the full estimate-vs-measured join) and
# gpu_check_logs.tar.gz (every stage's full log and the report).
#
#   bash tools/gpu_check.sh [--dry-run] [--budget S] [--stages REGEX] [--carry DIR]
#     --dry-run      no GPU work: checks the carried binaries start (probe without nvidia-smi),
#                    then walks every stage with its limit and the budget, printing the command
#                    it would run, and prints the report and table (the time accounting's test)
#     --budget S     total seconds for the stages (default 540; GPU_CHECK_BUDGET)
#     --stages RE    run only the stages whose name matches (probe always runs), e.g. to rerun
#                    '^lab_' in a second call
#     --carry DIR    the folder gpu_prepare.sh filled (default gpu-carry)
# Exit status: 0 every stage that ran passed, 1 a stage failed or timed out (or the probe, for a
# library or glibc reason; nothing else runs then), 2 usage or no carry folder, 4 no GPU.
# The stage functions below run through `stage` (bash -c with exported functions): SC2317 is wrong.
# shellcheck disable=SC2317
set -u
cd "$(dirname "$0")/.." || exit 2
root=$PWD

dry=0 budget=${GPU_CHECK_BUDGET:-540} only="" carry=gpu-carry
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) dry=1; shift ;;
    --budget) budget="${2:-}"; shift 2 ;;
    --stages) only="${2:-}"; shift 2 ;;
    --carry) carry="${2:-}"; shift 2 ;;
    -h|--help) sed -n '2,/^# library or glibc reason/p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu_check.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ $budget =~ ^[0-9]+$ ]] || { echo "gpu_check.sh: --budget takes seconds, not '$budget'" >&2; exit 2; }
if [ ! -f "$carry/MANIFEST" ]; then
  echo "gpu_check.sh: '$carry/MANIFEST' not found: run tools/gpu_prepare.sh on the build machine first and" >&2
  echo "  carry its folder ($carry) with the call (gpu_prepare.sh prints the exact device call)" >&2
  exit 2
fi
carry=$(cd "$carry" && pwd)
out=${OUT:-$(mktemp -d /tmp/gpu_check_out.XXXXXX)}
mkdir -p "$out"
scratch=$(mktemp -d /tmp/gpu_check.XXXXXX)
logs=$scratch/gpu_check_logs
mkdir -p "$logs"
report=$logs/gpu_check_report.txt
t_start=$SECONDS
reserve=15  # seconds kept for the report, the tar and the table after the last stage

# The carried binaries and libraries travel as one xz archive (gpu_prepare.sh): unpacked here, with
# Python's tarfile where tar has no xz.
bin_dir=$scratch/carry/bin lib_dir=$scratch/carry/lib
mkdir -p "$scratch/carry"
if ! tar -C "$scratch/carry" -xJf "$carry/binaries.tar.xz" 2>/dev/null; then
  python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$carry/binaries.tar.xz" "$scratch/carry" \
    || { echo "gpu_check.sh: cannot unpack $carry/binaries.tar.xz (neither tar -J nor python3's tarfile)" >&2; exit 2; }
fi
echo "[gpu_check] unpacked $carry/binaries.tar.xz in $((SECONDS - t_start))s"

# --- the environment of the carried binaries (never of python3 and torch: the carried libstdc++ is
# for our binaries only). Libraries: the carried ones, then the GPU machine's toolkit, then the
# nvidia-* pip packages of its PyTorch (cuBLAS, cuDNN, NCCL live there).
pylibs=$(python3 - 2>/dev/null <<'EOF'
import glob, os, site
roots = site.getsitepackages() + [site.getusersitepackages()]
print(":".join(sorted({d for r in roots for d in glob.glob(os.path.join(r, "nvidia", "*", "lib"))})))
EOF
) || pylibs=""
ours_ld="$lib_dir:/usr/local/cuda/lib64:/usr/local/cuda/lib${pylibs:+:$pylibs}"
cudnn_lib=""
for d in ${ours_ld//:/ }; do
  if [ -z "$cudnn_lib" ] && [ -e "$d/libcudnn.so.9" ]; then cudnn_lib="$d/libcudnn.so.9"; fi
done
ours() {  # ours EXE ARGS...: a carried binary with its libraries
  env LD_LIBRARY_PATH="$ours_ld" ${cudnn_lib:+SEG_CUDNN_LIBRARY="$cudnn_lib"} "$bin_dir/$1" "${@:2}"
}
export carry bin_dir ours_ld cudnn_lib root logs
export -f ours

# --- stages ----------------------------------------------------------------------------------------
declare -a st_name st_status st_secs st_limit
failed=0
linebuf=(stdbuf -oL -eL)
command -v stdbuf >/dev/null 2>&1 || linebuf=()
left() { echo $((budget - (SECONDS - t_start) - reserve)); }
record() { st_name+=("$1") st_status+=("$2") st_secs+=("$3") st_limit+=("$4"); }

# stage NAME LIMIT COMMAND...: runs COMMAND (a function exported above, or a program) with the log
# NAME.log, within LIMIT seconds and what is left of the budget; records status and seconds.
stage() {
  local name=$1 limit=$2
  shift 2
  if [ -n "$only" ] && [ "$name" != probe ] && ! [[ $name =~ $only ]]; then return 0; fi
  local l; l=$(left)
  [ "$limit" -gt "$l" ] && limit=$l
  if [ "$limit" -lt 5 ]; then
    record "$name" "skipped: budget spent" 0 0
    echo "[gpu_check] $name: skipped (budget spent)"
    return 0
  fi
  local t0=$SECONDS rc=0
  echo "[gpu_check] $name: up to ${limit}s: $*"
  if [ $dry = 1 ]; then
    { echo "[dry run] would run within ${limit}s: $*"; sleep "${GPU_CHECK_DRY_SLEEP:-0}"; } >"$logs/$name.log" 2>&1
    record "$name" "dry run" $((SECONDS - t0)) "$limit"
    return 0
  fi
  # bash -c: COMMAND may be one of the exported functions. stdbuf: line-buffered output, so a stage
  # killed at its limit keeps every line it printed.
  timeout -k 5 "$limit" "${linebuf[@]}" bash -c '"$@"' _ "$@" </dev/null >"$logs/$name.log" 2>&1 || rc=$?
  local secs=$((SECONDS - t0)) status
  case $rc in
    0) status=ok ;;
    77) status="skipped (77)" ;;
    4) [ "$name" = probe ] && status="NO GPU (rc 4)" || status="FAILED (rc 4)"; failed=1 ;;
    124|137) status="TIMEOUT (${limit}s)"; failed=1 ;;
    *) status="FAILED (rc $rc)"; failed=1 ;;
  esac
  record "$name" "$status" "$secs" "$limit"
  echo "[gpu_check] $name: $status in ${secs}s"
  return $rc
}

probe() {
  local rc=0
  echo "== carried build"; cat "$carry/MANIFEST"
  echo "== glibc here: $(getconf GNU_LIBC_VERSION 2>/dev/null), needed: $(sed -n 's/^glibc needed: //p' "$carry/MANIFEST")"
  local need have
  need=$(sed -n 's/^glibc needed: \([0-9.]*\).*/\1/p' "$carry/MANIFEST")
  have=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')
  if [ -n "$need" ] && [ -n "$have" ] && [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | head -1)" != "$need" ]; then
    echo "PROBE: this machine's glibc $have is older than the $need the carried binaries need: build them on an older distribution"
    rc=1
  fi
  echo "== shared libraries (LD_LIBRARY_PATH=$ours_ld)"
  local exe
  for exe in "$bin_dir"/*; do
    local missing
    missing=$(LD_LIBRARY_PATH="$ours_ld" ldd "$exe" 2>&1 | grep -E "not found|version .* not found" || true)
    if [ -n "$missing" ]; then echo "PROBE: $(basename "$exe"): $missing"; rc=1; fi
  done
  LD_LIBRARY_PATH="$ours_ld" ldd "$bin_dir/segtrain" | grep -E "cudart|cublas|nccl|stdc\+\+|yaml"
  echo "cuDNN (dlopen): ${cudnn_lib:-not found in the library path: the cudnn engine will say so}"
  if [ "${GPU_CHECK_DRY:-0}" != 1 ]; then
    echo "== nvidia-smi"
    if ! command -v nvidia-smi >/dev/null 2>&1; then echo "PROBE: nvidia-smi not found: this machine has no NVIDIA driver"; return 4; fi
    nvidia-smi --query-gpu=index,name,memory.total,driver_version,compute_cap --format=csv,noheader || { echo "PROBE: nvidia-smi found no GPU"; return 4; }
    nvidia-smi | head -4 | tail -2
  fi
  echo "== segtrain info"
  ours segtrain info || rc=1
  return $rc
}
export -f probe

# Each gpu suite as ctest would run it (gpu-carry/gpu_tests.tsv: name, executable, arguments), in a
# scratch folder; exit 77 = skipped (a second GPU missing, ...).
gpu_suite() {
  local exe=$1; shift
  mkdir -p "$logs/suite_cwd" && cd "$logs/suite_cwd" && ours "$exe" "$@"
}
export -f gpu_suite

bench() {  # bench MODEL AMP
  ours segtrain bench --device cuda:0 --model "$1" --size 512 --batch 8 --amp "$2" --steps 10 --warmup 3
}
export -f bench

torch_steps() {
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())' || return 1
  [ -d "$carry/upstream/mit_semseg" ] || { echo "upstream's mit_semseg was not carried (gpu_prepare.sh)"; return 1; }
  python3 -u "$root/tools/bench/torch_step.py" --device cuda:0 --size 512 --batch 8 --steps 10 --warmup 3 \
    --model mobilenetv2dilated-c1_deepsup,resnet50dilated-ppm_deepsup --amp O0,autocast --upstream "$carry/upstream"
}
export -f torch_steps

# The lab's options on the GPU: fewer repetitions than its defaults (20 + 5) and the SIMT versions
# only on shapes of at most 4 GFLOP (each would take seconds per shape, warm and cold).
lab_opts="--reps 10 --warmup 3 --slow-cap 4"
# The CPU reference must be exact on the integer inputs: the implicit GEMM, never Winograd's
# fractional transforms (SEG_CONV_ALGO, kernels/cpu/conv2d.h).
# shellcheck disable=SC2086
lab() { SEG_CONV_ALGO=no-winograd ours lab_tc "$@" $lab_opts; }
lab_small() {  # every `# run:` line of the estimates file, on the GPU
  local rc=0 args
  while read -r args; do
    echo "### lab_tc $args $lab_opts"
    # shellcheck disable=SC2086
    lab $args || rc=1
  done < <(sed -n 's/^# run: //p' "$carry/lab_estimates.txt")
  return "$rc"
}
export lab_opts
export -f lab lab_small

# Hardware counters (Nsight Compute) on one launch of each kernel that decides the goals: the
# product's GEMM (lab v14) beside cuBLASLt and two older versions, and the product's convolution
# on ResNet50dilated's dilated 3x3 layer, forward and backward weight. The timings above say how
# fast; these say why (tensor pipe busy, issue slots, stall reasons, bank conflicts):
# tools/ncu_summary.py prints one line per kernel from the raw pages. The clocks are left alone
# (--clock-control none: the device tool's METHOD.md). ncu reads no counters on some machines (gVisor:
# "LibraryNotLoaded"); the stage then fails with that line and the other stages are unaffected.
ncu_profile() {  # ncu_profile TAG KERNEL_REGEX FLOP LAB_TC_ARGS...: one launch into ncu_TAG.csv
  local tag=$1 filter=$2 flop=$3 ncu
  shift 3
  ncu=$(command -v ncu || find /usr/local/cuda/bin /opt/nvidia/nsight-compute -maxdepth 2 -name ncu -type f 2>/dev/null | head -1)
  [ -n "$ncu" ] || { echo "ncu: not found (PATH, /usr/local/cuda/bin, /opt/nvidia/nsight-compute)"; return 1; }
  local kernel=() rep="$logs/../ncu_reports/ncu_$tag"
  [ -n "$filter" ] && kernel=(-k "regex:$filter")
  mkdir -p "$logs/../ncu_reports"
  echo "### ncu $tag: lab_tc $* (first launch${filter:+ matching $filter})"
  "$ncu" --clock-control none --target-processes all "${kernel[@]}" -c 1 \
    --section SpeedOfLight --section LaunchStats --section Occupancy --section SchedulerStats \
    --section WarpStateStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables \
    -f -o "$rep" env LD_LIBRARY_PATH="$ours_ld" ${cudnn_lib:+SEG_CUDNN_LIBRARY="$cudnn_lib"} \
    SEG_CONV_ALGO=no-winograd "$bin_dir/lab_tc" "$@" --reps 1 --warmup 0 --no-cold | grep -E "^==|^  v[0-9]+ " || true
  [ -f "$rep.ncu-rep" ] || { echo "ncu $tag: no report written"; return 1; }
  "$ncu" --import "$rep.ncu-rep" --page raw --csv >"$logs/ncu_$tag.csv" || return 1
  "$ncu" --import "$rep.ncu-rep" --page details >"$logs/ncu_${tag}_details.txt" 2>&1 || true
  echo "$logs/ncu_$tag.csv@$flop" >>"$logs/ncu_list.txt"
}
ncu_stage() {
  local rc=0 gemm=137438953472 conv=38654705664  # 2*4096^3; 2*8*64*64*256*256*9
  : >"$logs/ncu_list.txt"
  ncu_profile gemm_v14 gemm_tc_kernel "$gemm" gemm 14 --size 4096 4096 4096 || rc=1
  ncu_profile gemm_cublaslt "" "$gemm" gemm 16 --size 4096 4096 4096 || rc=1
  ncu_profile gemm_v4 gemm_tc_kernel "$gemm" gemm 4 --size 4096 4096 4096 || rc=1
  ncu_profile gemm_v7 gemm_tc_kernel "$gemm" gemm 7 --size 4096 4096 4096 || rc=1
  ncu_profile conv_fwd_dil2 gemm_tc_kernel "$conv" conv 3 --model resnet50 --layer "3x3 256->256 dil 2" --dir fwd || rc=1
  # Backward data ran at 71-77 TFLOP/s on the dense layers where forward ran 134-146, with a main
  # loop no longer than forward's (216 against 230 instructions per 32 HMMA, docs/tensor-cores.md):
  # its stall reasons beside forward's.
  ncu_profile conv_bwdd_dil2 gemm_tc_kernel "$conv" conv 3 --model resnet50 --layer "3x3 256->256 dil 2" --dir bwd-data || rc=1
  # ... and with the weights transposed so that B is K-major as in forward (conv v6).
  ncu_profile conv_bwdd_dil2_v6 gemm_tc_kernel "$conv" conv 6 --model resnet50 --layer "3x3 256->256 dil 2" --dir bwd-data || rc=1
  ncu_profile conv_bwdw_dil2 gemm_tc_kernel "$conv" conv 3 --model resnet50 --layer "3x3 256->256 dil 2" --dir bwd-weight || rc=1
  # The same layer split as before 2026-12-07 (conv v4: 144 blocks instead of 1152): warps per SM.
  ncu_profile conv_bwdw_dil2_v4 gemm_tc_kernel "$conv" conv 4 --model resnet50 --layer "3x3 256->256 dil 2" --dir bwd-weight || rc=1
  ncu_table || rc=1
  return "$rc"
}
ncu_table() {  # the summary of what was profiled (also run by the report: a stage cut short keeps its files)
  if [ ! -s "$logs/ncu_list.txt" ]; then
    echo "ncu: nothing profiled: $(grep -h -m1 "==ERROR==" "$logs/ncu.log" 2>/dev/null || echo "see ncu.log")"
    return 1
  fi
  # shellcheck disable=SC2046
  python3 "$root/tools/ncu_summary.py" $(cat "$logs/ncu_list.txt")
}
export -f ncu_profile ncu_stage ncu_table

# The stages.
if [ $dry = 1 ]; then
  # The probe's library and start-up checks run for real (no GPU needed), nvidia-smi does not.
  t0=$SECONDS rc=0
  GPU_CHECK_DRY=1 probe >"$logs/probe.log" 2>&1 || rc=$?
  record probe "$([ $rc = 0 ] && echo "ok (no GPU: dry run)" || echo "FAILED (rc $rc)")" $((SECONDS - t0)) 20
  [ $rc = 0 ] || failed=1
  echo "[gpu_check] probe (dry run: libraries and segtrain info only): rc $rc"
else
  stage probe 20 probe
  probe_rc=$?
fi
probe_failed=0
if [ $dry = 0 ] && [ "${probe_rc:-0}" != 0 ]; then
  probe_failed=1
  echo "[gpu_check] the probe failed (rc $probe_rc): nothing else runs. Its log:"
  sed 's/^/  /' "$logs/probe.log" | tail -20
else
  stage allreduce 30 ours lab_allreduce --min-bytes 8 --max-bytes 1G
  # The gpu suites share 100 s, at most 60 s each (one that hangs leaves time to the others).
  suites_end=$((SECONDS + 100))
  while IFS=$'\t' read -r name exe args; do
    [ -n "$name" ] || continue
    l=$((suites_end - SECONDS))
    # shellcheck disable=SC2086
    stage "$name" $((l < 60 ? l : 60)) gpu_suite "$exe" $args
  done <"$carry/gpu_tests.tsv"
  for m in mobilenetv2dilated-c1_deepsup:25 resnet50dilated-ppm_deepsup:35; do
    for amp in O0 O2; do stage "bench_${m%%dilated*}_$amp" "${m#*:}" bench "${m%:*}" "$amp"; done
  done
  stage torch 45 torch_steps
  stage lab_small 20 lab_small
  stage lab_gemm 50 lab gemm
  stage ncu 100 ncu_stage
  # --emit-auto-table: the layers where cuDNN was faster, as rows for kernels/cuda/engine.cu's
  # kAutoTable (empty until a run measures it: --engine auto runs own everywhere until then).
  stage lab_conv_mobilenet 60 lab conv --model mobilenet --emit-auto-table
  stage lab_conv_resnet50 90 lab conv --model resnet50 --emit-auto-table
  # the last stage: 60 s, or all that the budget has left. O0 (TF32) was the largest gap to PyTorch
  # on the first run (5.4x on ResNet50); v3, v8 and v9 only (with cuDNN), to fit.
  l=$(left)
  stage lab_conv_resnet50_f32 $((l > 60 ? l : 60)) lab conv 3,8,9 --dtype f32 --model resnet50 --emit-auto-table
fi

# --- the report ------------------------------------------------------------------------------------
log() { cat "$logs/$1.log" 2>/dev/null; }

# One short result per stage, from its log.
result_of() {
  local n=$1
  case $n in
    probe) if grep -q "^PROBE: " "$logs/probe.log"; then grep -m1 "^PROBE: " "$logs/probe.log" | cut -c8-
           elif [ $dry = 1 ]; then grep -m1 "CUDA backend" "$logs/probe.log" | sed 's/^ *//'
           else sed -n '/^== nvidia-smi/{n;p;}' "$logs/probe.log" | head -1; fi ;;
    allreduce) log allreduce | sed -n 's/^lab_allreduce: //p' | tail -1 ;;
    bench_*) log "$n" | awk '/^per step:/ { for (i = 1; i <= NF; ++i) { if ($i == "total") t = $(i + 1); if ($i == "images/s") r = $(i - 1) } }
                           /^peak memory/ { p = $3 }
                           END { if (t != "") printf "%s ms/step, %s images/s, peak %s MiB", t, r, p }' ;;
    torch) log torch | awk '/ms per training step/ { n++ } END { if (n) printf "%d of 4 steps timed", n }' ;;
    lab_small) [ -s "$logs/est_join.tsv" ] && awk -F'\t' '{ n++ } END { printf "%d kernel-shapes beside an estimate", n }' "$logs/est_join.tsv" ;;
    # 8192^3: the product (v8) and our fastest version, each with its share of cuBLASLt.
    lab_gemm) log lab_gemm | awk '/^[0-9]+ x [0-9]+ x [0-9]+  \(/ { big = ($1 == 8192 && $3 == 8192 && $5 == 8192) }
                                  big && / ms warm / && $2 != "cublaslt" { tf[$1] = $9; if ($9 + 0 > best + 0) { best = $9; bv = $1 } }
                                  big && / reaches / { pct[$1] = $3 }
                                  END { if (tf["v8"] != "") printf "8192^3: v8 %s TFLOP/s (%s), best %s %s (%s) of cuBLASLt", tf["v8"], pct["v8"], bv, best, pct[bv] }' ;;
    # The product's GEMM from the ncu table: its speed under the profiler, the tensor pipe, issue and the top stall.
    ncu) log ncu | awk '$1 == "gemm_v14" { sub(/,$/, "", $12); printf "v14: %s TFLOP/s, tensor pipe %s%%, issue %s%%, cpi %s, top stall %s %s", $3, $4, $5, $8, $11, $12 }' ;;
    lab_conv_*) log "$n" | awk '/own reaches/ { printf "%s%s %s", sep, $1, $(NF - 3); sep = ", " } END { if (sep) printf " of cuDNN" }' ;;
    *) log "$n" | grep -E "^\[doctest\] test cases:" | tail -1 | sed 's/^\[doctest\] //' ;;
  esac
}
# The result column: the stage's own summary, else (a skip, a failure) the last line of its log.
result_cell() {
  local n=$1 status=$2 r=""
  case $status in "skipped: budget spent"|"dry run") echo "-"; return ;; esac
  r=$(result_of "$n" 2>/dev/null)
  [ -n "$r" ] || r=$(grep -v '^[[:space:]]*$' "$logs/$n.log" 2>/dev/null | tail -1 | cut -c1-100)
  echo "${r:--}"
}

# segtrain against PyTorch: ms per step of each (model, amp) pair.
compare_steps() {
  echo "segtrain bench --device cuda:0 vs PyTorch (tools/bench/torch_step.py), batch 8, 512x512, ms per training step:"
  printf '  %-32s %-12s %10s %10s %8s\n' model "amp" segtrain pytorch ratio
  local m amp ours_ms torch_ms tamp
  for m in mobilenetv2dilated-c1_deepsup resnet50dilated-ppm_deepsup; do
    for amp in O0 O2; do
      ours_ms=$(log "bench_${m%%dilated*}_$amp" | sed -n 's/^per step: .*total \([0-9.]*\) ms.*/\1/p')
      tamp=$([ $amp = O0 ] && echo "f32 " || echo "autocast")
      torch_ms=$(log torch | grep "^pytorch .* $m: .* $tamp" | sed -n 's/.*: \([0-9.]*\) ms per training step.*/\1/p' | head -1)
      printf '  %-32s %-12s %10s %10s %8s\n' "$m" "$amp/${tamp% }" "${ours_ms:--}" "${torch_ms:--}" \
        "$(awk -v a="$ours_ms" -v b="$torch_ms" 'BEGIN { if (a > 0 && b > 0) printf "%.2f", a / b; else print "-" }')"
    done
  done
  echo "  (ratio = segtrain / PyTorch: below 1 is faster; PyTorch's amp is torch.autocast f16 + GradScaler beside segtrain's O2)"
}

# The simulator's estimate beside the measured warm time, kernel by kernel (same shape, same version).
join_estimates() {
  [ -f "$carry/lab_estimates.txt" ] || return 0
  cat "$logs"/lab_*.log 2>/dev/null | awk -F'\t' -v OFS='\t' '
    FNR == NR { if ($0 !~ /^#/ && NF >= 5) { est[$1 SUBSEP $2] = $4; bound[$1 SUBSEP $2] = $5; name[$1 SUBSEP $2] = $3 } next }
    /^[0-9]+ x [0-9]+ x [0-9]+  \(/ { shape = $0; family = "gemm"; next }
    / x[0-9]+  (fwd|bwd-data|bwd-weight)  N=/ { shape = $0; family = "conv"; next }
    /^  v[0-9]+ / && / ms warm / {
      split($0, f, " "); v = substr(f[1], 2); key = shape SUBSEP v
      if ((key in est) && !(key in seen) && est[key] > 0) {
        seen[key] = 1
        print shape, family " v" v " " f[2], f[3] * 1000, est[key], bound[key], f[3] * 1000 / est[key]
      }
    }' "$carry/lab_estimates.txt" - >"$logs/est_join.tsv"
}

summarize_estimates() {
  [ -s "$logs/est_join.tsv" ] || { echo "simulator estimate vs measured: no kernel-shape measured that the simulator estimated"; return 0; }
  echo "simulator's H200 roofline estimate vs measured warm time (lab_tc, same shapes), measured/estimate by version:"
  cut -f2,6 "$logs/est_join.tsv" | sort -t$'\t' -k1,1 -k2,2g |
    awk -F'\t' '{ r[$1] = r[$1] " " $2; n[$1]++ }
      END { for (k in n) { m = split(substr(r[k], 2), x, " "); printf "  %-24s n=%-3d median %7.2f  min %7.2f  max %7.2f\n", k, m, x[int((m + 1) / 2)], x[1], x[m] } }' | sort -V
  echo "  (every pair in gpu_check_report.txt's \"estimate vs measured\" list; ratio > 1: slower than the model says)"
}

table() {
  printf '%-28s %-22s %5s %6s  %s\n' stage status secs limit result
  local i
  for i in "${!st_name[@]}"; do
    printf '%-28s %-22s %5s %6s  %s\n' "${st_name[$i]}" "${st_status[$i]}" "${st_secs[$i]}" "${st_limit[$i]}" "$(result_cell "${st_name[$i]}" "${st_status[$i]}")"
  done
}

join_estimates
{
  echo
  echo "=== gpu_check $(date -u '+%Y-%m-%d %H:%M UTC'): $(sed -n 's/^commit: //p' "$carry/MANIFEST"), $((SECONDS - t_start)) s of the ${budget} s budget$([ $dry = 1 ] && echo ", DRY RUN: nothing measured")"
  if [ $probe_failed = 0 ]; then
    compare_steps
    echo
    summarize_estimates
    echo
    echo "all-reduce (lab_allreduce, nccl-tests' columns):"
    log allreduce | grep -E "^#|^ +[0-9]+ " | awk 'NR <= 5 || /^#/ || $1 >= 1048576' | sed 's/^/  /'
    if [ -s "$logs/ncu_list.txt" ]; then
      echo
      echo "Nsight Compute, one launch each (tools/ncu_summary.py: its --help says what each column means):"
      ncu_table 2>&1 | sed 's/^/  /'
    fi
  fi
  echo
  table
} | tee "$report"
{
  echo
  echo "estimate vs measured, kernel by kernel (lab_tc prints ms with 3 decimals: 1 us resolution):"
  printf '%-62s %-26s %11s %11s %-16s %8s\n' shape version "warm us" "estimate us" bound ratio
  awk -F'\t' '{ printf "%-62s %-26s %11.1f %11.1f %-16s %8.2f\n", $1, $2, $3, $4, $5, $6 }' "$logs/est_join.tsv" 2>/dev/null
} >>"$report"
cp "$report" "$out/gpu_check_report.txt"
tar -C "$scratch" -czf "$out/gpu_check_logs.tar.gz" gpu_check_logs 2>/dev/null
rm -rf "$scratch"
echo "gpu_check: report and logs in $out (gpu_check_report.txt, gpu_check_logs.tar.gz)"
# 4: no GPU; 1: the probe failed otherwise (glibc, a library), or a stage failed or timed out.
[ $probe_failed = 1 ] && exit $((probe_rc == 4 ? 4 : 1))
exit $failed
