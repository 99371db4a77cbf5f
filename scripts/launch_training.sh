#!/usr/bin/env bash
# Run train.py on NUM_GPUS processes (torchrun when more than one); used by scripts/train_*.sh.
# DRY_RUN=1 prints the command instead of running it.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python}
NUM_GPUS=${NUM_GPUS:-1}
if [ "$NUM_GPUS" -gt 1 ]; then
    command=(torchrun --standalone --nproc-per-node "$NUM_GPUS" train.py "$@")
else
    command=("$PYTHON" train.py "$@")
fi
if [ "${DRY_RUN:-0}" = 1 ]; then  # print the command only (the tests check it with train.py's parser)
    echo "${command[*]}"
    exit 0
fi
exec "${command[@]}"
