"""`inference.py -m HiFiGAN`: mel files to wavs with a HiFi-GAN generator (common/mel_to_wav.py).

    python inference.py -m HiFiGAN -i mels/ more.npy -o out/wavs --hifigan H.pt [--ema] [-d 0.005] [--chunk-frames 64]

-i takes log mels of shape (n_mel_channels, frames) as .pt tensors or .npy arrays, or folders of them, and writes
<file stem><suffix>.wav for each, one file at a time. They are taken to be common/audio.py's mels
(--input-mel-convention jik876 for mels computed as jik876's and NVIDIA's HiFi-GAN training computes them). Text to
wav: inference.py --tacotron2 T --hifigan H (hifigan/vocoder.py).
"""
from __future__ import annotations

import argparse

from common.mel_to_wav import mel_to_wav_part
from hifigan import export
from hifigan.vocoder import MEL_CONVENTIONS, VOCODER


def add_input_args(group: argparse._ArgumentGroup) -> None:
    group.add_argument("--input-mel-convention", choices=MEL_CONVENTIONS, default=None,
                       help="how the input mels were computed (default: tacotron, common/audio.py's mel)")


def logged(args: argparse.Namespace) -> dict:
    return {"hifigan": args.hifigan, "ema": args.ema, "chunk_frames": args.chunk_frames,
            "denoising_strength": args.denoising_strength}


INFERENCE = mel_to_wav_part(VOCODER, add_input_args=add_input_args, logged=logged,
                            export_onnx=export.export_checkpoint, add_export_args=export.add_export_args)
