"""The mel inverter's flags: MelInverterConfig (the model's constructor arguments) and its data flags. The mel
channels and FFT size come from the shared audio flags (common.arguments.add_audio_args)."""
from __future__ import annotations

import argparse
from dataclasses import dataclass

from common.arguments import (add_dataclass_args, audio_flag, check_after_parsing, check_audio_flags, config_dict,
                              config_from_args, flag, not_a_flag, positive_int)
from common.mel_audio_data import MelAudioDataSettings
from common.training_settings import default_of


@dataclass
class MelInverterConfig:
    """MelInverter's constructor arguments (melinverter/model.py), saved in every checkpoint as model_config."""
    n_mel_channels: int = audio_flag("n_mel_channels")
    n_fft_bins: int = not_a_flag("--filter-length (audio flags): filter_length // 2 + 1", 513)
    channels: int = flag(128, "channels of the convolutional layers", type=positive_int)
    kernel_size: int = flag(5, "frames each convolution sees (odd)", type=positive_int)
    n_blocks: int = flag(3, "residual blocks", type=positive_int)


@dataclass(kw_only=True)
class MelInverterTrainingSettings(MelAudioDataSettings):
    """train.py -m MelInverter's flags: the shared ones and the data's."""
    # 64 frames a crop: the loss leaves out the 2 frames at each end whose FFT window reaches past the crop.
    segment_length: int = default_of(MelAudioDataSettings, "segment_length", 16384)


def add_args(parser: argparse.ArgumentParser) -> None:
    """The model's flags (MelInverterConfig); the others are MelInverterTrainingSettings'."""
    add_dataclass_args(parser.add_argument_group("mel inverter architecture"), MelInverterConfig)
    check_after_parsing(parser, check_audio_flags)  # it maps mels of these flags to their STFT


def model_config(args: argparse.Namespace) -> dict:
    return config_dict(config_from_args(MelInverterConfig, args, n_fft_bins=args.filter_length // 2 + 1))
