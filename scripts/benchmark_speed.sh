#!/usr/bin/env bash
# Today's eager path against the fast paths (--fast-decoder, --compile), side by side, for Tacotron 2 and WaveGlow:
# a training step (fp32 and bf16), Tacotron 2 inference alone, WaveGlow-256 inference alone, text to wav (fp32 and
# bf16), with the compile time apart. Writes the rows as JSON to $OUTPUT_DIR/benchmark_speed.json too.
#   scripts/benchmark_speed.sh                       # everything at NVIDIA's sizes on the CPU (tens of minutes)
#   scripts/benchmark_speed.sh --quick               # tiny models: a smoke test of the script (seconds)
#   scripts/benchmark_speed.sh --targets tacotron2-train --threads 2 --profile tacotron2-train
# Flags go to scripts/benchmark_speed.py (--help lists them).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/project_python.sh
OUT=${OUTPUT_DIR:-output/benchmark}
mkdir -p "$OUT"
exec "$PYTHON" -m scripts.benchmark_speed --json "$OUT/benchmark_speed.json" "$@"
