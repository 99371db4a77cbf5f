#!/usr/bin/env bash
# NVIDIA's launch scripts for LJSpeech, shared by scripts/train_tacotron2.sh and scripts/train_waveglow.sh:
#   scripts/train_nvidia_preset.sh MODEL CONFIG [train.py flags]
#   Environment: NUM_GPUS (1), PRECISION (amp|bf16|tf32|fp32; fp32), OUTPUT_DIR (./output), DATA_DIR
#   (data/LJSpeech-1.1), BATCH_SIZE and EPOCHS (override the preset's values), DRY_RUN=1 (print the command).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 2 ]; then echo "usage: scripts/train_nvidia_preset.sh MODEL CONFIG [train.py flags]" >&2; exit 2; fi
model=$1 config=$2
shift 2
NUM_GPUS=${NUM_GPUS:-1}
PRECISION=${PRECISION:-fp32}
OUTPUT_DIR=${OUTPUT_DIR:-./output}
DATA_DIR=${DATA_DIR:-data/LJSpeech-1.1}
case "$PRECISION" in amp) flags=(--amp) ;; bf16) flags=(--bf16) ;; fp32) flags=(--no-tf32) ;; tf32) flags=(--tf32) ;;
    *) echo "PRECISION must be amp, bf16, tf32 or fp32" >&2; exit 2 ;; esac
if [ -n "${BATCH_SIZE:-}" ]; then flags+=(-bs "$BATCH_SIZE"); fi
if [ -n "${EPOCHS:-}" ]; then flags+=(--epochs "$EPOCHS"); fi
NUM_GPUS=$NUM_GPUS exec bash scripts/launch_training.sh -m "$model" --config-file "$config" \
    -o "$OUTPUT_DIR" -d "$DATA_DIR" --resume-from-last "${flags[@]}" "$@"
