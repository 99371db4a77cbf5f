#!/usr/bin/env bash
# Fine-tune a trained HiFi-GAN on Tacotron 2's ground-truth-aligned mels (NVIDIA's recipe: the learning rate x3,
# 3500 more epochs; the loss mel still comes from the real audio).
#   1. scripts/extract_gta_mels.sh --tacotron2 T2.pt  # -> data/LJSpeech-1.1/mels-gta/<ID>.pt
#   2. FINE_TUNE_FROM=output/hifigan/checkpoint_HiFiGAN_last.pt scripts/hifigan/fine_tune_hifigan.sh
#   3. python inference.py -i phrases/phrase.txt -o out --tacotron2 T2.pt --hifigan output/hifigan_ft/checkpoint_HiFiGAN_last.pt
# FINE_TUNE_FROM is required: one of our checkpoints, NVIDIA's hifigan_gen_checkpoint_*.pt (with
# --fine-tune-discriminator-from hifigan_discrim_checkpoint_*.pt) or jik876's g_* (with --hifigan-config).
# Environment: INPUT_MELS_DIR (DATA_DIR/mels-gta), FINE_TUNE_LR_FACTOR (3), LEARNING_RATE (8.17e-5: where NVIDIA's
# 6500 base epochs leave it, 3e-4 x 0.9998^6500, so x3 gives their 2.45e-4), EPOCHS (3500), OUTPUT_DIR
# (./output/hifigan_ft: a folder of its own, so the base checkpoint is never rotated away), and as
# scripts/hifigan/train_hifigan.sh: NUM_GPUS, PRECISION, BATCH_SIZE, GRAD_ACCUMULATION, DATA_DIR, DRY_RUN=1.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ -z "${FINE_TUNE_FROM:-}" ]; then
    echo "fine_tune_hifigan.sh: error: set FINE_TUNE_FROM to the HiFi-GAN checkpoint to start from" >&2
    exit 2
fi
DATA_DIR=${DATA_DIR:-data/LJSpeech-1.1}
INPUT_MELS_DIR=${INPUT_MELS_DIR:-$DATA_DIR/mels-gta}
OUTPUT_DIR=${OUTPUT_DIR:-./output/hifigan_ft} EPOCHS=${EPOCHS:-3500} DATA_DIR=$DATA_DIR \
    exec bash scripts/hifigan/train_hifigan.sh --fine-tune-from "$FINE_TUNE_FROM" --input-mels-dir "$INPUT_MELS_DIR" \
    -lr "${LEARNING_RATE:-8.17e-5}" --fine-tune-lr-factor "${FINE_TUNE_LR_FACTOR:-3}" "$@"
