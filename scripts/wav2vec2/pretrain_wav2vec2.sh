#!/usr/bin/env bash
# Pre-train wav2vec 2.0 on LibriSpeech with NVIDIA's recipe: configs/wav2vec2_pretrain_base.json (their
# scripts/pretrain_base.sh: Hourglass [2,(8,4),2], lr 5e-4, 400k updates, 1.4M-sample batches) or
# configs/wav2vec2_pretrain_large.json (pretrain_large.sh). Manifests come from scripts/prepare_librispeech.sh.
#   NUM_GPUS=8 PRECISION=amp|bf16|tf32|fp32 MODEL=base|large OUTPUT_DIR=./output/wav2vec2_pretrain_base \
#       DATA_DIR=data/librispeech_manifests scripts/wav2vec2/pretrain_wav2vec2.sh [train.py flags]
# NVIDIA's global batch on any number of GPUs: GPUs x NUM_CONCAT_BATCHES x UPDATE_FREQ = GLOBAL_BATCHES max-tokens
# batches per update (64 for Base, 128 for Large). The preset's concatenation is kept (Base 8, Large 1, fewer only
# where the GPUs leave no room) and the accumulation (--grad-accumulation, NVIDIA's --update_freq) is computed: Base
# on 1 GPU 8 x 8, on 4 GPUs 8 x 2, on 8 GPUs 8 x 1. NUM_CONCAT_BATCHES and/or UPDATE_FREQ choose another split;
# one that breaks the product is refused (set GLOBAL_BATCHES for another global batch, e.g. 1 for a quick test).
# DRY_RUN=1 prints the command; flags after the script go to train.py and win over the preset's.
set -euo pipefail
cd "$(dirname "$0")/../.."
NUM_GPUS=${NUM_GPUS:-1}
PRECISION=${PRECISION:-fp32}
MODEL=${MODEL:-base}
OUTPUT_DIR=${OUTPUT_DIR:-./output/wav2vec2_pretrain_$MODEL}
DATA_DIR=${DATA_DIR:-data/librispeech_manifests}
case "$MODEL" in base) nvidia_global=64 preset_concat=8 ;; large) nvidia_global=128 preset_concat=1 ;;
    *) echo "MODEL must be base or large" >&2; exit 2 ;; esac
GLOBAL_BATCHES=${GLOBAL_BATCHES:-$nvidia_global}
case "$PRECISION" in amp) flags=(--amp) ;; bf16) flags=(--bf16) ;; fp32) flags=(--no-tf32) ;; tf32) flags=(--tf32) ;;
    *) echo "PRECISION must be amp, bf16, tf32 or fp32" >&2; exit 2 ;; esac
for name in NUM_GPUS GLOBAL_BATCHES ${NUM_CONCAT_BATCHES:+NUM_CONCAT_BATCHES} ${UPDATE_FREQ:+UPDATE_FREQ}; do
    case "${!name}" in ''|*[!0-9]*|0) echo "$name must be a positive whole number, got '${!name}'" >&2; exit 2 ;; esac
done
if (( GLOBAL_BATCHES % NUM_GPUS )); then
    echo "NUM_GPUS=$NUM_GPUS does not divide the global batch of $GLOBAL_BATCHES max-tokens batches" >&2; exit 2
fi
per_gpu=$((GLOBAL_BATCHES / NUM_GPUS))
concat=${NUM_CONCAT_BATCHES:-}
accumulation=${UPDATE_FREQ:-}
if [ -z "$concat" ]; then
    if [ -n "$accumulation" ]; then concat=$((per_gpu / accumulation)); else
        concat=$((preset_concat < per_gpu ? preset_concat : per_gpu)); fi
fi
[ -n "$accumulation" ] || accumulation=$((per_gpu / concat))
if (( concat < 1 || accumulation < 1 || NUM_GPUS * concat * accumulation != GLOBAL_BATCHES )); then
    echo "NUM_GPUS x NUM_CONCAT_BATCHES x UPDATE_FREQ = $NUM_GPUS x ${NUM_CONCAT_BATCHES:-?} x ${UPDATE_FREQ:-?}" \
         "cannot make $GLOBAL_BATCHES max-tokens batches per update (set GLOBAL_BATCHES to change it)" >&2; exit 2
fi
echo "wav2vec 2.0 $MODEL pre-training: $NUM_GPUS GPU(s) x $concat concatenated x $accumulation accumulated" \
     "max-tokens batches = $GLOBAL_BATCHES per update, $PRECISION" >&2
NUM_GPUS=$NUM_GPUS exec bash scripts/launch_training.sh -m wav2vec2 --mode pretrain \
    --config-file "configs/wav2vec2_pretrain_$MODEL.json" --data "$DATA_DIR" -o "$OUTPUT_DIR" --resume-from-last \
    --num-concat-batches "$concat" --grad-accumulation "$accumulation" "${flags[@]}" "$@"
