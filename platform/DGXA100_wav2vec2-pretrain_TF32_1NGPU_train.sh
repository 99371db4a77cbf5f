#!/usr/bin/env bash
# DGXA100, wav2vec2-pretrain, TF32, 1 GPU(s). Extra train.py flags may follow; see platform/launch.sh.
exec "$(dirname "$0")/launch.sh" DGXA100 wav2vec2-pretrain TF32 1 "$@"
