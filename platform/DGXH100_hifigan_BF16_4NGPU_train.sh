#!/usr/bin/env bash
# DGXH100, hifigan, BF16, 4 GPU(s). Extra train.py flags may follow; see platform/launch.sh.
exec "$(dirname "$0")/launch.sh" DGXH100 hifigan BF16 4 "$@"
