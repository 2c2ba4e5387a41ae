#!/usr/bin/env bash
# Prepares HERE, on the build machine (no GPU needed), everything tools/gpu_check.sh needs on a lent
# GPU machine, where one call has 600 s and building does not fit (the CUDA build alone took 420 s of
# its 16 cores). Then prints the exact device call. Steps:
#   1. build-gpu/: the CUDA configuration CI builds (.ci/run, cuda_backend_build) for sm_90 only,
#      without MPI (no mpirun there; libmpi would drag in OpenMPI's run-time plugins): segtrain,
#      lab_tc, lab_allreduce and every gpu-labelled suite, niced. The first build took about 35
#      minutes on this project's 2 shared cores (nvcc of the kernels most of it).
#   2. build/ (the default configuration, with the simulator): lab_tc_sim's H200 roofline
#      estimates on the shapes gpu_check.sh's lab_small stage then times on the GPU (the `# run:`
#      lines of gpu-carry/lab_estimates.txt are that list: this script is its one source).
#   3. gpu-carry/ (ignored by git): binaries.tar.xz with bin/, the stripped binaries, and lib/,
#      every shared library they load (ldd) except the C library, the driver and NVIDIA's large
#      libraries (cuBLAS, cuDNN, NCCL, NVRTC), which the GPU machine has in its toolkit or its
#      PyTorch's nvidia-* packages (xz: each binary holds the same CUDA kernels; 60 MiB -> 8 MiB);
#      gpu_tests.tsv the gpu suites as ctest runs them; upstream/ upstream's mit_semseg (for
#      tools/bench/torch_step.py, from the fetched mirror or $SEG_UPSTREAM_DIR); MANIFEST.
#   4. the size check: the working tree plus gpu-carry must stay within the tool's 64 MiB.
#
#   tools/gpu_prepare.sh [--skip-build] [--skip-estimates]
#     --skip-build       use build-gpu/ as it is (no configure, no build)
#     --skip-estimates   keep gpu-carry/lab_estimates.txt from an earlier run (the simulator's
#                        estimates took 5-7.5 minutes on 2 shared cores)
#   SEG_JOBS (default 2) parallel compile jobs; SEG_SIM_BUILD_DIR (default build) the simulator build.
set -euo pipefail
cd "$(dirname "$0")/.."

skip_build=0 skip_estimates=0
for a in "$@"; do
  case "$a" in
    --skip-build) skip_build=1 ;;
    --skip-estimates) skip_estimates=1 ;;
    -h|--help) sed -n '2,/^#   SEG_JOBS/p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu_prepare.sh: unknown argument '$a' (see --help)" >&2; exit 2 ;;
  esac
done
jobs=${SEG_JOBS:-2}
gpu_build=build-gpu
sim_build=${SEG_SIM_BUILD_DIR:-build}
carry=gpu-carry
mirror=/work/.mirror/CSAILVision+semantic-segmentation-pytorch/repo
limit_bytes=$((64 * 1024 * 1024))
t_start=$SECONDS
say() { echo "[gpu_prepare $((SECONDS - t_start))s] $*"; }

# --- 1. the CUDA build ---------------------------------------------------------------------------
if [ $skip_build = 0 ]; then
  say "configuring $gpu_build (SEG_CUDA=ON, sm_90, no simulator, no MPI)"
  cmake -S . -B "$gpu_build" -DCMAKE_BUILD_TYPE=Release -DSEG_CUDA=ON -DSEG_SIM=OFF -DSEG_WERROR=ON \
    -DSEG_CUDA_ARCHITECTURES=90 -DSEG_MPI=OFF >"$gpu_build.configure.log" 2>&1 \
    || { cat "$gpu_build.configure.log"; exit 1; }
  grep -E "CUDA \(nvcc\)|cuDNN  |NCCL  " "$gpu_build.configure.log" | sed 's/^-- */  /'
fi
suites=$(cmake --build "$gpu_build" --target help | sed -n 's/^\.\.\. \(test_[a-z_]*gpu\)$/\1/p' | tr '\n' ' ')
# shellcheck disable=SC2206
targets=(segtrain lab_tc lab_allreduce $suites)
if [ $skip_build = 0 ]; then
  say "building ${targets[*]} ($jobs jobs, nice; about 35 minutes the first time on 2 cores)"
  nice -n 10 cmake --build "$gpu_build" -j "$jobs" --target "${targets[@]}" >"$gpu_build.build.log" 2>&1 \
    || { tail -40 "$gpu_build.build.log"; echo "gpu_prepare.sh: the build failed; full log: $gpu_build.build.log" >&2; exit 1; }
