# Sourced, with the script's arguments, by the scripts that read a corpus's train/val/test audio filelists
# (prepare_mels.sh, extract_gta_mels.sh): `. scripts/corpus_filelists.sh "$@"`. Reads --synthetic, --data-dir D,
# --filelists-dir F, -h/--help (lines 2-10 of the script), and --output-dir O where the script has set
# TAKES_OUTPUT_DIR=true; every other argument goes to the array `forwarded`, for the Python module, which refuses what
# it does not know. With --synthetic, DATA_DIR defaults to data/synthetic and the filelists to
# synthetic_audio_text_*.txt; otherwise to data/LJSpeech-1.1 and ljs_audio_text_*_filelist.txt, all in FILELISTS_DIR
# (default filelists). Sets DATA_DIR, FILELISTS_DIR, OUTPUT_DIR (where given), `forwarded` and the array `filelists`.
synthetic=false
forwarded=()
while [ $# -gt 0 ]; do
    case "$1" in
        --synthetic) synthetic=true; shift ;;
        --data-dir|--filelists-dir|--output-dir)
            if [ "$1" = --output-dir ] && [ "${TAKES_OUTPUT_DIR:-false}" != true ]; then
                forwarded+=("$1"); shift; continue
            fi
            [ $# -ge 2 ] || { echo "$(basename "$0"): error: $1 needs a value" >&2; exit 2; }
            case "$1" in --data-dir) DATA_DIR=$2 ;; --filelists-dir) FILELISTS_DIR=$2 ;; *) OUTPUT_DIR=$2 ;; esac
            shift 2
            ;;
        -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) forwarded+=("$1"); shift ;;
    esac
done

FILELISTS_DIR=${FILELISTS_DIR:-filelists}
if [ "$synthetic" = true ]; then
    DATA_DIR=${DATA_DIR:-data/synthetic}
    filelists=("$FILELISTS_DIR"/synthetic_audio_text_{train,val,test}.txt)
else
    DATA_DIR=${DATA_DIR:-data/LJSpeech-1.1}
    filelists=("$FILELISTS_DIR"/ljs_audio_text_{train,val,test}_filelist.txt)
fi
