#!/usr/bin/env bash
# Text to speech trained on a GPU for a fixed time, and how intelligible it is: build a larger eSpeak NG corpus, train
# Tacotron 2 (NVIDIA's preset, configs/tacotron2_nvidia.json, --amp) and HiFi-GAN (NVIDIA's v1 recipe,
# configs/hifigan_nvidia.json, --amp) side by side on the one GPU, each for a fixed wall-clock time (then SIGTERM: the
# trainer stops after the step in flight and writes its checkpoint), fine-tune HiFi-GAN on Tacotron 2's
# teacher-forced mels, synthesize the corpus's held-out test sentences, and score them with a recognizer.
#   ASR=recognizer.pt scripts/tacotron2/gpu_tts_run.sh [--stage N] [--stop-stage N]
#       stage 1: the corpus (scripts/data/synthetic_corpus.py, UTTERANCES utterances) into WORK_DIR/corpus
#       stage 2: Tacotron 2 for TACOTRON2_SECONDS and HiFi-GAN for HIFIGAN_SECONDS, at the same time (SIDE_BY_SIDE=0:
#                one after the other, so Tacotron 2 has the GPU to itself)
#       stage 3: teacher-forced mels of the training set (scripts/extract_gta_mels.sh), then HiFi-GAN
#                fine-tuned on them for FINETUNE_SECONDS
#       stage 4: the first TEST_SENTENCES test sentences and phrases/phrase.txt through Tacotron 2 + Griffin-Lim,
#                + HiFi-GAN and + the fine-tuned HiFi-GAN; CER and WER of each through scripts/intelligibility.py
#                (--asr $ASR, greedy), the eSpeak NG ceiling, and the training curves: OUTPUT_DIR/report.json
#                (scripts/tacotron2/gpu_tts_report.py)
#   Environment: ASR (required for stage 4), UTTERANCES (3000), TACOTRON2_SECONDS (300), HIFIGAN_SECONDS (300; 0:
#   Tacotron 2 alone, no HiFi-GAN, no stage 3, Griffin-Lim only), FINETUNE_SECONDS (90), TEST_SENTENCES (25), WORK_DIR
#   (/tmp/gpu_tts: corpus and checkpoints), OUTPUT_DIR (output/gpu_tts: the wavs, scores, logs and report), WORKERS (6
#   data-loader workers per training), PRECISION_FLAGS (--amp), EXTRA_FLAGS (given to every train.py and inference.py:
#   "--cpu" for a dry run on a CPU), TACOTRON2_CONFIG (configs/tacotron2_nvidia.json; or configs/tacotron2_demo.json,
#   the demo's small model), TACOTRON2_FLAGS (more train.py flags for Tacotron 2, e.g. "--guided-attn-weight 2.0"),
#   TACOTRON2_CHECKPOINT (a Tacotron 2 trained elsewhere, e.g. `make demo`'s: not trained here; HiFi-GAN is),
#   SIDE_BY_SIDE (1), PYTHON. Measured: tacotron2/RESULTS.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/project_python.sh
die() { echo "gpu_tts_run.sh: error: $*" >&2; exit 2; }
usage() { sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; }
source scripts/stage_flags.sh
read_stage_flags 1 4 "$@"
[ ${#train_flags[@]} -eq 0 ] || die "unknown arguments: ${train_flags[*]} (only --stage and --stop-stage)"

WORK_DIR=${WORK_DIR:-/tmp/gpu_tts}
OUTPUT_DIR=${OUTPUT_DIR:-output/gpu_tts}
CORPUS=$WORK_DIR/corpus
LISTS=$CORPUS/filelists
WORKERS=${WORKERS:-6}
mkdir -p "$OUTPUT_DIR"
read -r -a precision_flags <<<"${PRECISION_FLAGS---amp}"
read -r -a extra_flags <<<"${EXTRA_FLAGS:-}"
read -r -a tacotron2_flags <<<"${TACOTRON2_FLAGS:-}"
HIFIGAN_SECONDS=${HIFIGAN_SECONDS:-300}
case "$HIFIGAN_SECONDS" in ''|*[!0-9]*) die "HIFIGAN_SECONDS must be a whole number of seconds, got '$HIFIGAN_SECONDS'" ;; esac
with_hifigan() { [ "$HIFIGAN_SECONDS" -gt 0 ]; }
# A Tacotron 2 trained elsewhere (TACOTRON2_CHECKPOINT) is not trained again: the GPU's time goes to HiFi-GAN.
TACOTRON2=${TACOTRON2_CHECKPOINT:-$WORK_DIR/tacotron2/checkpoint_Tacotron2_last.pt}
train_tacotron2() { [ -z "${TACOTRON2_CHECKPOINT:-}" ]; }
if ! train_tacotron2; then
    [ -f "$TACOTRON2_CHECKPOINT" ] || die "TACOTRON2_CHECKPOINT=$TACOTRON2_CHECKPOINT: no such file"
    with_hifigan || die "TACOTRON2_CHECKPOINT with HIFIGAN_SECONDS=0 leaves nothing to train"
fi
data_flags=(-d "$CORPUS" --training-files "$LISTS/synthetic_audio_text_train.txt"
            --validation-files "$LISTS/synthetic_audio_text_val.txt" --num-workers "$WORKERS" --quiet
            ${precision_flags[@]+"${precision_flags[@]}"} ${extra_flags[@]+"${extra_flags[@]}"})

# train.py under a wall-clock limit: SIGTERM ends it with a checkpoint (exit 124 from timeout, or the trainer's own
# preemption status), which is how these runs are meant to end.
# Each run is timed from scratch: an earlier run's folder (a rerun in the same WORK_DIR) goes first, since train.py
# refuses to write over its checkpoints.
train_for() {
    local seconds=$1 log=$2 output=$3
    shift 3
    local status=0
    rm -rf "$output"
    timeout -s TERM -k 120 "$seconds" "$PYTHON" train.py -o "$output" "$@" >"$log" 2>&1 || status=$?
    case $status in 0|124) ;; *) grep -q "stopped by SIG" "$log" || { tail -n 20 "$log"; return "$status"; } ;; esac
}

