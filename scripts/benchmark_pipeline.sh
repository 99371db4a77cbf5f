#!/usr/bin/env bash
# NVIDIA's inference-table grid for Tacotron 2 + WaveGlow: batch 1 and 4, 128 characters, fp32/bf16/fp16,
# WaveGlow 256 and 512 channels. One JSON line per configuration in $OUTPUT (default output/benchmark_pipeline.jsonl).
#   DEVICE=cpu|gpu REPEATS=10 WARMUP=3 PRECISIONS="fp32 bf16 fp16" BATCH_SIZES="1 4" scripts/benchmark_pipeline.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/project_python.sh
DEVICE=${DEVICE:-gpu}
REPEATS=${REPEATS:-10}
WARMUP=${WARMUP:-3}
PRECISIONS=${PRECISIONS:-fp32 bf16 fp16}
BATCH_SIZES=${BATCH_SIZES:-1 4}
CHANNELS=${CHANNELS:-256 512}
OUTPUT=${OUTPUT:-output/benchmark_pipeline.jsonl}
mkdir -p "$(dirname "$OUTPUT")"
device_flag=""
[ "$DEVICE" = cpu ] && device_flag="--cpu"
for channels in $CHANNELS; do
    for precision in $PRECISIONS; do
        for batch in $BATCH_SIZES; do
            "$PYTHON" -m scripts.benchmark_pipeline --batch-size "$batch" --precision "$precision" \
                --wn-channels "$channels" --repeats "$REPEATS" --warmup "$WARMUP" --json "$OUTPUT" $device_flag
        done
    done
done
