#!/usr/bin/env bash
# Prepares LibriSpeech for wav2vec 2.0: fairseq manifests, letter and word labels, and the letter dictionary.
#
#   scripts/prepare_librispeech.sh [--stage 1] [--stop-stage 5] [--subsets "dev-clean dev-other ..."]
#       stage 1: download <subset>.tar.gz into ARCHIVES_DIR (skipped for archives already there; 60 GB in all)
#       stage 2: extract them into DATA_DIR (DATA_DIR/<subset>/<speaker>/<chapter>/*.flac, *.trans.txt)
#       stage 3: manifests  MANIFESTS_DIR/<subset>.tsv for each subset found (sample counts from the flac headers)
#       stage 4: labels     MANIFESTS_DIR/<subset>.wrd and .ltr from the *.trans.txt files
#       stage 5: MANIFESTS_DIR/train-full-960.{tsv,wrd,ltr} (when all three training subsets are there) and
#                MANIFESTS_DIR/dict.ltr.txt (letters of the training labels, most frequent first)
#
# --data-dir D (or DATA_DIR, default data/LibriSpeech), --archives-dir A (or ARCHIVES_DIR, default data),
# --manifests-dir M (or MANIFESTS_DIR, default data/librispeech_manifests); relative paths are taken from the
# repository root. Subsets (default all seven): dev-clean dev-other test-clean test-other train-clean-100
# train-clean-360 train-other-500. LIBRISPEECH_URL overrides the download address (a mirror, or file:// of a folder).
# Then: python train.py -m wav2vec2 pretrain --data M --train-subset train-full-960 --valid-subset dev-other ...
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; }
die() { echo "prepare_librispeech.sh: error: $*" >&2; exit 2; }

stage=1
stop_stage=100
subsets="dev-clean dev-other test-clean test-other train-clean-100 train-clean-360 train-other-500"

while [ $# -gt 0 ]; do
    option=$1
    case "$option" in
        --stage|--stop-stage|--data-dir|--archives-dir|--manifests-dir|--subsets)
            [ $# -ge 2 ] || die "$option needs a value"
            value=$2
            shift 2
            case "$option" in
                --stage) stage=$value ;;
                --stop-stage) stop_stage=$value ;;
                --data-dir) DATA_DIR=$value ;;
                --archives-dir) ARCHIVES_DIR=$value ;;
                --manifests-dir) MANIFESTS_DIR=$value ;;
                --subsets) subsets=$value ;;
            esac
            ;;
        -h|--help) usage; exit 0 ;;
        *) die "unknown option '$option' (see --help)" ;;
    esac
done
for number in "$stage" "$stop_stage"; do
    [[ "$number" =~ ^[0-9]+$ ]] || die "--stage and --stop-stage take whole numbers, got '$number'"
done
read -r -a subset_list <<< "$subsets"
[ ${#subset_list[@]} -gt 0 ] || die "--subsets is empty"

source scripts/project_python.sh
DATA_DIR=${DATA_DIR:-data/LibriSpeech}
ARCHIVES_DIR=${ARCHIVES_DIR:-data}
MANIFESTS_DIR=${MANIFESTS_DIR:-data/librispeech_manifests}
url_args=()
if [ -n "${LIBRISPEECH_URL:-}" ]; then url_args=(--url "$LIBRISPEECH_URL"); fi

runs() { [ "$stage" -le "$1" ] && [ "$stop_stage" -ge "$1" ]; }
librispeech() { "$PYTHON" -m scripts.data.librispeech "$@"; }

if runs 1; then
    echo "stage 1: download -> $ARCHIVES_DIR"
    librispeech download --archives-dir "$ARCHIVES_DIR" --subsets "${subset_list[@]}" ${url_args[@]+"${url_args[@]}"}
fi
if runs 2; then
    echo "stage 2: extract -> $DATA_DIR"
    librispeech extract --archives-dir "$ARCHIVES_DIR" --dataset-dir "$DATA_DIR" --subsets "${subset_list[@]}"
fi
if runs 3; then
    echo "stage 3: manifests -> $MANIFESTS_DIR"
    librispeech manifests --dataset-dir "$DATA_DIR" --manifests-dir "$MANIFESTS_DIR" --subsets "${subset_list[@]}"
fi
if runs 4; then
    echo "stage 4: labels -> $MANIFESTS_DIR"
    librispeech labels --dataset-dir "$DATA_DIR" --manifests-dir "$MANIFESTS_DIR" --subsets "${subset_list[@]}"
fi
if runs 5; then
    echo "stage 5: $MANIFESTS_DIR/train-full-960 and dict.ltr.txt"
    librispeech dictionary --dataset-dir "$DATA_DIR" --manifests-dir "$MANIFESTS_DIR"
fi
