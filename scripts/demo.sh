#!/usr/bin/env bash
# The demo (README's first command runs it through `make demo`): build the synthetic eSpeak NG corpus, train a small
# Tacotron 2 on the CPU, then a mel inverter (melinverter/) on Tacotron 2's own teacher-forced mels, synthesize
# phrases/phrase.txt and the corpus's held-out test sentences through the inverter and Griffin-Lim, and say how
# intelligible they are: CER and WER through `make demo-asr`'s recognizer when it exists (the phrases also over 8
# synthesis seeds: scripts/intelligibility_seeds.py), and through Moonshine base, which nobody here trained, on the
# same speech and on the everyday sentences typed without capitals or a final full stop (those at 3
# synthesis seeds, each and pooled, against eSpeak NG saying them).
#   scripts/demo.sh [extra train.py flags]   # defaults below; each can be set in the environment
#   OUTPUT_DIR=output/demo_eager scripts/demo.sh --no-fast-decoder   # the decoder loop as NVIDIA writes it
#   ASR_CHECKPOINT (output/demo_asr/checkpoint_wav2vec2_last.pt): the recognizer that judges the speech, greedily and,
#     where ASR_LM (lm_2gram.arpa beside ASR_CHECKPOINT: make demo-asr's) exists, with that language model too, in a
#     beam of ASR_BEAM_SIZE (the beam search's default, 100) hypotheses
#   OPEN_SEQUENCES (1350): open-vocabulary word sequences added to the 450 training sentences
#     (scripts/data/tts_open_sequences.py), for words outside the corpus's templates; EPOCHS (20: 2240 updates of the
#     preset's batches of 16), the learning rate held for the first 3/4 of the updates and decayed over the last 1/4
#     (the preset's schedule, stretched to a longer run; more epochs speak more clearly and take longer,
#     tacotron2/RESULTS.md)
#   INVERTER_EPOCHS (30: 6750 updates of its batches of 8): the mel inverter's epochs of the training split, its
#     learning rate held for the first 3/4 and decayed over the last 1/4 (as Tacotron 2's); 0: Griffin-Lim alone
#   MOONSHINE (1): judge with Moonshine base too (0: not); EVERYDAY (scripts/data/everyday_sentences.txt): the open
#     text it judges, typed plain
# A rerun in the same OUTPUT_DIR resumes its training (--resume-from-last), and a finished one is only synthesized
# and scored again: use a fresh OUTPUT_DIR for a run with other EPOCHS, OPEN_SEQUENCES or flags.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/project_python.sh
DATA_DIR=${DATA_DIR:-data/synthetic}
OUTPUT_DIR=${OUTPUT_DIR:-output/demo}
CONFIG=${CONFIG:-configs/tacotron2_demo.json}
FILELISTS=${FILELISTS:-filelists}
ASR_CHECKPOINT=${ASR_CHECKPOINT:-output/demo_asr/checkpoint_wav2vec2_last.pt}
OPEN_SEQUENCES=${OPEN_SEQUENCES:-1350}
EPOCHS=${EPOCHS:-20}
INVERTER_EPOCHS=${INVERTER_EPOCHS:-30}
MOONSHINE=${MOONSHINE:-1}
EVERYDAY=${EVERYDAY:-scripts/data/everyday_sentences.txt}
case "$EPOCHS" in ''|*[!0-9]*|0) echo "error: EPOCHS must be a positive whole number, got '$EPOCHS'" >&2; exit 2 ;; esac
case "$INVERTER_EPOCHS" in ''|*[!0-9]*) echo "error: INVERTER_EPOCHS must be a whole number, got '$INVERTER_EPOCHS'" >&2
    exit 2 ;; esac
case "$OPEN_SEQUENCES" in ''|*[!0-9]*) echo "error: OPEN_SEQUENCES must be a whole number, got '$OPEN_SEQUENCES'" >&2
    exit 2 ;; esac

start=$(date +%s)
if [ ! -f "$DATA_DIR/metadata.csv" ]; then
    bash scripts/prepare_dataset.sh --synthetic --data-dir "$DATA_DIR" --filelists-dir "$FILELISTS"
