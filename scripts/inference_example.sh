#!/usr/bin/env bash
# Text to wav with Tacotron 2 and WaveGlow (or Griffin-Lim when WAVEGLOW is empty).
#   TACOTRON2=ckpt WAVEGLOW=ckpt PRECISION=fp16|bf16|fp32 BATCH_SIZE=1 OUTPUT_DIR=output/wavs scripts/inference_example.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python}
TACOTRON2=${TACOTRON2:-output/checkpoint_Tacotron2_last.pt}
WAVEGLOW=${WAVEGLOW-output/checkpoint_WaveGlow_last.pt}
PRECISION=${PRECISION:-fp32}
BATCH_SIZE=${BATCH_SIZE:-1}
OUTPUT_DIR=${OUTPUT_DIR:-output/wavs}
INPUT=${INPUT:-phrases/phrase.txt}
case "$PRECISION" in fp16) precision_flag=--amp ;; bf16) precision_flag=--bf16 ;; fp32) precision_flag="" ;;
    *) echo "PRECISION must be fp16, bf16 or fp32" >&2; exit 2 ;; esac
vocoder=()
[ -n "$WAVEGLOW" ] && vocoder=(--waveglow "$WAVEGLOW" -s 0.6 -d 0.01)
exec "$PYTHON" inference.py -i "$INPUT" -o "$OUTPUT_DIR" --tacotron2 "$TACOTRON2" "${vocoder[@]}" \
    --batch-size "$BATCH_SIZE" --save-alignments $precision_flag "$@"
