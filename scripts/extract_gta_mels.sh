#!/usr/bin/env bash
# Ground-truth-aligned mels for a vocoder's training (HiFi-GAN, the mel inverter): Tacotron 2 run teacher-forced
# over the filelists (scripts/extract_gta_mels.py says how and why), one <ID>.pt per wav, frame-aligned with it.
#
#   scripts/extract_gta_mels.sh --tacotron2 CKPT [--synthetic] [--data-dir D] [--filelists-dir F]
#                       [--output-dir O] [-bs 16] [--seed 1234] [--cpu] [--overwrite]
#
# Reads the train/val/test audio filelists in F (default: FILELISTS_DIR or filelists): ljs_audio_text_*_filelist.txt,
# or synthetic_audio_text_*.txt with --synthetic. D defaults to DATA_DIR or data/LJSpeech-1.1 (data/synthetic with
# --synthetic); O to D/mels-gta. Then: scripts/hifigan/fine_tune_hifigan.sh with INPUT_MELS_DIR=O.
set -euo pipefail
cd "$(dirname "$0")/.."

TAKES_OUTPUT_DIR=true
# shellcheck source=scripts/corpus_filelists.sh
. scripts/corpus_filelists.sh "$@"
source scripts/project_python.sh
OUTPUT_DIR=${OUTPUT_DIR:-$DATA_DIR/mels-gta}

"$PYTHON" -m scripts.extract_gta_mels -d "$DATA_DIR" --filelists "${filelists[@]}" --output-dir "$OUTPUT_DIR" \
    ${forwarded[@]+"${forwarded[@]}"}