fi
for t in "${targets[@]}"; do
  [ -x "$gpu_build/bin/$t" ] || { echo "gpu_prepare.sh: $gpu_build/bin/$t is missing (build it, or drop --skip-build)" >&2; exit 1; }
done

rm -rf "$carry.new"
mkdir -p "$carry.new/bin" "$carry.new/lib"

# --- 2. the simulator's estimates -----------------------------------------------------------------
# The shapes: what the simulator runs in minutes (every thread of every block is emulated on the
# CPU), and what lab_tc times on the GPU with the same header lines, so the two join by shape text.
est_runs=("gemm --shapes ci" "gemm --size 1024 1024 1024" "conv --model ci" "conv --model resnet50 --layer pooled")
if [ $skip_estimates = 1 ] && [ -f "$carry/lab_estimates.txt" ]; then
  say "keeping $carry/lab_estimates.txt"
  cp "$carry/lab_estimates.txt" "$carry.new/"
else
  if [ ! -f "$sim_build/CMakeCache.txt" ]; then
    cmake -S . -B "$sim_build" -DCMAKE_BUILD_TYPE=Release >"$sim_build.configure.log" 2>&1 || { cat "$sim_build.configure.log"; exit 1; }
  fi
  say "building lab_tc_sim in $sim_build"
  nice -n 10 cmake --build "$sim_build" -j "$jobs" --target lab_tc_sim >"$sim_build.lab_tc_sim.log" 2>&1 \
    || { tail -40 "$sim_build.lab_tc_sim.log"; exit 1; }
  {
    echo "# lab_tc_sim's H200 roofline estimates (kernels/sim/roofline.h), by tools/gpu_prepare.sh on $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "# columns: shape (lab_tc's header line), version, name, estimate us, bound"
    for r in "${est_runs[@]}"; do echo "# run: $r"; done
  } >"$carry.new/lab_estimates.txt"
  for r in "${est_runs[@]}"; do
    say "lab_tc_sim $r"
    # shellcheck disable=SC2086
    nice -n 10 "$sim_build/bin/lab_tc_sim" $r >"$carry.new/sim.log" 2>&1 || { cat "$carry.new/sim.log"; exit 1; }
    # "  v3 wmma   ok (65536 elements exact)  ... est 8.8 us (shared memory) = 3.8 TFLOP/s"
    awk -v OFS='\t' '
      /^[0-9]+ x [0-9]+ x [0-9]+  \(/ || / x[0-9]+  (fwd|bwd-data|bwd-weight)  N=/ { shape = $0; next }
      /^  v[0-9]+ / && / ok \(/ && match($0, /est [0-9.]+ us \([^)]*\)/) {
        e = substr($0, RSTART + 4, RLENGTH - 4); us = e; sub(/ us .*/, "", us)
        bound = e; sub(/^[0-9.]+ us \(/, "", bound); sub(/\)$/, "", bound)
        print shape, substr($1, 2), $2, us, bound
      }' "$carry.new/sim.log" >>"$carry.new/lab_estimates.txt"
  done
  rm -f "$carry.new/sim.log"
  n=$(grep -vc '^#' "$carry.new/lab_estimates.txt" || true)
  [ "$n" -gt 0 ] || { echo "gpu_prepare.sh: lab_tc_sim printed no estimate (no counters? a sanitizer build?)" >&2; exit 1; }
  say "$n estimates"
fi

# --- 3. binaries, libraries, test list, upstream code ---------------------------------------------
for t in "${targets[@]}"; do strip -o "$carry.new/bin/$t" "$gpu_build/bin/$t"; done
# Not carried: the C library and loader (the GPU machine's own), the driver (libcuda), and NVIDIA's
# large libraries, which live in the GPU machine's toolkit or PyTorch's nvidia-* packages
# (gpu_check.sh puts both on the library path).
skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libdl\.so|librt\.so|libpthread\.so|libcuda\.so|libcublas|libcublasLt|libcudnn|libnccl|libnvrtc|libnvJitLink)'
for t in "${targets[@]}"; do ldd "$gpu_build/bin/$t"; done | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' | sort -u |
  while read -r name path; do
    if [[ $name =~ $skip ]]; then continue; fi
    cp -L "$path" "$carry.new/lib/$name"
  done
say "libraries carried: $(cd "$carry.new/lib" && echo *)"

