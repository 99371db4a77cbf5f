#!/usr/bin/env bash
# Train WaveGlow on LJSpeech with NVIDIA's recipe.
#   NUM_GPUS=8 BATCH_SIZE=4 PRECISION=amp|bf16|fp32 OUTPUT_DIR=./output DATA_DIR=data/LJSpeech-1.1 scripts/train_waveglow.sh [flags]
set -euo pipefail
cd "$(dirname "$0")/.."
NUM_GPUS=${NUM_GPUS:-1}
BATCH_SIZE=${BATCH_SIZE:-4}
PRECISION=${PRECISION:-fp32}
OUTPUT_DIR=${OUTPUT_DIR:-./output}
DATA_DIR=${DATA_DIR:-data/LJSpeech-1.1}
EPOCHS=${EPOCHS:-1001}
case "$PRECISION" in
    amp) precision_flags=(--amp --grad-clip-thresh 65504.0) ;;
    bf16) precision_flags=(--bf16 --grad-clip-thresh 3.4028234663852886e+38) ;;
    fp32) precision_flags=(--no-tf32 --grad-clip-thresh 3.4028234663852886e+38) ;;
    tf32) precision_flags=(--tf32 --grad-clip-thresh 3.4028234663852886e+38) ;;
    *) echo "PRECISION must be amp, bf16, tf32 or fp32" >&2; exit 2 ;;
esac
NUM_GPUS=$NUM_GPUS exec bash scripts/launch_training.sh -m WaveGlow -o "$OUTPUT_DIR" -d "$DATA_DIR" -lr 1e-4 \
    --epochs "$EPOCHS" -bs "$BATCH_SIZE" --segment-length 8000 --weight-decay 0 --cudnn-benchmark \
    --log-file nvlog.json --resume-from-last "${precision_flags[@]}" "$@"
