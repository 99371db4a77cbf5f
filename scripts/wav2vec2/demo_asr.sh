#!/usr/bin/env bash
# The speech-recognition demo (`make demo-asr`): build the synthetic eSpeak NG ASR corpus (scripts/data/asr_corpus.py
# --text open: the TTS corpus's template sentences and runs of words of a 20,000-word lexicon, many voices, rates and
# pitches, 16 kHz), re-speak half its training utterances with made-up accents in other voice variants
# (scripts/wav2vec2/accent_perturbed_corpus.py; the TTS judge's en-us voice stays as it is), train a small wav2vec 2.0
# CTC model on that copy from scratch on the CPU (configs/wav2vec2_asr_demo.json; a quarter of the utterances it
# draws are given a random phase, --random-phase-prob), then transcribe every test split,
# greedily and with a beam search over a word 2-gram language model of the training transcripts
# (scripts/wav2vec2/build_lm.py), and report CER and WER (scripts/wav2vec2/report_asr_demo.py: printed, and report.json
# / report.txt in OUTPUT_DIR): held-out template sentences by training voices (test_sentences) and by a held-out voice
# (test_voice), and hand-written everyday sentences by training voices (test_everyday) and by four held-out accents and
# variants (test_everyday_voices); and eSpeak NG's rendering of the TTS demo's test sentences
# (scripts/wav2vec2/tts_judge_ceiling.py: the ceiling of the intelligibility score this recognizer gives `make demo`).
#   scripts/wav2vec2/demo_asr.sh [extra train.py flags, e.g. --max-updates 400]
#   Environment: DATA_DIR (data/asr), OUTPUT_DIR (output/demo_asr), NUM_UTTERANCES (2000 template sentences),
#   OPEN_UTTERANCES (4000 word runs), ACCENT_SHARE (0.5: train on a copy, TRAIN_DATA_DIR (DATA_DIR_accent), in which
#   that share of the training utterances is re-spoken with made-up accents; 0: train on DATA_DIR as built),
#   ACCENT_VARIANTS (wide: in eSpeak NG's other voice variants; own: each in its own), ACCENT_KEEP_VOICES (en-us: voices
#   never re-spoken, space-separated; empty: none), CONFIG (configs/wav2vec2_asr_demo.json), PYTHON, QUICK=1 (every step
#   on a tiny corpus and a tiny model, in seconds: a smoke test, its CER means nothing; defaults then go to
#   data/asr_quick and output/demo_asr_quick).
# A rerun in the same OUTPUT_DIR resumes the training (--resume-from-last) and, once it is done, only tests again;
# use a fresh OUTPUT_DIR for a new run. The corpus is built once per DATA_DIR and corpus arguments, the copy once per
# TRAIN_DATA_DIR and copy arguments; a folder of files that no demo built is never written over (an error names it).
# 25 to 32½ minutes on a quiet 2-core CPU from a fresh clone, set-up included (2026-11-27 and 28, seven runs: the
# machine's speed varies from day to day; wav2vec2/RESULTS.md);
# OMP_NUM_THREADS=1 is faster where other jobs share the cores.
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/project_python.sh
QUICK=${QUICK:-0}
if [ "$QUICK" = 1 ]; then
    DATA_DIR=${DATA_DIR:-data/asr_quick}
    OUTPUT_DIR=${OUTPUT_DIR:-output/demo_asr_quick}
    NUM_UTTERANCES=${NUM_UTTERANCES:-12}
    OPEN_UTTERANCES=${OPEN_UTTERANCES:-8}
    # A tiny model and 4 updates over the demo's preset: the same steps, in seconds.
    QUICK_FLAGS=(--conv-feature-layers "[(16, 40, 20)] + [(16, 4, 2)] * 4" --encoder-layers 1
                 --encoder-embed-dim 16 --encoder-ffn-embed-dim 32 --encoder-attention-heads 2 --conv-pos 4
                 --conv-pos-groups 2 --max-updates 4 --val-interval-updates 2 --max-tokens 160000 --num-workers 0)
