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

synthetic=false
forwarded=()
while [ $# -gt 0 ]; do
    case "$1" in
        --synthetic) synthetic=true; shift ;;
        --data-dir|--filelists-dir)
            [ $# -ge 2 ] || { echo "prepare_mels.sh: error: $1 needs a value" >&2; exit 2; }
            if [ "$1" = --data-dir ]; then DATA_DIR=$2; else FILELISTS_DIR=$2; fi
            shift 2
            ;;
        -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) forwarded+=("$1"); shift ;;  # compute_mels rejects what it does not know
    esac
done

source scripts/project_python.sh
# shellcheck source=scripts/corpus_filelists.sh
. scripts/corpus_filelists.sh

"$PYTHON" -m scripts.data.compute_mels --dataset-dir "$DATA_DIR" --audio-filelists "${filelists[@]}" \
    ${forwarded[@]+"${forwarded[@]}"}
