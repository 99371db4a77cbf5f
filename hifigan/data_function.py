"""HiFi-GAN's data flags. Its items (hop-aligned crops and their input mels, whole utterances for validation) are
common/mel_audio_data.py's, shared with the mel inverter; the mel its loss compares is computed from the audio in
hifigan/loss_function.py."""
from __future__ import annotations

import argparse

from common import mel_audio_data


def add_data_args(parser: argparse.ArgumentParser) -> None:
    group = mel_audio_data.add_data_args(parser, "HiFi-GAN", default_segment_length=8192)
    group.add_argument("--mel-fmax-loss", type=float, default=None,
                       help="top of the mel filterbank of the loss's mel (default: sampling rate / 2)")
