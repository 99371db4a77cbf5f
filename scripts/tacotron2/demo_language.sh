#!/usr/bin/env bash
# Another language (`make demo-de`): a German eSpeak NG corpus, a small Tacotron 2 trained on its phonemes on the CPU
# (--text-cleaners espeak_ipa --language de: eSpeak NG's IPA, the symbol table from the phonemized transcripts), then
# German text synthesized with Griffin-Lim, phonemized the same way from the checkpoint, and its alignment health.
#   scripts/tacotron2/demo_language.sh [--stage N] [--stop-stage N] [extra train.py flags]
#       stage 1: the corpus: scripts/prepare_dataset.sh --synthetic --voice $VOICE into DATA_DIR   (skipped if built)
#       stage 2: train configs/tacotron2_demo.json with phonemes into OUTPUT_DIR (a rerun resumes; done when finished)
#       stage 3: synthesize PHRASES and the corpus's held-out test sentences (wavs, wavs_test, alignment plots)
#       stage 4: report (scripts/report_demo.py): validation alignment health (aligned: >= 0.7), the test sentences'
#                and how near each is to eSpeak NG saying it, the wall time (from the first stage run)
#   Environment: VOICE (de: the corpus's eSpeak NG voice and --language; only German has its own sentences),
#   DATA_DIR (data/synthetic_$VOICE), FILELISTS (filelists/$VOICE), OUTPUT_DIR (output/demo_$VOICE), NUM_UTTERANCES
#   (500), CONFIG, PHRASES (phrases/phrase_$VOICE.txt), PYTHON, QUICK=1 (every stage on a 12-utterance corpus and a
#   tiny model for one epoch, in seconds: a smoke test whose speech means nothing; defaults then go to
#   data/synthetic_de_quick, filelists/de_quick and output/demo_de_quick).
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/project_python.sh
die() { echo "demo_language.sh: error: $*" >&2; exit 2; }

usage() { sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; }
source scripts/stage_flags.sh
read_stage_flags 1 4 "$@"

VOICE=${VOICE:-de}
QUICK=${QUICK:-0}
if [ "$QUICK" = 1 ]; then
    suffix=_quick
    NUM_UTTERANCES=${NUM_UTTERANCES:-12}
    # tests/conftest.py's TINY_TACOTRON2, for one epoch: the same stages, in seconds.
    QUICK_FLAGS=(--symbols-embedding-dim 32 --encoder-embedding-dim 32 --encoder-n-convolutions 1
                 --attention-rnn-dim 32 --decoder-rnn-dim 32 --prenet-dim 16 --attention-dim 8
                 --attention-location-n-filters 4 --attention-location-kernel-size 5 --postnet-embedding-dim 16
                 --postnet-n-convolutions 2 --n-frames-per-step 2 --max-decoder-steps 40 --epochs 1 -bs 4
                 --num-workers 0 --epochs-per-checkpoint 1)
else
    suffix=
    NUM_UTTERANCES=${NUM_UTTERANCES:-500}
    QUICK_FLAGS=()
fi
DATA_DIR=${DATA_DIR:-data/synthetic_$VOICE$suffix}
FILELISTS=${FILELISTS:-filelists/$VOICE$suffix}
OUTPUT_DIR=${OUTPUT_DIR:-output/demo_$VOICE$suffix}
CONFIG=${CONFIG:-configs/tacotron2_demo.json}
PHRASES=${PHRASES:-phrases/phrase_$VOICE.txt}
case "$NUM_UTTERANCES" in ''|*[!0-9]*) die "NUM_UTTERANCES must be a whole number, got '$NUM_UTTERANCES'" ;; esac
checkpoint="$OUTPUT_DIR/checkpoint_Tacotron2_last.pt"

start=$(date +%s)
if runs 1; then
    # The corpus is a function of its arguments; the stamp says which ones built the one in DATA_DIR.
    corpus_args="--voice $VOICE --num-utterances $NUM_UTTERANCES --seed 1234"
    if [ ! -f "$DATA_DIR/metadata.csv" ] || [ "$(cat "$DATA_DIR/.demo_language_corpus" 2>/dev/null)" != "$corpus_args" ]
    then
        echo "== stage 1: the $VOICE corpus -> $DATA_DIR, filelists in $FILELISTS =="
        # shellcheck disable=SC2086
        bash scripts/prepare_dataset.sh --synthetic --data-dir "$DATA_DIR" --filelists-dir "$FILELISTS" $corpus_args
        echo "$corpus_args" > "$DATA_DIR/.demo_language_corpus"
    else
        echo "== stage 1: the $VOICE corpus is in $DATA_DIR =="
    fi
fi
if runs 2; then
    echo "== stage 2: Tacotron 2 on eSpeak NG phonemes ($VOICE) -> $OUTPUT_DIR =="
    # The phonemes of each filelist are cached beside it (<filelist>.espeak_ipa-$VOICE.json).
    "$PYTHON" train.py -m Tacotron2 --config-file "$CONFIG" -o "$OUTPUT_DIR" -d "$DATA_DIR" \
        --training-files "$FILELISTS/synthetic_audio_text_train.txt" \
        --validation-files "$FILELISTS/synthetic_audio_text_val.txt" \
        --text-cleaners espeak_ipa --language "$VOICE" --resume-from-last \
        ${QUICK_FLAGS[@]+"${QUICK_FLAGS[@]}"} ${train_flags[@]+"${train_flags[@]}"}
fi
if runs 3; then
    echo "== stage 3: synthesize $PHRASES and the held-out test sentences with Griffin-Lim =="
    # The checkpoint carries the cleaner, the language and the table: inference phonemizes the text as training did.
    "$PYTHON" inference.py -i "$PHRASES" -o "$OUTPUT_DIR/wavs" --cpu --save-alignments --tacotron2 "$checkpoint"
    cut -d'|' -f2 "$FILELISTS/synthetic_audio_text_test.txt" > "$OUTPUT_DIR/test_sentences.txt"
    "$PYTHON" inference.py -i "$OUTPUT_DIR/test_sentences.txt" -o "$OUTPUT_DIR/wavs_test" --cpu --quiet \
        --save-alignments --tacotron2 "$checkpoint"
fi
if runs 4; then
    # The held-out test sentences: text the model never trained on, in the corpus's own style.
    "$PYTHON" -m scripts.report_demo --log "$OUTPUT_DIR/nvlog.json" \
        --inference-log "$OUTPUT_DIR/wavs_test/nvlog.json" --wavs "$OUTPUT_DIR/wavs_test" \
        --phrases "$OUTPUT_DIR/test_sentences.txt" --voice "$VOICE" --seconds $(( $(date +%s) - start ))
fi
