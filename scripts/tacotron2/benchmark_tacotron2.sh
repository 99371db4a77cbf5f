#!/usr/bin/env bash
# Tacotron 2 benchmarks: training mel frames/sec, and text-to-wav inference latency (Griffin-Lim, or WaveGlow when
# WAVEGLOW=checkpoint is set). Runs on CPU here and on a GPU as is.
#   scripts/tacotron2/benchmark_tacotron2.sh               # defaults: demo config, batch 16 training, bs 1 and 4
#   CONFIG=... BATCH_SIZE=... PRECISION=fp32|bf16|fp16 DEVICE=cpu|gpu ITERATIONS=... REPEATS=...
#   scripts/tacotron2/benchmark_tacotron2.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/project_python.sh
CONFIG=${CONFIG:-configs/tacotron2_demo.json}
DATA_DIR=${DATA_DIR:-data/synthetic}
FILELISTS=${FILELISTS:-filelists}
BATCH_SIZE=${BATCH_SIZE:-16}
ITERATIONS=${ITERATIONS:-20}
REPEATS=${REPEATS:-10}
PRECISION=${PRECISION:-fp32}
DEVICE=${DEVICE:-cpu}
OUT=${OUTPUT_DIR:-output/benchmark}
mkdir -p "$OUT"

precision_flag=""
case "$PRECISION" in fp32) ;; bf16) precision_flag="--bf16" ;; fp16) precision_flag="--amp" ;;
    *) echo "unknown PRECISION=$PRECISION (fp32, bf16 or fp16)" >&2; exit 2 ;; esac
device_flag=""
[ "$DEVICE" = cpu ] && device_flag="--cpu"
if [ ! -f "$DATA_DIR/metadata.csv" ]; then
    bash scripts/prepare_dataset.sh --synthetic --data-dir "$DATA_DIR" --filelists-dir "$FILELISTS"
fi

echo "== training throughput: $CONFIG, batch $BATCH_SIZE, $PRECISION, $DEVICE"
"$PYTHON" -m scripts.benchmark_training --iterations "$ITERATIONS" --json "$OUT/train_tacotron2.json" -- \
    -m Tacotron2 --config-file "$CONFIG" -o "$OUT/train" -d "$DATA_DIR" -bs "$BATCH_SIZE" --num-workers 1 \
    --training-files "$FILELISTS/synthetic_audio_text_train.txt" \
    --validation-files "$FILELISTS/synthetic_audio_text_val.txt" $precision_flag $device_flag --quiet

checkpoint=${TACOTRON2:-output/demo/checkpoint_Tacotron2_last.pt}
if [ ! -e "$checkpoint" ]; then
    echo "no Tacotron 2 checkpoint at $checkpoint: run 'make demo' first or set TACOTRON2=path" >&2
    exit 1
fi
vocoder_flag=""
[ -n "${WAVEGLOW:-}" ] && vocoder_flag="--waveglow $WAVEGLOW"
for batch in 1 4; do
    echo "== inference: batch $batch, 128 characters, $PRECISION, $DEVICE"
    # Each line whole, as NVIDIA's benchmark decodes it: 400 steps would otherwise cut a 128-character line in pieces.
    "$PYTHON" inference.py -i phrases/phrase_128.txt -o "$OUT/infer_bs$batch" --tacotron2 "$checkpoint" \
        --batch-size "$batch" --benchmark-repeats "$REPEATS" --max-decoder-steps 400 --no-split-sentences \
        $vocoder_flag $precision_flag $device_flag --quiet
    tail -n 1 "$OUT/infer_bs$batch/nvlog.json"
done
