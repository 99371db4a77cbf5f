#!/usr/bin/env bash
# Fine-tune a pre-trained wav2vec 2.0 with CTC on LibriSpeech letters, with NVIDIA's recipes
# (scripts/finetune_base_{1h,10h,100h,960h}.sh): configs/wav2vec2_finetune_$SUBSET.json.
#   NUM_GPUS=8 PRECISION=amp|bf16|tf32|fp32 SUBSET=1h|10h|100h|960h \
#       PRETRAINED_MODEL=./output/wav2vec2_pretrain_base/checkpoint_wav2vec2_last.pt \
#       OUTPUT_DIR=./output/wav2vec2_finetune_$SUBSET DATA_DIR=data/librispeech_manifests \
#       scripts/wav2vec2/finetune_wav2vec2.sh [train.py flags]
# PRETRAINED_MODEL (--w2v-path) may be ours, NVIDIA's or fairseq's .pt, or a Hugging Face model converted by
# `python -m wav2vec2.convert --from-hf`. Subsets: 960h train-full-960, 100h train-clean-100 (both from
# scripts/prepare_librispeech.sh), 10h train-10h and 1h train-1h (Libri-light's limited sets, as NVIDIA's
# utils/generate_1h_10h_datasets.py makes them); validation on dev-other.
# NVIDIA's global batch on any number of GPUs: GPUs x NUM_CONCAT_BATCHES x UPDATE_FREQ = GLOBAL_BATCHES (8)
# max-tokens batches of 3.2M samples per update. UPDATE_FREQ (--grad-accumulation) stays 1 and the concatenation is
# computed, as NVIDIA's published runs do: 1 GPU concatenates 8 batches, 4 GPUs 2, 8 GPUs 1. NUM_CONCAT_BATCHES
# and/or UPDATE_FREQ choose another split; one that breaks the product is refused (GLOBAL_BATCHES changes it).
# DRY_RUN=1 prints the command; flags after the script go to train.py and win over the preset's.
set -euo pipefail
cd "$(dirname "$0")/../.."
NUM_GPUS=${NUM_GPUS:-1}
PRECISION=${PRECISION:-fp32}
SUBSET=${SUBSET:-960h}
PRETRAINED_MODEL=${PRETRAINED_MODEL:-./output/wav2vec2_pretrain_base/checkpoint_wav2vec2_last.pt}
OUTPUT_DIR=${OUTPUT_DIR:-./output/wav2vec2_finetune_$SUBSET}
DATA_DIR=${DATA_DIR:-data/librispeech_manifests}
GLOBAL_BATCHES=${GLOBAL_BATCHES:-8}
case "$SUBSET" in 1h|10h|100h|960h) ;; *) echo "SUBSET must be 1h, 10h, 100h or 960h" >&2; exit 2 ;; esac
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
if [ -z "$accumulation" ]; then
    if [ -n "$concat" ]; then accumulation=$((per_gpu / concat)); else accumulation=1; fi
fi
[ -n "$concat" ] || concat=$((per_gpu / accumulation))
if (( concat < 1 || accumulation < 1 || NUM_GPUS * concat * accumulation != GLOBAL_BATCHES )); then
    echo "NUM_GPUS x NUM_CONCAT_BATCHES x UPDATE_FREQ = $NUM_GPUS x ${NUM_CONCAT_BATCHES:-?} x ${UPDATE_FREQ:-?}" \
         "cannot make $GLOBAL_BATCHES max-tokens batches per update (set GLOBAL_BATCHES to change it)" >&2; exit 2
fi
echo "wav2vec 2.0 fine-tuning on $SUBSET: $NUM_GPUS GPU(s) x $concat concatenated x $accumulation accumulated" \
     "max-tokens batches = $GLOBAL_BATCHES per update, $PRECISION, from $PRETRAINED_MODEL" >&2
NUM_GPUS=$NUM_GPUS exec bash scripts/launch_training.sh -m wav2vec2 --mode finetune \
    --config-file "configs/wav2vec2_finetune_$SUBSET.json" --w2v-path "$PRETRAINED_MODEL" --data "$DATA_DIR" \
    -o "$OUTPUT_DIR" --resume-from-last --num-concat-batches "$concat" --grad-accumulation "$accumulation" \
    "${flags[@]}" "$@"
