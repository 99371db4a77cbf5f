#!/usr/bin/env bash
# wav2vec 2.0 speech-to-text latency (measured p50/p90/p99 over REPEATS runs after 3 warm-up runs) and real-time factor
# at batch 1/4/8/16 on 2-10 s utterances, through `inference.py -m wav2vec2 --benchmark-repeats`, with a Base-size CTC
# model of random weights (timing does not depend on them) saved once in OUTPUT_DIR; the model has NVIDIA's recipe's
# Hourglass [2,(8,4),2] (HOURGLASS=none: a plain Base transformer). CPU and fp32 by default; DEVICE=gpu runs the same
# grid on a GPU (PRECISION=bf16|amp for mixed precision). scripts/wav2vec2/benchmark_wav2vec2.py says what is measured.
#   scripts/wav2vec2/benchmark_wav2vec2_inference.sh [--quick] [more flags of `python -m
#   scripts.wav2vec2.benchmark_wav2vec2 inference`]
#   DEVICE=cpu|gpu PRECISION=fp32|bf16|amp BATCH_SIZES="1 4 8 16" REPEATS=10 HOURGLASS="[2,(8,4),2]"|none THREADS=N
#   OUTPUT_DIR=output/benchmark     # the table is printed and written to OUTPUT_DIR/wav2vec2_inference.json
# --quick: a smoke test (a tiny model, batch 1 and 2, 1-2 s utterances, 2 repeats; seconds).
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/project_python.sh
DEVICE=${DEVICE:-cpu}
PRECISION=${PRECISION:-fp32}
OUT=${OUTPUT_DIR:-output/benchmark}
case "$DEVICE" in cpu) device_flag=(--cpu) ;; gpu) device_flag=() ;;
    *) echo "DEVICE must be cpu or gpu" >&2; exit 2 ;; esac
case "$PRECISION" in fp32|bf16|amp) ;; *) echo "PRECISION must be fp32, bf16 or amp" >&2; exit 2 ;; esac
flags=(--precision "$PRECISION" --output "$OUT/wav2vec2_inference" --json "$OUT/wav2vec2_inference.json"
       "${device_flag[@]}")
quick=false
for argument in "$@"; do if [ "$argument" = --quick ]; then quick=true; fi; done
if [ "$quick" = false ]; then
    flags+=(--batch-sizes ${BATCH_SIZES:-1 4 8 16} --repeats "${REPEATS:-10}" --hourglass "${HOURGLASS:-[2,(8,4),2]}")
fi
if [ -n "${THREADS:-}" ]; then flags+=(--threads "$THREADS"); fi
exec "$PYTHON" -m scripts.wav2vec2.benchmark_wav2vec2 inference "${flags[@]}" "$@"
