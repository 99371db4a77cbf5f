#!/usr/bin/env bash
# Train Tacotron 2 on LJSpeech with NVIDIA's hyper-parameters (configs/tacotron2_nvidia.json), mels computed on the
# fly. platform/*.sh are the variants NVIDIA tuned per GPU and precision.
#   NUM_GPUS=8 PRECISION=amp|bf16|tf32|fp32 OUTPUT_DIR=./output DATA_DIR=data/LJSpeech-1.1 scripts/train_tacotron2.sh [flags]
#   BATCH_SIZE and EPOCHS override the preset's values; DRY_RUN=1 prints the command.
set -euo pipefail
cd "$(dirname "$0")/.."
exec bash scripts/train_nvidia_preset.sh Tacotron2 configs/tacotron2_nvidia.json "$@"
