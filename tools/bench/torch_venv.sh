#!/usr/bin/env bash
# Installs a PyTorch 2.x baseline for the benchmarks (tools/bench/pair.sh, torch_step.py,
# torch_ops.py) into a virtual environment, $HOME/.cache/segtrain-torch-venv (or the folder given).
# pair.sh uses it when it exists; without it the baseline is Debian's python3-torch 1.13.
#
#   tools/bench/torch_venv.sh [FOLDER]
#
# Why a venv: Debian ships PyTorch 1.13; a current PyTorch comes only from PyPI, and PyPI's Linux
# wheel is the CUDA build: torch plus its nvidia-* libraries, about 5.6 GB on disk, although the
# benchmarks use only its CPU kernels (the CPU-only wheels live on download.pytorch.org, which is not
# reachable from this project's machines). Nothing in segtrain's build or tests uses this venv.
set -euo pipefail
venv="${1:-$HOME/.cache/segtrain-torch-venv}"
[ -x "$venv/bin/python" ] || /usr/bin/python3 -m venv "$venv"
"$venv/bin/pip" install --upgrade torch numpy
"$venv/bin/python" -c 'import torch; print("torch", torch.__version__, "in", torch.__file__)'
du -sh "$venv"