else
    DATA_DIR=${DATA_DIR:-data/asr}
    OUTPUT_DIR=${OUTPUT_DIR:-output/demo_asr}
    NUM_UTTERANCES=${NUM_UTTERANCES:-2000}
    OPEN_UTTERANCES=${OPEN_UTTERANCES:-4000}
    QUICK_FLAGS=()
fi
CONFIG=${CONFIG:-configs/wav2vec2_asr_demo.json}
# Made-up accents in half the training utterances, in wider voice variants, take the held-out accents' CER 3 points
# lower with the language model. Re-spoken, the plain en-us voice that `make demo` is judged in would be heard half as
# often, and the judge's ceiling rose above its 1.8 % limit; kept as it is, the ceiling stays (wav2vec2/RESULTS.md).
ACCENT_SHARE=${ACCENT_SHARE:-0.5}
ACCENT_VARIANTS=${ACCENT_VARIANTS:-wide}
ACCENT_KEEP_VOICES=${ACCENT_KEEP_VOICES-en-us}
TRAIN_DATA_DIR=${TRAIN_DATA_DIR:-${DATA_DIR}_accent}
source scripts/wav2vec2/demo_corpus.sh

start=$(date +%s)
ensure_asr_demo_corpus || true
if [ "$ACCENT_SHARE" = 0 ]; then
    TRAIN_DATA_DIR=$DATA_DIR
else
    ensure_accent_copy "$DATA_DIR" "$TRAIN_DATA_DIR" "$ACCENT_SHARE" "$ACCENT_VARIANTS" "$ACCENT_KEEP_VOICES"
fi
# train.py's default precision: bf16 where the CPU computes it natively, fp32 on an AVX2-only CPU, which emulates
# bf16 matrix products about 20 times slower (docs/training.md); a precision flag given to this script wins.
train_start=$(date +%s)
"$PYTHON" train.py -m wav2vec2 finetune --config-file "$CONFIG" --data "$TRAIN_DATA_DIR" -o "$OUTPUT_DIR" \
    --resume-from-last --quiet ${QUICK_FLAGS[@]+"${QUICK_FLAGS[@]}"} "$@"
train_seconds=$(( $(date +%s) - train_start ))
checkpoint="$OUTPUT_DIR/checkpoint_wav2vec2_last.pt"
# Each split twice: greedy CTC (the recognizer alone), and a CTC beam search with a word 2-gram language model of the
# training transcripts and of the lexicon's words, each a sentence of its own, mixed with English word pairs (the
# test sentences are never in its text; their words are in the lexicon). `make demo` decodes with the same model and
# weights (scripts/demo.sh).
build_demo_lm "$DATA_DIR/train.wrd" "$OUTPUT_DIR/lm_2gram.arpa"
set_lm_flags "$OUTPUT_DIR/lm_2gram.arpa"
for split in test_sentences test_voice test_everyday test_everyday_voices; do
    "$PYTHON" inference.py -m wav2vec2 --cpu --checkpoint "$checkpoint" -i "$DATA_DIR/$split.tsv" \
        -o "$OUTPUT_DIR/$split" --save-predictions --quiet
    "$PYTHON" inference.py -m wav2vec2 --cpu --checkpoint "$checkpoint" -i "$DATA_DIR/$split.tsv" \
        -o "$OUTPUT_DIR/${split}_lm" --save-predictions --quiet --decoder beam "${LM_FLAGS[@]}"
done
# The recognizer also judges `make demo`: its ceiling there is how well it hears eSpeak NG say the TTS test
# sentences.
"$PYTHON" -m scripts.wav2vec2.tts_judge_ceiling --cpu --asr "$checkpoint" -o "$OUTPUT_DIR/tts_ceiling" "${LM_FLAGS[@]}"
"$PYTHON" -m scripts.wav2vec2.report_asr_demo --output-dir "$OUTPUT_DIR" --data "$TRAIN_DATA_DIR" \
    --checkpoint "$checkpoint" --train-seconds "$train_seconds" --seconds $(( $(date +%s) - start ))
