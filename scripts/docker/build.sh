#!/usr/bin/env bash
# Build the training/inference image:  scripts/docker/build.sh [IMAGE_NAME]
set -euo pipefail
cd "$(dirname "$0")/../.."
docker build . --rm -t "${1:-speech-framework}"
