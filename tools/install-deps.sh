#!/usr/bin/env bash
# Installs segtrain's build dependencies from Debian. Idempotent: installs only what is missing.
# Used by the README commands and by .ci/run. Nothing is downloaded at build time.
#
#   cmake, g++           the build
#   doctest-dev          the test framework (header-only)
#   nlohmann-json3-dev   JSON: configs, odgt lists, safetensors headers
#   libstb-dev           stb_image / stb_image_write: PNG/BMP decode, PNG/JPEG encode
#   libjpeg62-turbo-dev  JPEG decode with the library and settings Pillow uses (linked statically)
#   libyaml-cpp-dev      reading upstream's YAML config files as they are
#   ccache               faster rebuilds (used automatically when present)
#   hyperfine            timing whole commands in benchmarks
#   libonnx-dev, libprotobuf-dev   ONNX protobuf classes and checker for `segtrain export` (libonnx-dev
#                        does not pull in protobuf's headers and CMake files by itself)
#   libopenmpi-dev, openmpi-bin   MPI: `mpirun -np N segtrain train ...` on CPU processes (core/comm_mpi.cpp)
#   clang, libclang-rt-14-dev   the libFuzzer targets (tools/fuzz.sh, a CI stage; libFuzzer itself is
#                        in libclang-rt, only recommended by clang); the build itself uses g++
# The CUDA toolkit (nvcc, cuBLASLt, cuDNN, NCCL) is expected at /usr/local/cuda when present;
# without it segtrain builds CPU-only.
set -euo pipefail

packages=(cmake g++ make doctest-dev nlohmann-json3-dev libstb-dev libjpeg62-turbo-dev libyaml-cpp-dev ccache hyperfine libonnx-dev libprotobuf-dev libopenmpi-dev openmpi-bin clang libclang-rt-14-dev)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null && SUDO="sudo" || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