if runs 1; then
    echo "== stage 1: a ${UTTERANCES:-3000}-utterance corpus"
    "$PYTHON" -m scripts.data.synthetic_corpus --output-dir "$CORPUS" --filelists-dir "$LISTS" \
        --num-utterances "${UTTERANCES:-3000}"
fi

if runs 2; then
    status=0
    tacotron2_job=
    if train_tacotron2; then
        echo "== stage 2: Tacotron 2 for ${TACOTRON2_SECONDS:-300} s$(with_hifigan && echo " and HiFi-GAN for" \
             "$HIFIGAN_SECONDS s, $([ "${SIDE_BY_SIDE:-1}" = 1 ] && echo "side by side" || echo "one after the other")")"
        train_for "${TACOTRON2_SECONDS:-300}" "$OUTPUT_DIR/tacotron2.log" "$WORK_DIR/tacotron2" -m Tacotron2 \
            --config-file "${TACOTRON2_CONFIG:-configs/tacotron2_nvidia.json}" --epochs 100000 \
            "${data_flags[@]}" ${tacotron2_flags[@]+"${tacotron2_flags[@]}"} &
        tacotron2_job=$!
        if [ "${SIDE_BY_SIDE:-1}" != 1 ] || ! with_hifigan; then wait $tacotron2_job || status=1; tacotron2_job=; fi
    else
        echo "== stage 2: HiFi-GAN alone for $HIFIGAN_SECONDS s (Tacotron 2: $TACOTRON2)"
    fi
    if with_hifigan; then
        train_for "$HIFIGAN_SECONDS" "$OUTPUT_DIR/hifigan.log" "$WORK_DIR/hifigan" -m HiFiGAN \
            --config-file configs/hifigan_nvidia.json --epochs 100000 \
            --val-interval-updates 1000000 "${data_flags[@]}" || status=1
        cp "$WORK_DIR/hifigan/nvlog.json" "$OUTPUT_DIR/hifigan_nvlog.json"
    fi
    if [ -n "$tacotron2_job" ]; then wait $tacotron2_job || status=1; fi
    if train_tacotron2; then cp "$WORK_DIR/tacotron2/nvlog.json" "$OUTPUT_DIR/tacotron2_nvlog.json"; fi
    [ $status -eq 0 ] || die "a training failed (logs in $OUTPUT_DIR)"
