#!/usr/bin/env bash
# nv-wavenet inference speed: every kernel variant and precision on a GPU, and the CPU incremental path.
#   scripts/nvwavenet/benchmark_nvwavenet.sh [--output results.json] [--models medium large] [...]  (see --help)
# On a machine without CUDA only the CPU path is measured; the JSON records why.
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/project_python.sh
exec "$PYTHON" -m nvwavenet.benchmark "$@"
