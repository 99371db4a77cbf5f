#!/usr/bin/env bash
# Does wav2vec 2.0 pre-training pay (`make demo-pretrain`)? Pre-train a small wav2vec 2.0 on the ASR demo corpus's
# audio without its labels, fine-tune it with CTC on a small labelled subset, fine-tune the same model from a random
# start beside it (the same updates and schedule), and compare the two recognizers' CER on the corpus's test splits.
#   scripts/wav2vec2/demo_pretrain.sh [--stage N] [--stop-stage N] [extra train.py flags, given to every training]
#       stage 1: the corpus of `make demo-asr` (scripts/data/asr_corpus.py) into DATA_DIR (skipped if built), and its
#                labelled subset: LABELLED_FRACTION of train (scripts/wav2vec2/labelled_subset.py: train_<N>pct)
#       stage 2: pre-train configs/wav2vec2_pretrain_demo.json on train's audio -> OUTPUT_DIR/pretrain
#       stage 3: CTC fine-tune on the subset from the pre-trained model -> OUTPUT_DIR/finetune_pretrained
#       stage 4: the same fine-tune from a random start -> OUTPUT_DIR/finetune_random
#       stage 5: transcribe every test split (DATA_DIR/test*.tsv) with both, greedily and with a language model of
#                the subset's transcripts and the lexicon; the report (scripts/wav2vec2/report_pretrain_demo.py:
#                printed, and OUTPUT_DIR/report.json, report.txt): both recognizers' CERs/WERs, the CER reduction
#                against the >= 30 % target (each decoding), the pre-training curves, the codebook check
#   Environment: DATA_DIR (data/asr), OUTPUT_DIR (output/demo_pretrain), NUM_UTTERANCES (2000), OPEN_UTTERANCES
#   (4000; both as demo_asr.sh builds the corpus: scripts/wav2vec2/demo_corpus.sh), LABELLED_FRACTION (0.02),
#   FINETUNE_UPDATES (500), FINETUNE_MASK_PROB (0.5), PRETRAIN_CONFIG (configs/wav2vec2_pretrain_demo.json),
#   FINETUNE_CONFIG (configs/wav2vec2_asr_demo.json: the same model size), PRETRAIN_DATA_DIR (DATA_DIR: the corpus
#   whose training audio stage 2 pre-trains on, e.g. a copy made by scripts/wav2vec2/accent_perturbed_corpus.py;
#   the fine-tunes and tests stay on DATA_DIR), PYTHON, QUICK=1 (every stage on a 12-utterance corpus and a tiny
#   model for 4 updates, in seconds: a smoke test whose CER means nothing; defaults then go to data/asr_quick and
#   output/demo_pretrain_quick).
# A rerun in the same OUTPUT_DIR resumes each training (--resume-from-last); use a fresh OUTPUT_DIR for a new run.
# Target: 45 minutes in all on the 2-core CPU; measured in wav2vec2/RESULTS.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/project_python.sh
die() { echo "demo_pretrain.sh: error: $*" >&2; exit 2; }

usage() { sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; }
source scripts/stage_flags.sh
source scripts/wav2vec2/demo_corpus.sh
read_stage_flags 1 5 "$@"

QUICK=${QUICK:-0}
if [ "$QUICK" = 1 ]; then
    DATA_DIR=${DATA_DIR:-data/asr_quick}
    OUTPUT_DIR=${OUTPUT_DIR:-output/demo_pretrain_quick}
    NUM_UTTERANCES=${NUM_UTTERANCES:-12}
    OPEN_UTTERANCES=${OPEN_UTTERANCES:-8}
    LABELLED_FRACTION=${LABELLED_FRACTION:-0.25}  # 2 of the tiny corpus's 8 training utterances
    FINETUNE_UPDATES=${FINETUNE_UPDATES:-4}
    # demo_asr.sh's tiny model (both presets' sizes overridden alike), a small codebook, 4 updates: seconds.
    MODEL_FLAGS=(--conv-feature-layers "[(16, 40, 20)] + [(16, 4, 2)] * 4" --encoder-layers 1
                 --encoder-embed-dim 16 --encoder-ffn-embed-dim 32 --encoder-attention-heads 2 --conv-pos 4
                 --conv-pos-groups 2)
    QUICK_FLAGS=(--max-tokens 160000 --num-workers 0)
    PRETRAIN_FLAGS=(--final-dim 16 --latent-vars 8 --num-negatives 10 --max-updates 4 --warmup-updates 1
                    --val-interval-updates 2)
else
    DATA_DIR=${DATA_DIR:-data/asr}
    OUTPUT_DIR=${OUTPUT_DIR:-output/demo_pretrain}
    NUM_UTTERANCES=${NUM_UTTERANCES:-2000}
    OPEN_UTTERANCES=${OPEN_UTTERANCES:-4000}
    # 2 % of the labels (115 utterances, 6 minutes): where pre-training pays (wav2vec2/RESULTS.md: 10 % gave 4-10 %).
    LABELLED_FRACTION=${LABELLED_FRACTION:-0.02}
    FINETUNE_UPDATES=${FINETUNE_UPDATES:-500}
    MODEL_FLAGS=()
    QUICK_FLAGS=()
    PRETRAIN_FLAGS=()
fi
PRETRAIN_CONFIG=${PRETRAIN_CONFIG:-configs/wav2vec2_pretrain_demo.json}
PRETRAIN_DATA_DIR=${PRETRAIN_DATA_DIR:-$DATA_DIR}
FINETUNE_CONFIG=${FINETUNE_CONFIG:-configs/wav2vec2_asr_demo.json}
# Half the frames masked while fine-tuning on so few labels (the ASR preset masks 10 %): both starts gain, the
# pre-trained one more; and no channel masks, which cost the pre-trained start (wav2vec2/RESULTS.md).
FINETUNE_MASK_PROB=${FINETUNE_MASK_PROB:-0.5}
case "$FINETUNE_UPDATES" in ''|*[!0-9]*|0) die "FINETUNE_UPDATES must be a positive whole number, got '$FINETUNE_UPDATES'" ;;
    esac
