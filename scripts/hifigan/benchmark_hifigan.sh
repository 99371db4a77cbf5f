#!/usr/bin/env bash
# HiFi-GAN benchmarks: generator inference (v1 and v2, batch 1/8/16, 100-1200 mel frames: samples/s, RTF, measured
# latency percentiles; weight norm removed, and kept for comparison) and a training step (G + MPD + MSD, segment 8192,
# batch 4: samples/s, through scripts/benchmark_training.py on the synthetic corpus). CPU by default; DEVICE=gpu.
#   scripts/hifigan/benchmark_hifigan.sh [--quick]        # --quick: a smoke test of both (tiny sizes, seconds)
#   REPEATS=10 WARMUP=2 ITERATIONS=10 BATCH_SIZE=4 THREADS=N OUTPUT_DIR=output/benchmark DEVICE=cpu|gpu
#   STAGES="inference training" (either or both); extra flags after the script go to
#   scripts/hifigan/benchmark_hifigan.py.
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/project_python.sh
DATA_DIR=${DATA_DIR:-data/synthetic}
FILELISTS=${FILELISTS:-filelists}
OUT=${OUTPUT_DIR:-output/benchmark}
STAGES=${STAGES:-inference training}
DEVICE=${DEVICE:-cpu}
quick=false
forwarded=()
for argument in "$@"; do
    if [ "$argument" = --quick ]; then quick=true; else forwarded+=("$argument"); fi
done
device_flag=()
[ "$DEVICE" = cpu ] && device_flag=(--cpu)
thread_flag=()
[ -n "${THREADS:-}" ] && thread_flag=(--threads "$THREADS")
mkdir -p "$OUT"

if [[ " $STAGES " == *" inference "* ]]; then
    echo "== HiFi-GAN generator inference ($DEVICE)"
    if [ "$quick" = true ]; then
        grid=(--quick)
    else
        grid=(--repeats "${REPEATS:-10}" --warmup "${WARMUP:-2}" --with-weight-norm)
    fi
    "$PYTHON" -m scripts.hifigan.benchmark_hifigan "${grid[@]}" "${device_flag[@]}" \
        ${thread_flag[@]+"${thread_flag[@]}"} \
        --json "$OUT/hifigan_inference.json" ${forwarded[@]+"${forwarded[@]}"}
fi

if [[ " $STAGES " == *" training "* ]]; then
    if [ ! -f "$DATA_DIR/metadata.csv" ]; then
        bash scripts/prepare_dataset.sh --synthetic --data-dir "$DATA_DIR" --filelists-dir "$FILELISTS"
    fi
    if [ "$quick" = true ]; then size=(--warmup 1 --iterations 1); else size=(--iterations "${ITERATIONS:-10}"); fi
    echo "== HiFi-GAN training step: v1 generator + MPD + MSD, segment 8192, batch ${BATCH_SIZE:-4} ($DEVICE)"
    "$PYTHON" -m scripts.benchmark_training "${size[@]}" --json "$OUT/hifigan_training.json" -- \
        -m HiFiGAN -o "$OUT/train_hifigan" -d "$DATA_DIR" -bs "${BATCH_SIZE:-4}" --segment-length 8192 -lr 3e-4 --epochs 1 \
        --training-files "$FILELISTS/synthetic_audio_text_train.txt" \
        --validation-files "$FILELISTS/synthetic_audio_text_val.txt" --num-workers 1 --quiet "${device_flag[@]}"
fi
