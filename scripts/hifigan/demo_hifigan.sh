#!/usr/bin/env bash
# A CPU-sized HiFi-GAN demo (not part of `make demo`): build the synthetic eSpeak NG corpus if missing, train the
# paper's small generator (v2, with the full MPD and MSD) for a fixed wall-clock budget, then compare its audio with
# Griffin-Lim's on the validation and test files (mel L1 to the recordings; scripts/hifigan/report_hifigan_demo.py).
#   BUDGET_MINUTES=15 scripts/hifigan/demo_hifigan.sh [extra train.py flags]
#   Environment: BUDGET_MINUTES (15), DATA_DIR (data/synthetic), FILELISTS (filelists), OUTPUT_DIR
#   (output/demo_hifigan), BATCH_SIZE (4), SEGMENT_SIZE (8192), PYTHON. Use a fresh OUTPUT_DIR per run: the step
#   counts are totals, so a rerun in the same folder would continue where the last one stopped.
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/project_python.sh
BUDGET_MINUTES=${BUDGET_MINUTES:-15}
DATA_DIR=${DATA_DIR:-data/synthetic}
FILELISTS=${FILELISTS:-filelists}
OUTPUT_DIR=${OUTPUT_DIR:-output/demo_hifigan}

if [ ! -f "$DATA_DIR/metadata.csv" ]; then
    bash scripts/prepare_dataset.sh --synthetic --data-dir "$DATA_DIR" --filelists-dir "$FILELISTS"
fi
# Runs of train.py, each ending with a checkpoint (--max-updates ends a run with one): a short probe of PROBE_UPDATES
# steps, then as many more as the rest of the budget holds at the rate the last run showed (start-up included, so the
# estimate errs short and the budget is not overrun; a few rounds fill it). Validation would take time the budget is
# for: it runs once, at the end, below.
train() {
    "$PYTHON" train.py -m HiFiGAN --hifigan-preset v2 -o "$OUTPUT_DIR" -d "$DATA_DIR" \
        --training-files "$FILELISTS/synthetic_audio_text_train.txt" \
        --validation-files "$FILELISTS/synthetic_audio_text_val.txt" -lr 2e-4 -bs "${BATCH_SIZE:-4}" \
        --segment-length "${SEGMENT_SIZE:-8192}" --epochs 100000 --val-interval-updates 1000000 --cpu --num-workers 1 \
        --resume-from-last --quiet "$@" ${TRAIN_FLAGS[@]+"${TRAIN_FLAGS[@]}"}
}
TRAIN_FLAGS=("$@")
PROBE_UPDATES=${PROBE_UPDATES:-2}
budget=$((BUDGET_MINUTES * 60))
start=$(date +%s)
trained=0
target=$PROBE_UPDATES
for round in 1 2 3 4 5; do
    round_start=$(date +%s)
    train --max-updates "$target"
    now=$(date +%s)
    seconds_per_step=$(( (now - round_start) / (target - trained) ))
    trained=$target
    more=$(( (budget - (now - start)) / (seconds_per_step > 0 ? seconds_per_step : 1) - 1 ))
    [ "$more" -gt 0 ] || break
    target=$((trained + more))
done
echo "trained $trained steps in $(( $(date +%s) - start )) s (budget ${budget} s)"
"$PYTHON" -m scripts.hifigan.report_hifigan_demo --hifigan "$OUTPUT_DIR/checkpoint_HiFiGAN_last.pt" -d "$DATA_DIR" \
    --filelists "$FILELISTS/synthetic_audio_text_val.txt" "$FILELISTS/synthetic_audio_text_test.txt" \
    --json "$OUTPUT_DIR/report.json"
