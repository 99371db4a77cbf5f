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
#       stage 3: teacher-forced mels of the training set (scripts/hifigan/extract_gta_mels.sh), then HiFi-GAN
#                fine-tuned on them for FINETUNE_SECONDS
#       stage 4: the first TEST_SENTENCES test sentences through Tacotron 2 + Griffin-Lim, + HiFi-GAN and + the
#                fine-tuned HiFi-GAN; CER and WER of each through scripts/intelligibility.py (--asr $ASR), the
#                eSpeak NG ceiling, and the training curves: OUTPUT_DIR/report.json
#   Environment: ASR (required for stage 4), UTTERANCES (3000), TACOTRON2_SECONDS (300), HIFIGAN_SECONDS (300),
#   FINETUNE_SECONDS (90), TEST_SENTENCES (25), WORK_DIR (/tmp/gpu_tts: corpus and checkpoints), OUTPUT_DIR
#   (output/gpu_tts: the wavs, scores, logs and report), WORKERS (6 data-loader workers per training), PRECISION_FLAGS
#   (--amp), EXTRA_FLAGS (given to every train.py and inference.py: "--cpu" for a dry run on a CPU), TACOTRON2_CONFIG
#   (configs/tacotron2_nvidia.json; or configs/tacotron2_demo.json, the demo's small model), SIDE_BY_SIDE
#   (1), PYTHON. Measured, and what 4.5 minutes side by side fell short of: tacotron2/RESULTS.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/project_python.sh
die() { echo "gpu_tts_run.sh: error: $*" >&2; exit 2; }
usage() { sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; }
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
data_flags=(-d "$CORPUS" --training-files "$LISTS/synthetic_audio_text_train.txt"
            --validation-files "$LISTS/synthetic_audio_text_val.txt" --num-workers "$WORKERS" --quiet
            ${precision_flags[@]+"${precision_flags[@]}"} ${extra_flags[@]+"${extra_flags[@]}"})

# train.py under a wall-clock limit: SIGTERM ends it with a checkpoint (exit 124 from timeout, or the trainer's own
# preemption status), which is how these runs are meant to end.
train_for() {
    local seconds=$1 log=$2
    shift 2
    local status=0
    timeout -s TERM -k 120 "$seconds" "$PYTHON" train.py "$@" >"$log" 2>&1 || status=$?
    case $status in 0|124) ;; *) grep -q "stopped by SIG" "$log" || { tail -n 20 "$log"; return "$status"; } ;; esac
}

if runs 1; then
    echo "== stage 1: a ${UTTERANCES:-3000}-utterance corpus"
    "$PYTHON" -m scripts.data.synthetic_corpus --output-dir "$CORPUS" --filelists-dir "$LISTS" \
        --num-utterances "${UTTERANCES:-3000}"
fi

if runs 2; then
    echo "== stage 2: Tacotron 2 for ${TACOTRON2_SECONDS:-300} s and HiFi-GAN for ${HIFIGAN_SECONDS:-300} s" \
         "$([ "${SIDE_BY_SIDE:-1}" = 1 ] && echo "side by side" || echo "one after the other")"
    train_for "${TACOTRON2_SECONDS:-300}" "$OUTPUT_DIR/tacotron2.log" -m Tacotron2 \
        --config-file "${TACOTRON2_CONFIG:-configs/tacotron2_nvidia.json}" -o "$WORK_DIR/tacotron2" --epochs 100000 \
        "${data_flags[@]}" &
    tacotron2=$!
    status=0
    if [ "${SIDE_BY_SIDE:-1}" != 1 ]; then wait $tacotron2 || status=1; fi
    train_for "${HIFIGAN_SECONDS:-300}" "$OUTPUT_DIR/hifigan.log" -m HiFiGAN \
        --config-file configs/hifigan_nvidia.json -o "$WORK_DIR/hifigan" --epochs 100000 \
        --val-interval-updates 1000000 "${data_flags[@]}" &
    hifigan=$!
    if [ "${SIDE_BY_SIDE:-1}" = 1 ]; then wait $tacotron2 || status=1; fi
    wait $hifigan || status=1
    cp "$WORK_DIR/tacotron2/nvlog.json" "$OUTPUT_DIR/tacotron2_nvlog.json"
    cp "$WORK_DIR/hifigan/nvlog.json" "$OUTPUT_DIR/hifigan_nvlog.json"
    [ $status -eq 0 ] || die "a training failed (logs in $OUTPUT_DIR)"
fi

