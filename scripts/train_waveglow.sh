#!/usr/bin/env bash
# Train WaveGlow on LJSpeech with NVIDIA's hyper-parameters (configs/waveglow_nvidia.json). platform/*.sh are the
# variants NVIDIA tuned per GPU and precision (mixed precision: batch 10, clipping at 65504).
#   NUM_GPUS=8 PRECISION=amp|bf16|tf32|fp32 OUTPUT_DIR=./output DATA_DIR=data/LJSpeech-1.1 scripts/train_waveglow.sh [flags]
#   BATCH_SIZE and EPOCHS override the preset's values; DRY_RUN=1 prints the command.
set -euo pipefail
cd "$(dirname "$0")/.."
exec bash scripts/train_nvidia_preset.sh WaveGlow configs/waveglow_nvidia.json "$@"
