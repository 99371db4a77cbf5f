#!/usr/bin/env bash
# Train Tacotron 2 on LJSpeech with NVIDIA's recipe (mels computed on the fly; see platform/ for tuned variants).
#   NUM_GPUS=8 BATCH_SIZE=48 PRECISION=amp|bf16|fp32 OUTPUT_DIR=./output DATA_DIR=data/LJSpeech-1.1 scripts/train_tacotron2.sh [flags]
set -euo pipefail
cd "$(dirname "$0")/.."
NUM_GPUS=${NUM_GPUS:-1}
BATCH_SIZE=${BATCH_SIZE:-48}
PRECISION=${PRECISION:-fp32}
OUTPUT_DIR=${OUTPUT_DIR:-./output}
DATA_DIR=${DATA_DIR:-data/LJSpeech-1.1}
EPOCHS=${EPOCHS:-1501}
case "$PRECISION" in amp) precision_flag=--amp ;; bf16) precision_flag=--bf16 ;; fp32) precision_flag=--no-tf32 ;;
    tf32) precision_flag=--tf32 ;; *) echo "PRECISION must be amp, bf16, tf32 or fp32" >&2; exit 2 ;; esac
NUM_GPUS=$NUM_GPUS exec bash scripts/launch_training.sh -m Tacotron2 -o "$OUTPUT_DIR" -d "$DATA_DIR" -lr 1e-3 \
    --epochs "$EPOCHS" -bs "$BATCH_SIZE" --weight-decay 1e-6 --grad-clip-thresh 1.0 --log-file nvlog.json \
    --anneal-steps 500 1000 1500 --anneal-factor 0.1 --resume-from-last "$precision_flag" "$@"
