#!/usr/bin/env bash
# Train WaveGlow on LJSpeech with NVIDIA's hyper-parameters (configs/waveglow_nvidia.json). platform/*.sh are the
# variants NVIDIA tuned per GPU and precision (mixed precision: batch 10, clipping at 65504).
#   NUM_GPUS=8 PRECISION=amp|bf16|tf32|fp32 OUTPUT_DIR=./output DATA_DIR=data/LJSpeech-1.1 scripts/train_waveglow.sh [flags]
#   BATCH_SIZE and EPOCHS override the preset's values; DRY_RUN=1 prints the command.
set -euo pipefail
cd "$(dirname "$0")/.."
NUM_GPUS=${NUM_GPUS:-1}
PRECISION=${PRECISION:-fp32}
OUTPUT_DIR=${OUTPUT_DIR:-./output}
DATA_DIR=${DATA_DIR:-data/LJSpeech-1.1}
case "$PRECISION" in amp) flags=(--amp) ;; bf16) flags=(--bf16) ;; fp32) flags=(--no-tf32) ;; tf32) flags=(--tf32) ;;
    *) echo "PRECISION must be amp, bf16, tf32 or fp32" >&2; exit 2 ;; esac
if [ -n "${BATCH_SIZE:-}" ]; then flags+=(-bs "$BATCH_SIZE"); fi
if [ -n "${EPOCHS:-}" ]; then flags+=(--epochs "$EPOCHS"); fi
NUM_GPUS=$NUM_GPUS exec bash scripts/launch_training.sh -m WaveGlow --config-file configs/waveglow_nvidia.json \
    -o "$OUTPUT_DIR" -d "$DATA_DIR" --resume-from-last "${flags[@]}" "$@"
