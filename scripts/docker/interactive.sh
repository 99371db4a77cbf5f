#!/usr/bin/env bash
# Open a shell in the image with this checkout mounted, DATA_DIR (if given) at data/LJSpeech-1.1 where the scripts
# look for LJSpeech, and all GPUs visible:
#   DATA_DIR=/path/to/LJSpeech-1.1 scripts/docker/interactive.sh [IMAGE_NAME]
set -euo pipefail
cd "$(dirname "$0")/../.."
data_mount=()
[ -n "${DATA_DIR:-}" ] && data_mount=(-v "$(realpath "$DATA_DIR")":/workspace/speech/data/LJSpeech-1.1)
docker run --gpus all --shm-size=1g --ulimit memlock=-1 --ulimit stack=67108864 --ipc=host -it --rm \
    -v "$PWD":/workspace/speech "${data_mount[@]}" -w /workspace/speech "${1:-speech-framework}" bash
