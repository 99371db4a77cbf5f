#!/usr/bin/env bash
# Does a warm start help a new voice? Take the demo's Tacotron 2 (`make demo`), train it further on a small corpus of
# another eSpeak NG voice with --warm-start, train the same model from scratch on the same data for the same number of
# epochs (the same steps on the same data: the same compute), and compare them: the first epoch whose validation
# alignment health (tacotron2/alignment.py, logged at every validation) reaches 0.7, and the CER and WER of their
# speech as `make demo-asr`'s recognizer hears it (scripts/intelligibility.py).
#   experiments/tacotron2_warm_start/warm_start_experiment.sh [--stage N] [--stop-stage M] [train.py flags for both]
#     stage 0: check the base model (DEMO_CHECKPOINT; with QUICK=1 a tiny one is trained here when it is missing)
#     stage 1: the corpus of the new voice: NUM_UTTERANCES sentences spoken by VOICE into DATA_DIR
#     stage 2: warm start: train.py --warm-start DEMO_CHECKPOINT for EPOCHS epochs into OUTPUT_DIR/warm_start
#     stage 3: from scratch: the same command line without --warm-start, into OUTPUT_DIR/scratch
#     stage 4: synthesize each run's held-out test sentences and phrases/phrase.txt (Griffin-Lim), score them with
#              ASR_CHECKPOINT, and report: a table printed and OUTPUT_DIR/warm_start_report.json
#   Environment (defaults): VOICE (en-us+f3: the female variant; the demo speaks en-us), NUM_UTTERANCES (100),
#   EPOCHS (100), DEMO_CHECKPOINT (output/demo/checkpoint_Tacotron2_last.pt), ASR_CHECKPOINT
#   (output/demo_asr/checkpoint_wav2vec2_last.pt; without it stage 4 reports no CER), CONFIG
#   (configs/tacotron2_demo.json: the demo's model and training preset, which the warm start needs), DATA_DIR
#   (data/synthetic_<VOICE>), OUTPUT_DIR (output/warm_start_<VOICE>), PYTHON.
#   DRY_RUN=1: stages 2 and 3 print their train.py command lines instead of running them.
#   QUICK=1: every stage at tiny size (a 12-utterance corpus, a tiny model, 2 epochs) in seconds, a smoke test whose
#   numbers mean nothing; its defaults go to data/warm_start_quick and output/warm_start_quick.
# Stages 2 and 3 resume (--resume-from-last) when run again in the same OUTPUT_DIR; the warm start applies only while
# a run has no checkpoint yet. About 2 x 4 minutes of training at the defaults on a 2-core CPU (~0.35 s a step, 6 steps
# an epoch), plus the corpus and the scoring.
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/project_python.sh
die() { echo "warm_start_experiment.sh: error: $*" >&2; exit 2; }

source scripts/stage_flags.sh
read_stage_flags 0 4 "$@"

VOICE=${VOICE:-en-us+f3}
QUICK=${QUICK:-0}
CONFIG=${CONFIG:-configs/tacotron2_demo.json}
if [ "$QUICK" = 1 ]; then
    DATA_DIR=${DATA_DIR:-data/warm_start_quick/$VOICE}
    OUTPUT_DIR=${OUTPUT_DIR:-output/warm_start_quick}
    NUM_UTTERANCES=${NUM_UTTERANCES:-12}
    EPOCHS=${EPOCHS:-2}
    DEMO_CHECKPOINT=${DEMO_CHECKPOINT:-$OUTPUT_DIR/base/checkpoint_Tacotron2_last.pt}
    ASR_CHECKPOINT=${ASR_CHECKPOINT:-output/demo_asr_quick/checkpoint_wav2vec2_last.pt}
    # A tiny model over the demo's preset, the same for the base model and both runs (a warm start needs the shapes).
    QUICK_FLAGS=(--symbols-embedding-dim 16 --encoder-embedding-dim 16 --encoder-n-convolutions 1
                 --attention-rnn-dim 16 --decoder-rnn-dim 16 --prenet-dim 8 --attention-dim 8
                 --attention-location-n-filters 2 --attention-location-kernel-size 3 --postnet-embedding-dim 8
                 --postnet-n-convolutions 1 --max-decoder-steps 30 --batch-size 4 --num-workers 0
                 --epochs-per-checkpoint 1)
else
    DATA_DIR=${DATA_DIR:-data/synthetic_$VOICE}
    OUTPUT_DIR=${OUTPUT_DIR:-output/warm_start_$VOICE}
    NUM_UTTERANCES=${NUM_UTTERANCES:-100}
    EPOCHS=${EPOCHS:-100}
    DEMO_CHECKPOINT=${DEMO_CHECKPOINT:-output/demo/checkpoint_Tacotron2_last.pt}
    ASR_CHECKPOINT=${ASR_CHECKPOINT:-output/demo_asr/checkpoint_wav2vec2_last.pt}
    QUICK_FLAGS=()
fi
for number in "$NUM_UTTERANCES" "$EPOCHS"; do
    [[ "$number" =~ ^[0-9]+$ ]] || die "NUM_UTTERANCES and EPOCHS take whole numbers, got '$number'"
done
FILELISTS=$DATA_DIR/filelists

