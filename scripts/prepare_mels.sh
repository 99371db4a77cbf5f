#!/usr/bin/env bash
# Precomputes log mels for --load-mel-from-disk training, after scripts/prepare_dataset.sh.
#
#   scripts/prepare_mels.sh [--synthetic] [--data-dir D] [--filelists-dir F] [--overwrite]
#                           [audio flags, as given to train.py: --mel-fmax 8000 ...]
#
# Reads the train/val/test audio filelists in F (default: FILELISTS_DIR or filelists): ljs_audio_text_*_filelist.txt,
# or synthetic_audio_text_*.txt with --synthetic. Saves D/mels/<ID>.pt and writes the matching *_mel_text_*
# filelists. D defaults to DATA_DIR or data/LJSpeech-1.1 (data/synthetic with --synthetic). Mels already made with
# the same audio flags are kept; other flags are refused unless --overwrite. Relative paths are from the repo root.
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=scripts/corpus_filelists.sh
. scripts/corpus_filelists.sh "$@"
source scripts/project_python.sh

"$PYTHON" -m scripts.data.compute_mels --dataset-dir "$DATA_DIR" --audio-filelists "${filelists[@]}" \
    ${forwarded[@]+"${forwarded[@]}"}