fi
# Added unless the training filelist already holds OPEN_SEQUENCES of them (a corpus from an earlier demo with another
# count gets the sequences again: the same seed speaks the first ones to the same bytes).
training_filelist="$FILELISTS/synthetic_audio_text_train_open.txt"
if [ ! -f "$training_filelist" ] || [ "$(grep -c '^wavs/OPEN-' "$training_filelist")" != "$OPEN_SEQUENCES" ]; then
    "$PYTHON" -m scripts.data.tts_open_sequences --corpus "$DATA_DIR" --filelists-dir "$FILELISTS" \
        --count "$OPEN_SEQUENCES"
fi
# The sampler drops the last partial batch: 112 updates an epoch of the 1800 training lines. Validating every 4 epochs
# (and at the end) leaves the model as it is, since validation does not move training's random streams, and saves
# half a minute for the vocoder.
training_lines=$(grep -c . "$training_filelist")
updates=$(( EPOCHS * (training_lines / 16) ))
"$PYTHON" train.py -m Tacotron2 --config-file "$CONFIG" -o "$OUTPUT_DIR" -d "$DATA_DIR" \
    --training-files "$training_filelist" \
    --validation-files "$FILELISTS/synthetic_audio_text_val.txt" --epochs "$EPOCHS" \
    --hold-updates $(( updates * 3 / 4 )) --decay-updates $(( updates / 4 )) --val-interval-epochs 4 \
    --resume-from-last "$@"
checkpoint="$OUTPUT_DIR/checkpoint_Tacotron2_last.pt"
# The vocoder learns the linear spectrum behind Tacotron 2's own mels (teacher-forced, so frame-aligned with the
# recordings), which Griffin-Lim alone can only guess from the mel filterbank (melinverter/model.py says why).
vocoder=()
vocoder_checkpoint=griffin-lim
if [ "$INVERTER_EPOCHS" -gt 0 ]; then
    "$PYTHON" -m scripts.extract_gta_mels --tacotron2 "$checkpoint" -d "$DATA_DIR" --cpu --quiet \
        --filelists "$training_filelist" "$FILELISTS/synthetic_audio_text_val.txt" --output-dir "$OUTPUT_DIR/mels_gta"
    inverter_updates=$(( INVERTER_EPOCHS * (training_lines / 8) ))  # the preset's batches of 8
    "$PYTHON" train.py -m MelInverter --config-file configs/melinverter_demo.json -o "$OUTPUT_DIR/melinverter" \
        -d "$DATA_DIR" --training-files "$training_filelist" --input-mels-dir "$OUTPUT_DIR/mels_gta" \
        --validation-files "$FILELISTS/synthetic_audio_text_val.txt" --epochs "$INVERTER_EPOCHS" \
        --hold-updates $(( inverter_updates * 3 / 4 )) --decay-updates $(( inverter_updates / 4 )) --resume-from-last
    vocoder_checkpoint="$OUTPUT_DIR/melinverter/checkpoint_MelInverter_last.pt"
    vocoder=(--melinverter "$vocoder_checkpoint")
fi
"$PYTHON" inference.py -i phrases/phrase.txt -o "$OUTPUT_DIR/wavs" --cpu --save-alignments --tacotron2 "$checkpoint" \
    ${vocoder[@]+"${vocoder[@]}"}
# The held-out test sentences: text the model never trained on, in the corpus's own style.
cut -d'|' -f2 "$FILELISTS/synthetic_audio_text_test.txt" > "$OUTPUT_DIR/test_sentences.txt"
"$PYTHON" inference.py -i "$OUTPUT_DIR/test_sentences.txt" -o "$OUTPUT_DIR/wavs_test" --cpu --quiet \
    --tacotron2 "$checkpoint" ${vocoder[@]+"${vocoder[@]}"}
"$PYTHON" -m scripts.report_demo --log "$OUTPUT_DIR/nvlog.json" --inference-log "$OUTPUT_DIR/wavs/nvlog.json" \
    --wavs "$OUTPUT_DIR/wavs" --phrases phrases/phrase.txt --seconds $(( $(date +%s) - start ))
ASR_LM=${ASR_LM:-$(dirname "$ASR_CHECKPOINT")/lm_2gram.arpa}
LM_FLAGS=()
if [ -f "$ASR_LM" ] && [ -f "$ASR_CHECKPOINT" ]; then
    if "$PYTHON" -c "import pyctcdecode, kenlm" 2>/dev/null; then
        source scripts/wav2vec2/demo_corpus.sh  # make demo-asr's decoding weights
        set_lm_flags "$ASR_LM" "${ASR_BEAM_SIZE:-}"
    else
        echo "Greedy decoding only: decoding with $ASR_LM needs pyctcdecode and kenlm (make setup-lm)"
    fi
