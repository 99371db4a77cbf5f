#!/usr/bin/env bash
# Train HiFi-GAN on LJSpeech with NVIDIA's hyper-parameters (configs/hifigan_nvidia.json: v1 generator, lr 3e-4
# decaying by 0.9998 per epoch, 6500 epochs, segment 8192, batch 16 per GPU on 8 GPUs). platform/*hifigan*.sh are
# the per-GPU batch sizes and gradient accumulation NVIDIA used per machine (always a global batch of 128).
#   NUM_GPUS=8 PRECISION=amp|bf16|tf32|fp32 OUTPUT_DIR=./output/hifigan DATA_DIR=data/LJSpeech-1.1 \
#       scripts/hifigan/train_hifigan.sh [train.py flags]
#   BATCH_SIZE, GRAD_ACCUMULATION and EPOCHS override the preset's values; DRY_RUN=1 prints the command.
# Fine-tuning on Tacotron 2's mels afterwards: scripts/extract_gta_mels.sh, then
# scripts/hifigan/fine_tune_hifigan.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
NUM_GPUS=${NUM_GPUS:-1}
PRECISION=${PRECISION:-fp32}
OUTPUT_DIR=${OUTPUT_DIR:-./output/hifigan}
DATA_DIR=${DATA_DIR:-data/LJSpeech-1.1}
case "$PRECISION" in amp) flags=(--amp) ;; bf16) flags=(--bf16) ;; fp32) flags=(--no-tf32) ;; tf32) flags=(--tf32) ;;
    *) echo "PRECISION must be amp, bf16, tf32 or fp32" >&2; exit 2 ;; esac
if [ -n "${BATCH_SIZE:-}" ]; then flags+=(-bs "$BATCH_SIZE"); fi
if [ -n "${GRAD_ACCUMULATION:-}" ]; then flags+=(--grad-accumulation "$GRAD_ACCUMULATION"); fi
if [ -n "${EPOCHS:-}" ]; then flags+=(--epochs "$EPOCHS"); fi
NUM_GPUS=$NUM_GPUS exec bash scripts/launch_training.sh -m HiFiGAN --config-file configs/hifigan_nvidia.json \
    -o "$OUTPUT_DIR" -d "$DATA_DIR" --resume-from-last "${flags[@]}" "$@"