# train RUN [flags]: the demo's training command on the new voice's corpus, the same for both runs but for flags.
train() {
    local run=$1
    shift
    local command=("$PYTHON" train.py -m Tacotron2 --config-file "$CONFIG" -o "$OUTPUT_DIR/$run" -d "$DATA_DIR"
        --training-files "$FILELISTS/synthetic_audio_text_train.txt"
        --validation-files "$FILELISTS/synthetic_audio_text_val.txt" --epochs "$EPOCHS" --resume-from-last --quiet
        ${QUICK_FLAGS[@]+"${QUICK_FLAGS[@]}"} "$@" ${train_flags[@]+"${train_flags[@]}"})
    if [ "${DRY_RUN:-0}" = 1 ]; then  # print the command line instead (the tests check it with train.py's parser)
        echo "${command[*]}"
        return
    fi
    local begin
    begin=$(date +%s)
    "${command[@]}"
    # Training seconds of this invocation, added to those of earlier (resumed) ones.
    local before
    before=$(cat "$OUTPUT_DIR/$run/train_seconds" 2>/dev/null || echo 0)
    echo $(( before + $(date +%s) - begin )) > "$OUTPUT_DIR/$run/train_seconds"
}

if runs 0; then
    echo "stage 0: the base model: $DEMO_CHECKPOINT"
    if [ ! -f "$DEMO_CHECKPOINT" ]; then
        [ "$QUICK" = 1 ] || die "no base model at $DEMO_CHECKPOINT: run \`make demo\` first, or set DEMO_CHECKPOINT"
        base_dir=$(dirname "$DEMO_CHECKPOINT")
        bash scripts/prepare_dataset.sh --synthetic --num-utterances "$NUM_UTTERANCES" \
            --data-dir "$base_dir/corpus" --filelists-dir "$base_dir/corpus/filelists"
        "$PYTHON" train.py -m Tacotron2 --config-file "$CONFIG" -o "$base_dir" -d "$base_dir/corpus" \
            --training-files "$base_dir/corpus/filelists/synthetic_audio_text_train.txt" \
            --validation-files "$base_dir/corpus/filelists/synthetic_audio_text_val.txt" --epochs 1 --quiet \
            "${QUICK_FLAGS[@]}"
    fi
fi
if runs 1; then
    echo "stage 1: $NUM_UTTERANCES utterances of eSpeak NG's $VOICE -> $DATA_DIR"
    # The corpus is a function of its arguments; the stamp says which ones built the one in DATA_DIR.
    corpus_args="--voice $VOICE --num-utterances $NUM_UTTERANCES"
    if [ "$(cat "$DATA_DIR/.warm_start_corpus" 2>/dev/null)" != "$corpus_args" ]; then
        # shellcheck disable=SC2086
        bash scripts/prepare_dataset.sh --synthetic $corpus_args --data-dir "$DATA_DIR" --filelists-dir "$FILELISTS"
        echo "$corpus_args" > "$DATA_DIR/.warm_start_corpus"
    fi
fi
if runs 2; then
    echo "stage 2: warm start from $DEMO_CHECKPOINT, $EPOCHS epochs -> $OUTPUT_DIR/warm_start"
    [ -f "$DEMO_CHECKPOINT" ] || die "no base model at $DEMO_CHECKPOINT: run \`make demo\` first, or set" \
        "DEMO_CHECKPOINT"
    train warm_start --warm-start "$DEMO_CHECKPOINT"
fi
if runs 3; then
    echo "stage 3: from scratch, $EPOCHS epochs -> $OUTPUT_DIR/scratch"
    train scratch
fi
if runs 4; then
    echo "stage 4: synthesize, score and compare"
    # The corpus's held-out test sentences (never trained on), in its own style.
    cut -d'|' -f2 "$FILELISTS/synthetic_audio_text_test.txt" > "$OUTPUT_DIR/test_sentences.txt"
    report_args=()
    for run in warm_start scratch; do
        checkpoint="$OUTPUT_DIR/$run/checkpoint_Tacotron2_last.pt"
        [ -f "$checkpoint" ] || die "no checkpoint at $checkpoint: run its training (stage 2 or 3) first"
        "$PYTHON" inference.py -i "$OUTPUT_DIR/test_sentences.txt" -o "$OUTPUT_DIR/$run/wavs_test" --cpu --quiet \
            --tacotron2 "$checkpoint"
        "$PYTHON" inference.py -i phrases/phrase.txt -o "$OUTPUT_DIR/$run/wavs_phrases" --cpu --quiet \
            --tacotron2 "$checkpoint"
        if [ -f "$ASR_CHECKPOINT" ]; then
            "$PYTHON" -m scripts.intelligibility --asr "$ASR_CHECKPOINT" --wavs "$OUTPUT_DIR/$run/wavs_test" --quiet \
                --texts "$OUTPUT_DIR/test_sentences.txt" --espeak-ceiling --voice "$VOICE" \
                -o "$OUTPUT_DIR/$run/intelligibility_test"
            "$PYTHON" -m scripts.intelligibility --asr "$ASR_CHECKPOINT" --wavs "$OUTPUT_DIR/$run/wavs_phrases" \
                --quiet --texts phrases/phrase.txt -o "$OUTPUT_DIR/$run/intelligibility_phrases"
        fi
        report_args+=(--run "$run=$OUTPUT_DIR/$run")
    done
    [ -f "$ASR_CHECKPOINT" ] || echo "No speech recognizer at $ASR_CHECKPOINT, so the CER is not measured: run" \
        "\`make demo-asr\` (or set ASR_CHECKPOINT), then this script again with --stage 4."
    "$PYTHON" -m experiments.tacotron2_warm_start.warm_start_report "${report_args[@]}" --voice "$VOICE" \
        --num-utterances "$NUM_UTTERANCES" --epochs "$EPOCHS" --base "$DEMO_CHECKPOINT" \
        -o "$OUTPUT_DIR/warm_start_report.json"
fi
