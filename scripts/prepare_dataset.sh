#!/usr/bin/env bash
# Prepares a corpus in LJSpeech layout (wavs/, metadata.csv) and its train/val/test filelists.
#
#   scripts/prepare_dataset.sh --synthetic [--num-utterances 500] [--voice en-us] [--rate 175] [--seed 1234]
#       [--sampling-rate 16000 --manifest]
#       stage 1: speak a synthetic corpus with eSpeak NG into data/synthetic              (~10 s, no download)
#       --voice de (or de-...): German sentences, into data/synthetic_de with filelists in filelists/de
#       --sampling-rate: the wavs' rate (default eSpeak's 22050); --manifest: also fairseq manifests for speech
#       recognition in DATA_DIR: {train,valid,test}.tsv, .wrd, .ltr and dict.ltr.txt (train.py -m wav2vec2 --data)
#   scripts/prepare_dataset.sh [--stage 1] [--stop-stage 3] [--seed 1234]
#       LJSpeech-1.1 into data/LJSpeech-1.1:
#       stage 1: download ${ARCHIVE:-<DATA_DIR's parent>/LJSpeech-1.1.tar.bz2} (skipped if present, 2.6 GB)
#       stage 2: extract it into DATA_DIR
#       stage 3: write the filelists (train 12500, val 100, test 500)
#
# --data-dir D (or DATA_DIR) picks the corpus folder; --filelists-dir F (or FILELISTS_DIR, default filelists) the
# filelists' folder. Filelist paths are relative to the corpus folder (train with -d D). Relative paths are taken
# from the repository root. LJSPEECH_URL overrides the download address (a mirror).
# Then scripts/prepare_mels.sh precomputes mels for --load-mel-from-disk.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; }
die() { echo "prepare_dataset.sh: error: $*" >&2; exit 2; }

stage=1
stop_stage=100
synthetic=false
seed=1234
synthetic_args=()

while [ $# -gt 0 ]; do
    option=$1
    case "$option" in
        --stage|--stop-stage|--seed|--data-dir|--filelists-dir|--num-utterances|--voice|--rate|--sampling-rate)
            [ $# -ge 2 ] || die "$option needs a value"
            value=$2
            shift 2
            case "$option" in
                --stage) stage=$value ;;
                --stop-stage) stop_stage=$value ;;
                --seed) seed=$value ;;
                --data-dir) DATA_DIR=$value ;;
                --filelists-dir) FILELISTS_DIR=$value ;;
                *) synthetic_args+=("$option" "$value") ;;
            esac
            ;;
        --synthetic) synthetic=true; shift ;;
        --manifest) synthetic_args+=("$option"); shift ;;
        -h|--help) usage; exit 0 ;;
        *) die "unknown option '$option' (see --help)" ;;
    esac
done
for number in "$stage" "$stop_stage"; do
    [[ "$number" =~ ^[0-9]+$ ]] || die "--stage and --stop-stage take whole numbers, got '$number'"
done
if [ "$synthetic" = false ] && [ ${#synthetic_args[@]} -gt 0 ]; then
    die "${synthetic_args[0]} only applies with --synthetic"
fi

source scripts/project_python.sh
# A German voice speaks German sentences (scripts/data/synthetic_corpus.py): its corpus goes beside the English one.
for ((index = 0; index + 1 < ${#synthetic_args[@]}; index++)); do
    if [ "${synthetic_args[index]}" = --voice ]; then
        case "${synthetic_args[index + 1]}" in
            de|de-*) DATA_DIR=${DATA_DIR:-data/synthetic_de}; FILELISTS_DIR=${FILELISTS_DIR:-filelists/de} ;;
        esac
    fi
done
FILELISTS_DIR=${FILELISTS_DIR:-filelists}

runs() { [ "$stage" -le "$1" ] && [ "$stop_stage" -ge "$1" ]; }

if [ "$synthetic" = true ]; then
    DATA_DIR=${DATA_DIR:-data/synthetic}
    if runs 1; then
        echo "stage 1: synthetic corpus -> $DATA_DIR"
        "$PYTHON" -m scripts.data.synthetic_corpus --output-dir "$DATA_DIR" --filelists-dir "$FILELISTS_DIR" \
            --seed "$seed" ${synthetic_args[@]+"${synthetic_args[@]}"}
    fi
    exit 0
fi

DATA_DIR=${DATA_DIR:-data/LJSpeech-1.1}
ARCHIVE=${ARCHIVE:-$(dirname "$DATA_DIR")/LJSpeech-1.1.tar.bz2}
url_args=()
if [ -n "${LJSPEECH_URL:-}" ]; then url_args=(--url "$LJSPEECH_URL"); fi

if runs 1; then
    echo "stage 1: download -> $ARCHIVE"
    "$PYTHON" -m scripts.data.ljspeech download --archive "$ARCHIVE" ${url_args[@]+"${url_args[@]}"}
fi
if runs 2; then
    echo "stage 2: extract -> $DATA_DIR"
    "$PYTHON" -m scripts.data.ljspeech extract --archive "$ARCHIVE" --dataset-dir "$DATA_DIR"
fi
if runs 3; then
    echo "stage 3: filelists -> $FILELISTS_DIR"
    "$PYTHON" -m scripts.data.ljspeech filelists --dataset-dir "$DATA_DIR" --filelists-dir "$FILELISTS_DIR" \
        --seed "$seed"
fi
