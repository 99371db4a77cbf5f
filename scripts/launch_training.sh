#!/usr/bin/env bash
# Run train.py on NUM_GPUS processes (torchrun when more than one). DRY_RUN=1 prints the command and only checks
# the flags (train.py --dry-run). Used by scripts/train_*.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python}
NUM_GPUS=${NUM_GPUS:-1}
if [ "$NUM_GPUS" -gt 1 ]; then
    command=(torchrun --standalone --nproc-per-node "$NUM_GPUS" train.py "$@")
else
    command=("$PYTHON" train.py "$@")
fi
if [ "${DRY_RUN:-0}" = 1 ]; then
    echo "${command[*]}"
    exec "$PYTHON" train.py "$@" --dry-run > /dev/null
fi
exec "${command[@]}"