fi
if [ -f "$ASR_CHECKPOINT" ]; then
    echo "== Intelligibility: what $ASR_CHECKPOINT hears =="
    "$PYTHON" -m scripts.intelligibility --asr "$ASR_CHECKPOINT" --wavs "$OUTPUT_DIR/wavs_test" --quiet \
        --texts "$OUTPUT_DIR/test_sentences.txt" --espeak-ceiling -o "$OUTPUT_DIR/intelligibility_test" \
        ${LM_FLAGS[@]+"${LM_FLAGS[@]}"}
    "$PYTHON" -m scripts.intelligibility --asr "$ASR_CHECKPOINT" --wavs "$OUTPUT_DIR/wavs" --quiet \
        --texts phrases/phrase.txt --espeak-ceiling -o "$OUTPUT_DIR/intelligibility_phrases" \
        ${LM_FLAGS[@]+"${LM_FLAGS[@]}"}
    # The 4 phrases are 200 letters: one seed's prenet dropout moves their CER by points. So also over 8 synthesis
    # seeds, the first inference.py's default (the wavs above).
    echo "the phrases at 8 synthesis seeds:"
    "$PYTHON" -m scripts.intelligibility_seeds --asr "$ASR_CHECKPOINT" --tacotron2 "$checkpoint" \
        --vocoder "$vocoder_checkpoint" --texts phrases/phrase.txt --seeds 1234 1 2 3 4 5 6 7 --cpu \
        -o "$OUTPUT_DIR/intelligibility_phrases_seeds" ${LM_FLAGS[@]+"${LM_FLAGS[@]}"}
else
    echo "No speech recognizer at $ASR_CHECKPOINT, so the speech's CER is not measured: run \`make demo-asr\`" \
         "(about 30 minutes on a 2-core machine), then \`make demo\` again (it resumes the finished training and" \
         "only synthesizes and scores), or set ASR_CHECKPOINT."
fi
# Moonshine base, a recognizer nobody here trained (and not on eSpeak NG's voice), judges the same speech and text
# typed as people type it (the 50 everyday sentences in lower case without a final full stop), beside eSpeak NG's
# rendering of the same text (the ceiling). make demo installs it (setup.sh --judge).
if [ "$MOONSHINE" != 1 ]; then
    :
elif "$PYTHON" -c "import moonshine_cpp, onnxruntime" 2>/dev/null; then
    echo "== Intelligibility: what Moonshine base hears =="
    for texts in test phrases; do
        case $texts in
            test) wavs="$OUTPUT_DIR/wavs_test"; file="$OUTPUT_DIR/test_sentences.txt" ;;
            phrases) wavs="$OUTPUT_DIR/wavs"; file=phrases/phrase.txt ;;
        esac
        "$PYTHON" -m scripts.intelligibility --judge moonshine --wavs "$wavs" --texts "$file" --quiet \
            --espeak-ceiling -o "$OUTPUT_DIR/moonshine_$texts"
    done
    # One synthesis seed moves Moonshine's CER on the everyday sentences by a point or two, more than the target's
    # margin (tacotron2/RESULTS.md): so they are heard at 3 seeds, each seed's rates and the pooled ones against
    # eSpeak NG's. The first seed is inference.py's default, so its wavs are the everyday sentences' wavs.
    sed -E 's/[.!?]+$//' "$EVERYDAY" | tr '[:upper:]' '[:lower:]' > "$OUTPUT_DIR/everyday_plain.txt"
    echo "the everyday sentences typed plain at 3 synthesis seeds:"
    "$PYTHON" -m scripts.intelligibility_seeds --judge moonshine --espeak-ceiling --tacotron2 "$checkpoint" \
        --vocoder "$vocoder_checkpoint" --texts "$OUTPUT_DIR/everyday_plain.txt" --seeds 1234 1 2 --cpu \
        -o "$OUTPUT_DIR/moonshine_everyday_plain_seeds"
    rm -rf "$OUTPUT_DIR/wavs_everyday_plain"
    ln -s moonshine_everyday_plain_seeds/seed_1234 "$OUTPUT_DIR/wavs_everyday_plain"
else
    echo "Moonshine base (the independent judge) is not installed: pip install -r requirements-judge.txt"
fi
