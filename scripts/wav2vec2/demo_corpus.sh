# The ASR demo corpus that scripts/wav2vec2/demo_asr.sh and demo_pretrain.sh share, and the language model all the
# demos decode with; they source this file.
#   ensure_asr_demo_corpus: build it into DATA_DIR (scripts/data/asr_corpus.py --text open) unless the corpus there
#   was built from the same arguments (its stamp, DATA_DIR/.demo_asr_corpus, says which). Reads PYTHON, DATA_DIR,
#   NUM_UTTERANCES (template sentences), OPEN_UTTERANCES (word runs) and QUICK (1: 2 everyday test sentences).
#   Returns 0 when it built the corpus, 1 when the one in DATA_DIR already fits.
ensure_asr_demo_corpus() {
    local value
    for value in "$NUM_UTTERANCES" "$OPEN_UTTERANCES"; do
        case "$value" in ''|*[!0-9]*) echo "error: NUM_UTTERANCES and OPEN_UTTERANCES must be whole numbers," \
            "got '$NUM_UTTERANCES' and '$OPEN_UTTERANCES'" >&2; exit 2 ;; esac
    done
    local corpus_args="--num-utterances $NUM_UTTERANCES --seed 1234 --text open --open-utterances $OPEN_UTTERANCES"
    if [ "${QUICK:-0}" = 1 ]; then corpus_args+=" --everyday-sentences 2"; fi
    if [ -f "$DATA_DIR/dict.ltr.txt" ] && [ "$(cat "$DATA_DIR/.demo_asr_corpus" 2>/dev/null)" = "$corpus_args" ]; then
        return 1
    fi
    claim_build_folder DATA_DIR "$DATA_DIR" .demo_asr_corpus
    # shellcheck disable=SC2086
    "$PYTHON" -m scripts.data.asr_corpus --output-dir "$DATA_DIR" $corpus_args
    echo "$corpus_args" > "$DATA_DIR/.demo_asr_corpus"
}

# claim_build_folder VARIABLE FOLDER STAMP: a demo is about to build into FOLDER (named by the environment variable
# VARIABLE). It stops with an error if FOLDER holds files without the demo's STAMP file (a corpus built by hand, say),
# which the build would write over; otherwise it marks FOLDER as being built (a STAMP that fits no arguments, so an
# interrupted build is built again, not used).
claim_build_folder() {
    local variable=$1 folder=$2 stamp=$3
    if [ ! -f "$folder/$stamp" ] && [ -d "$folder" ] && [ -n "$(ls -A "$folder")" ]; then
        echo "error: $variable=$folder holds files that no demo built there (it has no $stamp), and building the" \
            "demo's corpus would write over them: name a new or empty folder, or remove this one" >&2
        exit 2
    fi
    mkdir -p "$folder"
    echo "(being built)" > "$folder/$stamp"
}

# ensure_accent_copy SOURCE COPY SHARE VARIANTS [KEEP_VOICES]: the training copy of the corpus in SOURCE in which a
# SHARE of the training utterances are re-spoken with made-up accents and VARIANTS (own or wide) voice variants
# (scripts/wav2vec2/accent_perturbed_corpus.py), the utterances of KEEP_VOICES (space-separated) never, built unless
# COPY was built from the same source and arguments (its stamp, COPY/.accent_copy, says which). The test manifests in
# COPY still point at SOURCE's wavs.
ensure_accent_copy() {
    local source=$1 copy=$2
    local copy_args=(--share "$3" --variants "$4" --seed 1234)
    # shellcheck disable=SC2206
    if [ -n "${5:-}" ]; then copy_args+=(--keep-voices $5); fi
    local stamp
    stamp="$(cat "$source/.demo_asr_corpus" 2>/dev/null) | ${copy_args[*]}"
    if [ -f "$copy/train.tsv" ] && [ "$(cat "$copy/.accent_copy" 2>/dev/null)" = "$stamp" ]; then
        return 0
    fi
    claim_build_folder TRAIN_DATA_DIR "$copy" .accent_copy
    "$PYTHON" -m scripts.wav2vec2.accent_perturbed_corpus "$source" "$copy" "${copy_args[@]}"
    echo "$stamp" > "$copy/.accent_copy"
}

# build_demo_lm TEXT ARPA: the word 2-gram language model every demo decodes with: TEXT (transcripts, one a line)
# and each lexicon word as a sentence of its own, mixed with Google Books' English word pairs at weight 0.5
# (scripts/wav2vec2/build_lm.py). set_lm_flags ARPA [BEAM]: LM_FLAGS, the flags of decoding with it (the beam
# search's, less --decoder beam), as make demo-asr decodes beside greedy decoding and make demo's judge too. The
# English weight, the model's weight 0.75, word score 3 and letters down to a log-probability of -6.5 tried in each
# frame did best on development sentences that no test holds (scripts/wav2vec2/tune_lm.py; wav2vec2/RESULTS.md).
# BEAM (default: the beam search's 100) hypotheses are kept;
# QUICK=1 keeps 8, since a tiny model's near-uniform letters make a beam of 100 over the lexicon take a minute a run.
build_demo_lm() {
    "$PYTHON" -m scripts.wav2vec2.build_lm "$1" "$2" --order 2 --lexicon --english-weight 0.5
}
set_lm_flags() {
    LM_FLAGS=(--lm "$1" --lm-weight 0.75 --word-score 3.0 --min-letter-log-prob -6.5)
    local beam=${2:-}
    if [ -z "$beam" ] && [ "${QUICK:-0}" = 1 ]; then beam=8; fi
    if [ -n "$beam" ]; then LM_FLAGS+=(--beam-size "$beam"); fi
}
