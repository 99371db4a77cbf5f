"""WaveNet's flags: WaveNetConfig (the model's constructor arguments) and the training flags. The mel channels and
hop come from the shared audio flags (common.arguments.add_audio_args)."""
from __future__ import annotations

import argparse
from dataclasses import dataclass

from common.arguments import (add_dataclass_args, audio_flag, check_after_parsing, check_audio_flags, config_dict,
                              config_from_args, flag)
from common.training_settings import TrainingSettings
from nvwavenet.model import UPSAMPLING_MODES


@dataclass
class WaveNetConfig:
    """WaveNet's constructor arguments (nvwavenet/model.py), saved in every checkpoint as model_config."""
    n_mel_channels: int = audio_flag("n_mel_channels")
    hop_length: int = audio_flag("hop_length")
    residual_channels: int = flag(64, "R: channels of the residual stack")
    skip_channels: int = flag(256, "S: channels of the skip sum")
    out_channels: int = flag(256, "A: mu-law classes, which is also the width of the output stack",
                             aliases=["--mu-quantization"])
    n_layers: int = flag(20, "L: gated residual layers")
    max_dilation: int = flag(512, "dilations double from 1 to this (a power of two), then start again at 1")
    upsampling: str = flag("transposed-conv", "mel to sample rate: a learned transposed conv (stride = hop) or "
                                              "repetition", choices=UPSAMPLING_MODES)
    upsample_window: int | None = flag(None, "kernel of the transposed conv in samples (default: 4 x --hop-length)")
    embedding_tanh: bool = flag(True, "tanh on the sum of the two sample embeddings (the kernels' tanhEmbed)")


@dataclass(kw_only=True)
class WaveNetTrainingSettings(TrainingSettings):
    """train.py -m WaveNet's own flag, beside the shared ones."""
    segment_length: int = flag(16384, "audio samples per training crop (a multiple of --hop-length)",
                               group="WaveNet training")


def add_args(parser: argparse.ArgumentParser) -> None:
    """The model's flags (WaveNetConfig); the other is WaveNetTrainingSettings'."""
    add_dataclass_args(parser.add_argument_group("WaveNet architecture"), WaveNetConfig)
    check_after_parsing(parser, check_audio_flags)  # it is conditioned on mels of these flags


def model_config(args: argparse.Namespace) -> dict:
    return config_dict(config_from_args(WaveNetConfig, args))
