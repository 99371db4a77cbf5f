"""WaveGlow's flags: WaveGlowConfig (the model's constructor arguments) and the training flags. The mel channels, hop
and window come from the shared audio flags (common.arguments.add_audio_args)."""
from __future__ import annotations

import argparse
from dataclasses import dataclass

from common.arguments import (add_dataclass_args, audio_flag, check_after_parsing, check_audio_flags, config_dict,
                              config_from_args, flag)
from common.errors import UserError
from common.training_settings import TrainingSettings


@dataclass
class WaveGlowConfig:
    """WaveGlow's constructor arguments (waveglow/model.py), saved in every checkpoint as model_config."""
    n_mel_channels: int = audio_flag("n_mel_channels")
    flows: int = flag(12, "number of flow steps")
    groups: int = flag(8, "audio samples squeezed into one vector")
    early_every: int = flag(4, "flows between early outputs")
    early_size: int = flag(2, "channels split off at each early output")
    wn_channels: int = flag(512, "channels of the coupling WaveNet (NVIDIA's waveglow256 checkpoint: 256)")
    wn_layers: int = flag(8, "layers of the coupling WaveNet")
    wn_kernel_size: int = flag(3, "kernel of the coupling WaveNet")
    hop_length: int = audio_flag("hop_length")
    win_length: int = audio_flag("win_length")


@dataclass(kw_only=True)
class WaveGlowTrainingSettings(TrainingSettings):
    """train.py -m WaveGlow's own flags, beside the shared ones."""
    sigma: float = flag(1.0, "standard deviation of z in the training loss", group="WaveGlow training")
    segment_length: int = flag(4000, "audio samples per training example (random crop; must be a multiple of "
                                     "--groups)", group="WaveGlow training")


def add_args(parser: argparse.ArgumentParser) -> None:
    """The model's flags (WaveGlowConfig); the others are WaveGlowTrainingSettings'."""
    add_dataclass_args(parser.add_argument_group("WaveGlow architecture"), WaveGlowConfig)
    check_after_parsing(parser, check_audio_flags)  # it is conditioned on mels of these flags
    check_after_parsing(parser, check_segment_length)


def check_segment_length(args: argparse.Namespace) -> None:
    """The training crops squeeze into vectors of --groups samples."""
    if args.segment_length % args.groups != 0:
        raise UserError(f"--segment-length ({args.segment_length}) must be a multiple of --groups ({args.groups})")


def config_from_reference(config: dict) -> dict:
    """NVIDIA's WaveGlow `config` (n_flows, n_group, ..., WN_config) -> model_config's keys. Their upsampler is fixed
    at hop 256 and window 1024, so those stay as given (the audio flags)."""
    wn = config["WN_config"]
    return {"n_mel_channels": config["n_mel_channels"], "flows": config["n_flows"], "groups": config["n_group"],
            "early_every": config["n_early_every"], "early_size": config["n_early_size"],
            "wn_channels": wn["n_channels"], "wn_layers": wn["n_layers"], "wn_kernel_size": wn["kernel_size"]}


def model_config(args: argparse.Namespace) -> dict:
    return config_dict(config_from_args(WaveGlowConfig, args))
