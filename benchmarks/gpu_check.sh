#!/usr/bin/env bash
# The check to run on a machine with one NVIDIA GPU (under 5 minutes): what `tuner devices`
# finds, then the same 8-trial campaign of a small PyTorch training at resources.per_trial:
# auto and at per_trial: 1, printing how many trials ran at once, each trial's peak device
# memory and both wall times; the figures go to benchmarks/results/gpu_check.json.
#
#   benchmarks/gpu_check.sh [--trials 8] [--epochs 3]
#
# Needs the project installed with PyTorch built for CUDA (pip install -e '.[pytorch]').
set -euo pipefail
cd "$(dirname "$0")/.."
tuner devices
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu_check: no CUDA GPU answers nvidia-smi -L; nothing to measure here" >&2
  exit 2
fi
python benchmarks/_gpu_check.py "$@"
