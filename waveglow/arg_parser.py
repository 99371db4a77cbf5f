"""WaveGlow's flags. The mel channels, hop and window come from the shared audio flags (common.audio.add_audio_args)."""
from __future__ import annotations

import argparse


def add_args(parser: argparse.ArgumentParser) -> None:
    architecture = parser.add_argument_group("WaveGlow architecture")
    architecture.add_argument("--flows", type=int, default=12, help="number of flow steps")
    architecture.add_argument("--groups", type=int, default=8, help="audio samples squeezed into one vector")
    architecture.add_argument("--early-every", type=int, default=4, help="flows between early outputs")
    architecture.add_argument("--early-size", type=int, default=2, help="channels split off at each early output")
    architecture.add_argument("--wn-kernel-size", type=int, default=3, help="kernel of the coupling WaveNet")
    architecture.add_argument("--wn-channels", type=int, default=512,
                              help="channels of the coupling WaveNet (NVIDIA's waveglow256 checkpoint: 256)")
    architecture.add_argument("--wn-layers", type=int, default=8, help="layers of the coupling WaveNet")

    training = parser.add_argument_group("WaveGlow training")
    training.add_argument("--sigma", type=float, default=1.0, help="standard deviation of z in the training loss")
    training.add_argument("--segment-length", type=int, default=4000,
                          help="audio samples per training example (random crop; must be a multiple of --groups)")


def config_from_reference(config: dict) -> dict:
    """NVIDIA's WaveGlow `config` (n_flows, n_group, ..., WN_config) -> model_config's keys. Their upsampler is fixed
    at hop 256 and window 1024, so those stay as given (the audio flags)."""
    wn = config["WN_config"]
    return {"n_mel_channels": config["n_mel_channels"], "flows": config["n_flows"], "groups": config["n_group"],
            "early_every": config["n_early_every"], "early_size": config["n_early_size"],
            "wn_channels": wn["n_channels"], "wn_layers": wn["n_layers"], "wn_kernel_size": wn["kernel_size"]}


def model_config(args: argparse.Namespace) -> dict:
    """WaveGlow's constructor arguments (saved in every checkpoint)."""
    return {
        "n_mel_channels": args.n_mel_channels,
        "flows": args.flows,
        "groups": args.groups,
        "early_every": args.early_every,
        "early_size": args.early_size,
        "wn_channels": args.wn_channels,
        "wn_layers": args.wn_layers,
        "wn_kernel_size": args.wn_kernel_size,
        "hop_length": args.hop_length,
        "win_length": args.win_length,
    }
