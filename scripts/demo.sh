#!/usr/bin/env bash
# The demo (README's first command runs it through `make demo`): build the synthetic eSpeak NG corpus, train a small
# Tacotron 2 on the CPU until its attention aligns, and synthesize phrases/phrase.txt with Griffin-Lim.
#   scripts/demo.sh [extra train.py flags]   # defaults below; each can be set in the environment
#   OUTPUT_DIR=output/demo_eager scripts/demo.sh --no-fast-decoder   # the decoder loop as NVIDIA writes it
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
DATA_DIR=${DATA_DIR:-data/synthetic}
OUTPUT_DIR=${OUTPUT_DIR:-output/demo}
CONFIG=${CONFIG:-configs/tacotron2_demo.json}
FILELISTS=${FILELISTS:-filelists}

start=$(date +%s)
if [ ! -f "$DATA_DIR/metadata.csv" ]; then
    bash scripts/prepare_dataset.sh --synthetic --data-dir "$DATA_DIR" --filelists-dir "$FILELISTS"
fi
"$PYTHON" train.py -m Tacotron2 --config-file "$CONFIG" -o "$OUTPUT_DIR" -d "$DATA_DIR" \
    --training-files "$FILELISTS/synthetic_audio_text_train.txt" \
    --validation-files "$FILELISTS/synthetic_audio_text_val.txt" --resume-from-last "$@"
"$PYTHON" inference.py -i phrases/phrase.txt -o "$OUTPUT_DIR/wavs" --cpu --save-alignments \
    --tacotron2 "$OUTPUT_DIR/checkpoint_Tacotron2_last.pt"
"$PYTHON" -m scripts.report_demo --log "$OUTPUT_DIR/nvlog.json" --inference-log "$OUTPUT_DIR/wavs/nvlog.json" \
    --wavs "$OUTPUT_DIR/wavs" --phrases phrases/phrase.txt --seconds $(( $(date +%s) - start ))