if runs 3; then
    echo "== stage 3: teacher-forced mels, then HiFi-GAN fine-tuned on them for ${FINETUNE_SECONDS:-90} s"
    bash scripts/hifigan/extract_gta_mels.sh --synthetic --tacotron2 "$WORK_DIR/tacotron2/checkpoint_Tacotron2_last.pt" \
        --data-dir "$CORPUS" --filelists-dir "$LISTS" --output-dir "$WORK_DIR/mels-gta" -bs 32 --overwrite ${extra_flags[@]+"${extra_flags[@]}"} \
        >"$OUTPUT_DIR/extract_gta_mels.log" 2>&1 || { tail -n 20 "$OUTPUT_DIR/extract_gta_mels.log"; exit 1; }
    train_for "${FINETUNE_SECONDS:-90}" "$OUTPUT_DIR/hifigan_ft.log" -m HiFiGAN \
        --config-file configs/hifigan_nvidia.json -o "$WORK_DIR/hifigan_ft" --epochs 100000 \
        --val-interval-updates 1000000 --fine-tune-from "$WORK_DIR/hifigan/checkpoint_HiFiGAN_last.pt" \
        --input-mels-dir "$WORK_DIR/mels-gta" -lr 8.17e-5 --fine-tune-lr-factor 3 "${data_flags[@]}"
    cp "$WORK_DIR/hifigan_ft/nvlog.json" "$OUTPUT_DIR/hifigan_ft_nvlog.json"
fi

if runs 4; then
    [ -n "${ASR:-}" ] || die "set ASR to the recognizer's checkpoint (a fine-tuned wav2vec 2.0)"
    echo "== stage 4: the first ${TEST_SENTENCES:-25} test sentences, three vocoders, scored by $ASR"
    head -n "${TEST_SENTENCES:-25}" "$LISTS/synthetic_audio_text_test.txt" | cut -d'|' -f2 >"$OUTPUT_DIR/test_sentences.txt"
    tacotron2="$WORK_DIR/tacotron2/checkpoint_Tacotron2_last.pt"
    declare -A vocoder_flags=([griffin_lim]="" [hifigan]="--hifigan $WORK_DIR/hifigan/checkpoint_HiFiGAN_last.pt"
                              [hifigan_ft]="--hifigan $WORK_DIR/hifigan_ft/checkpoint_HiFiGAN_last.pt")
    for vocoder in griffin_lim hifigan hifigan_ft; do
        # shellcheck disable=SC2086  # the flags split into flag and path on purpose
        "$PYTHON" inference.py -i "$OUTPUT_DIR/test_sentences.txt" -o "$OUTPUT_DIR/wavs_$vocoder" --quiet \
            --tacotron2 "$tacotron2" ${vocoder_flags[$vocoder]} -bs 25 \
            ${precision_flags[@]+"${precision_flags[@]}"} ${extra_flags[@]+"${extra_flags[@]}"}
        extra=()
        [ "$vocoder" = griffin_lim ] && extra=(--espeak-ceiling)  # once is enough
        "$PYTHON" -m scripts.intelligibility --asr "$ASR" --wavs "$OUTPUT_DIR/wavs_$vocoder" --quiet \
            --texts "$OUTPUT_DIR/test_sentences.txt" -o "$OUTPUT_DIR/intelligibility_$vocoder" "${extra[@]}"
    done
    "$PYTHON" - "$OUTPUT_DIR" <<'EOF'
import json, sys
from pathlib import Path
from common.logger import read_dllogger_file
out = Path(sys.argv[1])
def curve(name, points=12):
    losses = [(r["step"], r["data"]["train_loss"]) for r in read_dllogger_file(out / f"{name}_nvlog.json")
              if isinstance(r["step"], list) and len(r["step"]) == 2 and "train_loss" in r["data"]]
    every = max(1, len(losses) // points)
    return {"updates": len(losses), "train_loss": [[i + 1, round(loss, 4)] for i, (_, loss) in
                                                   enumerate(losses) if i % every == 0 or i == len(losses) - 1]}
report = {name: curve(name) for name in ("tacotron2", "hifigan", "hifigan_ft")}
scores = {vocoder: json.loads((out / f"intelligibility_{vocoder}" / "intelligibility.json").read_text())
          for vocoder in ("griffin_lim", "hifigan", "hifigan_ft")}
report["cer"] = {vocoder: round(result["synthesized"]["cer"], 2) for vocoder, result in scores.items()}
report["wer"] = {vocoder: round(result["synthesized"]["wer"], 2) for vocoder, result in scores.items()}
report["cer"]["espeak_ceiling"] = round(scores["griffin_lim"]["espeak"]["cer"], 2)
(out / "report.json").write_text(json.dumps(report, indent=1))
for name in ("tacotron2", "hifigan", "hifigan_ft"):
    print(f"{name}: {report[name]['updates']} updates, loss {report[name]['train_loss'][0][1]} -> "
          f"{report[name]['train_loss'][-1][1]}")
print("CER %:", report["cer"])
print("WER %:", report["wer"])
EOF
fi
