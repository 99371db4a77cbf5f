#!/usr/bin/env bash
# wav2vec 2.0 pre-training throughput: transformer frames/s and masked frames/s of a small and the Base model with
# Hourglass factors 1 (none), 2 ("[2,(8,2),2]") and 4 ("[2,(8,4),2]", NVIDIA's recipe), and the Hourglass speed-up, on a
# synthetic 16 kHz corpus of 10-16 s utterances built in DATA_DIR if missing (scripts/wav2vec2/benchmark_wav2vec2.py
# says what is measured). CPU and fp32 by default; the same on a GPU with DEVICE=gpu (NVIDIA's 1.4M-sample batches, 8
# concatenated as their 1-GPU runs).
#   scripts/wav2vec2/benchmark_wav2vec2.sh [--quick] [more flags of
#       `python -m scripts.wav2vec2.benchmark_wav2vec2 training`]
#   DEVICE=cpu|gpu PRECISION=fp32|tf32|bf16|amp MODES="pretrain finetune" SIZES="small base" FACTORS="1 2 4"
#   WARMUP=2 ITERATIONS=5 MAX_TOKENS=N NUM_CONCAT_BATCHES=N THREADS=N DATA_DIR=data/wav2vec2_benchmark
#   OUTPUT_DIR=output/benchmark     # the table is printed and written to OUTPUT_DIR/wav2vec2_training.json
# --quick: a smoke test (a tiny model, factors 1 and 2, one timed step on a small corpus in OUTPUT_DIR; seconds).
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/project_python.sh
DEVICE=${DEVICE:-cpu}
PRECISION=${PRECISION:-fp32}
OUT=${OUTPUT_DIR:-output/benchmark}
case "$DEVICE" in cpu) device_flag=(--cpu) ;; gpu) device_flag=() ;;
    *) echo "DEVICE must be cpu or gpu" >&2; exit 2 ;; esac
case "$PRECISION" in fp32|tf32|bf16|amp) ;; *) echo "PRECISION must be fp32, tf32, bf16 or amp" >&2; exit 2 ;; esac
flags=(--precision "$PRECISION" --output "$OUT/wav2vec2" --json "$OUT/wav2vec2_training.json" "${device_flag[@]}")
quick=false
for argument in "$@"; do if [ "$argument" = --quick ]; then quick=true; fi; done
if [ "$quick" = false ]; then
    flags+=(--data "${DATA_DIR:-data/wav2vec2_benchmark}" --warmup "${WARMUP:-2}" --iterations "${ITERATIONS:-5}")
    flags+=(--modes ${MODES:-pretrain} --sizes ${SIZES:-small base} --factors ${FACTORS:-1 2 4})
fi
if [ -n "${MAX_TOKENS:-}" ]; then flags+=(--max-tokens "$MAX_TOKENS"); fi
if [ -n "${NUM_CONCAT_BATCHES:-}" ]; then flags+=(--num-concat-batches "$NUM_CONCAT_BATCHES"); fi
if [ -n "${THREADS:-}" ]; then flags+=(--threads "$THREADS"); fi
exec "$PYTHON" -m scripts.wav2vec2.benchmark_wav2vec2 training "${flags[@]}" "$@"
