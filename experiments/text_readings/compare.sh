#!/usr/bin/env bash
# What reading numbers and symbols as words is worth to a listener. The model of `make demo` speaks sentences.txt
# (20 everyday lines with times, fractions, decades, degrees, signs, an ellipsis and an em dash, typed plain) twice at
# each synthesis seed: through this checkout's text front-end, and through BASE's (NVIDIA's readings, before these).
# Moonshine base, which nobody here trained, hears both, scored against the same references: the words a person
# reads out (this checkout's reading), beside eSpeak NG saying them.
#
# SENTENCES is another such file: sentences_units_dates.txt holds units, dates, telephone numbers, ranges, "x" and
# a time's am and pm, against BASE 6633553 (the readings before those).
#
#   bash experiments/text_readings/compare.sh [DEMO_OUTPUT (output/demo)] [BASE (2abd3bd)] [SENTENCES (sentences.txt)]
set -euo pipefail
cd "$(dirname "$0")/../.."
DEMO=$(realpath "${1:-output/demo}")
BASE=${2:-2abd3bd}
SEEDS=(1234 1 2)
PYTHON=$(realpath -s "${PYTHON:-.venv/bin/python}")  # -s: a venv's python is a link
TEXTS=$(realpath "${3:-experiments/text_readings/sentences.txt}")
OUT=$DEMO/text_readings/$(basename "$TEXTS" .txt)
tacotron2=(--tacotron2 "$DEMO/checkpoint_Tacotron2_last.pt" --melinverter "$DEMO/melinverter/checkpoint_MelInverter_last.pt")

base_tree=$(mktemp -d)
git worktree add --detach "$base_tree" "$BASE" > /dev/null
trap 'git worktree remove --force "$base_tree"' EXIT

for seed in "${SEEDS[@]}"; do
    for side in current base; do
        tree=.
        [ "$side" = base ] && tree=$base_tree
        (cd "$tree" && "$PYTHON" inference.py -i "$TEXTS" -o "$OUT/$side/seed_$seed" --cpu --quiet --seed "$seed" \
            "${tacotron2[@]}")
        ceiling=()
        [ "$side.$seed" = current.1234 ] && ceiling=(--espeak-ceiling)
        "$PYTHON" -m scripts.intelligibility --judge moonshine --wavs "$OUT/$side/seed_$seed" --texts "$TEXTS" --quiet \
            ${ceiling[@]+"${ceiling[@]}"} -o "$OUT/judged_${side}_$seed"
    done
done

"$PYTHON" - "$OUT" "${SEEDS[@]}" <<'EOF'
# Pooled over the seeds: the edits summed, divided by the references' letters and words.
import json, sys
from pathlib import Path

out, seeds = Path(sys.argv[1]), sys.argv[2:]
reports = {side: [json.loads((out / f"judged_{side}_{seed}" / "intelligibility.json").read_text()) for seed in seeds]
           for side in ("current", "base")}
espeak = reports["current"][0]["espeak"]
print(f"eSpeak NG: CER {espeak['cer']:.2f} %, WER {espeak['wer']:.2f} %")
for side, runs in reports.items():
    sums = {key: sum(run["synthesized"][key] for run in runs) for key in ("char_errors", "chars", "word_errors", "words")}
    cer, wer = 100 * sums["char_errors"] / sums["chars"], 100 * sums["word_errors"] / sums["words"]
    by_seed = ", ".join(f"{run['synthesized']['cer']:.2f}" for run in runs)
    print(f"{side} front-end: CER {cer:.2f} % ({cer / espeak['cer']:.2f}x eSpeak NG), WER {wer:.2f} %; by seed {by_seed}")
for number, (now, before) in enumerate(zip(reports["current"][0]["synthesized"]["files"],
                                           reports["base"][0]["synthesized"]["files"]), 1):
    print(f"{number:2d} {now['text']!r}\n   now:    {now['written']!r}\n   before: {before['written']!r}")
EOF