fi

if runs 3 && with_hifigan; then
    echo "== stage 3: teacher-forced mels, then HiFi-GAN fine-tuned on them for ${FINETUNE_SECONDS:-90} s"
    bash scripts/extract_gta_mels.sh --synthetic --tacotron2 "$TACOTRON2" \
        --data-dir "$CORPUS" --filelists-dir "$LISTS" --output-dir "$WORK_DIR/mels-gta" -bs 32 --overwrite ${extra_flags[@]+"${extra_flags[@]}"} \
        >"$OUTPUT_DIR/extract_gta_mels.log" 2>&1 || { tail -n 20 "$OUTPUT_DIR/extract_gta_mels.log"; exit 1; }
    train_for "${FINETUNE_SECONDS:-90}" "$OUTPUT_DIR/hifigan_ft.log" "$WORK_DIR/hifigan_ft" -m HiFiGAN \
        --config-file configs/hifigan_nvidia.json --epochs 100000 \
        --val-interval-updates 1000000 --fine-tune-from "$WORK_DIR/hifigan/checkpoint_HiFiGAN_last.pt" \
        --input-mels-dir "$WORK_DIR/mels-gta" -lr 8.17e-5 --fine-tune-lr-factor 3 "${data_flags[@]}"
    cp "$WORK_DIR/hifigan_ft/nvlog.json" "$OUTPUT_DIR/hifigan_ft_nvlog.json"
fi

if runs 4; then
    [ -n "${ASR:-}" ] || die "set ASR to the recognizer's checkpoint (a fine-tuned wav2vec 2.0)"
    vocoders=(griffin_lim)
    if with_hifigan; then vocoders+=(hifigan hifigan_ft); fi
    echo "== stage 4: the first ${TEST_SENTENCES:-25} test sentences and phrases/phrase.txt through" \
         "${vocoders[*]}, scored by $ASR"
    head -n "${TEST_SENTENCES:-25}" "$LISTS/synthetic_audio_text_test.txt" | cut -d'|' -f2 >"$OUTPUT_DIR/test_sentences.txt"
    cp phrases/phrase.txt "$OUTPUT_DIR/phrases.txt"
    declare -A vocoder_flags=([griffin_lim]="" [hifigan]="--hifigan $WORK_DIR/hifigan/checkpoint_HiFiGAN_last.pt"
                              [hifigan_ft]="--hifigan $WORK_DIR/hifigan_ft/checkpoint_HiFiGAN_last.pt")
    for texts in test_sentences phrases; do
        for vocoder in "${vocoders[@]}"; do
            # shellcheck disable=SC2086  # the flags split into flag and path on purpose
            "$PYTHON" inference.py -i "$OUTPUT_DIR/$texts.txt" -o "$OUTPUT_DIR/wavs_${texts}_$vocoder" --quiet \
                --tacotron2 "$TACOTRON2" ${vocoder_flags[$vocoder]} -bs 25 \
                ${precision_flags[@]+"${precision_flags[@]}"} ${extra_flags[@]+"${extra_flags[@]}"}
            extra=()
            [ "$vocoder" = griffin_lim ] && extra=(--espeak-ceiling)  # once for each set of texts is enough
            "$PYTHON" -m scripts.intelligibility --asr "$ASR" --wavs "$OUTPUT_DIR/wavs_${texts}_$vocoder" --quiet \
                --texts "$OUTPUT_DIR/$texts.txt" -o "$OUTPUT_DIR/intelligibility_${texts}_$vocoder" "${extra[@]}"
        done
    done
    trainings=()
    if train_tacotron2; then trainings+=(tacotron2); fi
    if with_hifigan; then trainings+=(hifigan hifigan_ft); fi
    "$PYTHON" -m scripts.tacotron2.gpu_tts_report "$OUTPUT_DIR" "${trainings[*]}" "${vocoders[@]}"
fi