# The gpu suites as ctest would run them, with the executable's name instead of its path here.
ctest --test-dir "$gpu_build" -L gpu --show-only=json-v1 | python3 -c '
import json, os, re, sys
for t in json.load(sys.stdin)["tests"]:
    cmd = t.get("command")
    if not cmd:
        sys.exit("gpu_prepare.sh: ctest test %s has no command (not built?)" % t["name"])
    props = {p["name"]: p["value"] for p in t.get("properties", [])}
    if props.get("ENVIRONMENT"):
        sys.exit("gpu_prepare.sh: %s sets ENVIRONMENT %s: teach gpu_check.sh to pass it" % (t["name"], props["ENVIRONMENT"]))
    if any(re.search(r"[\s*?\[\]$\x27\x22]", a) for a in cmd[1:]):
        sys.exit("gpu_prepare.sh: %s has an argument gpu_check.sh would split: %s" % (t["name"], cmd))
    print("%s\t%s\t%s" % (t["name"], os.path.basename(cmd[0]), " ".join(cmd[1:])))
' >"$carry.new/gpu_tests.tsv"
say "gpu suites: $(cut -f1 "$carry.new/gpu_tests.tsv" | tr '\n' ' ')"

# Upstream's model code for tools/bench/torch_step.py (the GPU machine cannot fetch it).
mkdir -p "$carry.new/upstream"
if [ -n "${SEG_UPSTREAM_DIR:-}" ]; then
  cp -r "$SEG_UPSTREAM_DIR/mit_semseg" "$carry.new/upstream/"
elif [ -d "$mirror" ]; then
  git -C "$mirror" archive HEAD mit_semseg | tar -x -C "$carry.new/upstream"
else
  echo "gpu_prepare.sh: warning: no upstream code ($mirror missing, SEG_UPSTREAM_DIR unset): gpu_check.sh's torch stage will fail" >&2
fi
rm -rf "$carry.new/upstream/mit_semseg/lib/nn/modules/tests"

# MANIFEST: what was built from what, and the newest glibc symbol version the binaries need.
glibc=$(for t in "${targets[@]}"; do objdump -T "$carry.new/bin/$t"; done | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1)
dirty=""
if git status --porcelain --untracked-files=no | grep -q .; then dirty=" + uncommitted changes"; fi
{
  echo "commit: $(git rev-parse --short HEAD)$dirty ($(git log -1 --format=%cs))"
  echo "built: $(date -u '+%Y-%m-%d %H:%M UTC') on $(sed -n 's/^PRETTY_NAME="\(.*\)"/\1/p' /etc/os-release), $(nvcc --version | sed -n 's/.*release \([0-9.]*\).*/CUDA \1/p'), $(c++ --version | head -1)"
  echo "configuration: $gpu_build, Release, SEG_CUDA=ON SEG_CUDA_ARCHITECTURES=90 SEG_SIM=OFF SEG_MPI=OFF"
  echo "glibc needed: $glibc"
  echo "binaries: ${targets[*]}"
  echo "libraries: $(cd "$carry.new/lib" && echo *)"
} >"$carry.new/MANIFEST"
say "compressing bin/ and lib/ ($(du -sh "$carry.new/bin" "$carry.new/lib" | cut -f1 | tr '\n' ' '))"
du -b "$carry.new"/bin/* "$carry.new"/lib/* | sort -rn | awk '{ printf "  %7.1f MiB  %s\n", $1 / 1048576, $2 }'
tar -C "$carry.new" -cf - bin lib | nice -n 10 xz -9 -T1 >"$carry.new/binaries.tar.xz"
rm -rf "$carry.new/bin" "$carry.new/lib"
rm -rf "$carry"
mv "$carry.new" "$carry"

# --- 4. size --------------------------------------------------------------------------------------
carry_bytes=$(du -sb "$carry" | cut -f1)
tree_bytes=$(git ls-files -z -co --exclude-standard | du -cb --files0-from=- 2>/dev/null | tail -1 | cut -f1)
total=$((carry_bytes + tree_bytes))
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
say "size: $carry $(mib "$carry_bytes") + working tree $(mib "$tree_bytes") = $(mib "$total") of the tool's 64 MiB"
if [ "$total" -gt "$limit_bytes" ]; then
  echo "gpu_prepare.sh: $(mib "$total") is over the 64 MiB the device tool carries: drop a suite from the carry" >&2
  exit 1
fi

cat <<EOF

Ready. The one device call (tools/gpu_check.sh, 540 s of stages inside the 600 s limit):
  command:   bash tools/gpu_check.sh
  carry:     ["$carry"]
  timeout_s: 600
The GPU machine copies the working tree as it is now: commit or keep the files gpu_check.sh and
tools/bench/torch_step.py as they were when $carry was made. A second call for what failed or ran
out of time: bash tools/gpu_check.sh --stages '^(lab_|torch)' (the probe always runs).
The results come back in \$OUT: gpu_check_report.txt and gpu_check_logs.tar.gz.
EOF
