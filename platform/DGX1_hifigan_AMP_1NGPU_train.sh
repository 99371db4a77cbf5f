#!/usr/bin/env bash
# DGX1, hifigan, AMP, 1 GPU(s). Extra train.py flags may follow; see platform/launch.sh.
exec "$(dirname "$0")/launch.sh" DGX1 hifigan AMP 1 "$@"
