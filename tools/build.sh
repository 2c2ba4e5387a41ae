#!/usr/bin/env bash
# Installs dependencies, configures and builds segtrain into ./build (or $SEG_BUILD_DIR).
#
# The CUDA backend is built only where it can run: when nvcc exists AND a GPU answers nvidia-smi
# (override with SEG_CUDA=ON/OFF). Extra CMake arguments come from $SEG_CMAKE_ARGS.
set -euo pipefail
cd "$(dirname "$0")/.."

tools/install-deps.sh

build_dir="${SEG_BUILD_DIR:-build}"
if [ -z "${SEG_CUDA:-}" ]; then
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then SEG_CUDA=ON; else SEG_CUDA=OFF; fi
fi
jobs="${SEG_JOBS:-$(nproc)}"

# shellcheck disable=SC2086
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DSEG_CUDA="$SEG_CUDA" ${SEG_CMAKE_ARGS:-} >"$build_dir.configure.log" 2>&1 \
  || { cat "$build_dir.configure.log"; exit 1; }
sed -n '/segtrain .* configuration/,/tests  /p' "$build_dir.configure.log"
cmake --build "$build_dir" -j "$jobs"
echo "build: done ($build_dir/bin/segtrain)"