# The subset's name says its share: 0.1 -> train_10pct (the labelled_subset.py helper checks the range).
percent=$("$PYTHON" -c "import sys; print(f'{float(sys.argv[1]) * 100:g}')" "$LABELLED_FRACTION" 2>/dev/null) \
    || die "LABELLED_FRACTION must be a number in (0, 1], got '$LABELLED_FRACTION'"
labelled=train_${percent//./_}pct
pretrained="$OUTPUT_DIR/pretrain/checkpoint_wav2vec2_last.pt"

start=$(date +%s)
if runs 1; then
    echo "== stage 1: the ASR demo's corpus in $DATA_DIR (built unless there already) =="
    ensure_asr_demo_corpus || true
    "$PYTHON" -m scripts.wav2vec2.labelled_subset --data "$DATA_DIR" --split train --fraction "$LABELLED_FRACTION" \
        --output-split "$labelled"
fi
if runs 2; then
    echo "== stage 2: pre-train wav2vec 2.0 on $PRETRAIN_DATA_DIR/train.tsv's audio (no labels)" \
         "-> $OUTPUT_DIR/pretrain =="
    [ -f "$PRETRAIN_DATA_DIR/train.tsv" ] || die "PRETRAIN_DATA_DIR: $PRETRAIN_DATA_DIR/train.tsv does not exist"
    # In fp32, in which wav2vec2/RESULTS.md measured this demo (train.py's default is bf16 where the CPU computes it
    # natively; a precision in the extra arguments comes later and wins).
    "$PYTHON" train.py -m wav2vec2 pretrain --config-file "$PRETRAIN_CONFIG" --data "$PRETRAIN_DATA_DIR" \
        -o "$OUTPUT_DIR/pretrain" --resume-from-last --quiet --fp32 \
        ${MODEL_FLAGS[@]+"${MODEL_FLAGS[@]}"} ${QUICK_FLAGS[@]+"${QUICK_FLAGS[@]}"} \
        ${PRETRAIN_FLAGS[@]+"${PRETRAIN_FLAGS[@]}"} ${train_flags[@]+"${train_flags[@]}"}
fi
# Both fine-tunes: the same preset, subset, updates and schedule; only the start differs. They run in fp32, in which
# wav2vec2/RESULTS.md measured them, not the ASR preset's bf16, and without its random phase, which came after them;
# a precision or phase share in the extra arguments comes later, and the last one named wins.
finetune() {
    local folder=$1
    shift
    "$PYTHON" train.py -m wav2vec2 finetune --config-file "$FINETUNE_CONFIG" --data "$DATA_DIR" \
        --train-subset "$labelled" -o "$OUTPUT_DIR/$folder" --resume-from-last --quiet \
        --max-updates "$FINETUNE_UPDATES" --val-interval-updates $(( (FINETUNE_UPDATES + 4) / 5 )) \
        --mask-prob "$FINETUNE_MASK_PROB" --mask-channel-prob 0 --fp32 --random-phase-prob 0 \
        ${MODEL_FLAGS[@]+"${MODEL_FLAGS[@]}"} ${QUICK_FLAGS[@]+"${QUICK_FLAGS[@]}"} "$@" \
        ${train_flags[@]+"${train_flags[@]}"}
}
if runs 3; then
    echo "== stage 3: CTC fine-tune from the pre-trained model on $labelled -> $OUTPUT_DIR/finetune_pretrained =="
    [ -f "$pretrained" ] || die "$pretrained does not exist: run stage 2 first"
    finetune finetune_pretrained --w2v-path "$pretrained"
fi
if runs 4; then
    echo "== stage 4: the same fine-tune from a random start -> $OUTPUT_DIR/finetune_random =="
    finetune finetune_random
fi
if runs 5; then
    echo "== stage 5: transcribe the test splits with both recognizers; the report =="
    # The language model knows only the labelled subset's transcripts (this demo has no other labels), the
    # lexicon's words, each a sentence of its own, and English word pairs.
    build_demo_lm "$DATA_DIR/$labelled.wrd" "$OUTPUT_DIR/lm_2gram.arpa"
    set_lm_flags "$OUTPUT_DIR/lm_2gram.arpa"
    for folder in finetune_pretrained finetune_random; do
        for manifest in "$DATA_DIR"/test*.tsv; do
            split=$(basename "$manifest" .tsv)
            [ -f "$DATA_DIR/$split.wrd" ] || continue
            "$PYTHON" inference.py -m wav2vec2 --cpu --checkpoint "$OUTPUT_DIR/$folder/checkpoint_wav2vec2_last.pt" \
                -i "$manifest" -o "$OUTPUT_DIR/$folder/$split" --save-predictions --quiet
            "$PYTHON" inference.py -m wav2vec2 --cpu --checkpoint "$OUTPUT_DIR/$folder/checkpoint_wav2vec2_last.pt" \
                -i "$manifest" -o "$OUTPUT_DIR/$folder/${split}_lm" --save-predictions --quiet --decoder beam \
                "${LM_FLAGS[@]}"
        done
    done
    "$PYTHON" -m scripts.wav2vec2.report_pretrain_demo --output-dir "$OUTPUT_DIR" --data "$DATA_DIR" \
        --labelled-split "$labelled" --seconds $(( $(date +%s) - start ))
fi
