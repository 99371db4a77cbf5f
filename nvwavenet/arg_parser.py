"""WaveNet's flags. The mel channels and hop come from the shared audio flags (common.audio.add_audio_args)."""
from __future__ import annotations

import argparse

from nvwavenet.model import UPSAMPLING_MODES


def add_args(parser: argparse.ArgumentParser) -> None:
    architecture = parser.add_argument_group("WaveNet architecture")
    architecture.add_argument("--residual-channels", type=int, default=64, help="R: channels of the residual stack")
    architecture.add_argument("--skip-channels", type=int, default=256, help="S: channels of the skip sum")
    architecture.add_argument("--out-channels", "--mu-quantization", dest="out_channels", type=int, default=256,
                              help="A: mu-law classes, which is also the width of the output stack")
    architecture.add_argument("--n-layers", type=int, default=20, help="L: gated residual layers")
    architecture.add_argument("--max-dilation", type=int, default=512,
                              help="dilations double from 1 to this (a power of two), then start again at 1")
    architecture.add_argument("--upsampling", choices=UPSAMPLING_MODES, default="transposed-conv",
                              help="mel to sample rate: a learned transposed conv (stride = hop) or repetition")
    architecture.add_argument("--upsample-window", type=int, default=None,
                              help="kernel of the transposed conv in samples (default: 4 x --hop-length)")
    architecture.add_argument("--embedding-tanh", action=argparse.BooleanOptionalAction, default=True,
                              help="tanh on the sum of the two sample embeddings (the kernels' tanhEmbed)")

    training = parser.add_argument_group("WaveNet training")
    training.add_argument("--segment-length", type=int, default=16384,
                          help="audio samples per training crop (a multiple of --hop-length)")


def model_config(args: argparse.Namespace) -> dict:
    """WaveNet's constructor arguments (saved in every checkpoint)."""
    return {
        "n_mel_channels": args.n_mel_channels,
        "hop_length": args.hop_length,
        "residual_channels": args.residual_channels,
        "skip_channels": args.skip_channels,
        "out_channels": args.out_channels,
        "n_layers": args.n_layers,
        "max_dilation": args.max_dilation,
        "upsampling": args.upsampling,
        "upsample_window": args.upsample_window,
        "embedding_tanh": args.embedding_tanh,
    }
