"""The check of HiFi-GAN's data flags.

Its items (hop-aligned crops and their input mels, whole utterances for validation) are
common/mel_audio_data.py's, shared with the mel inverter; the mel its loss compares is computed from the audio in
hifigan/loss_function.py."""
from __future__ import annotations

import argparse

from common.arguments import check_audio_flags
from common.errors import UserError


def check_mel_flags(args: argparse.Namespace) -> None:
    """The audio flags of the input mels (AudioParams.check_flags), and the loss mel's top, which must lie within the
    audio's frequencies too."""
    check_audio_flags(args)
    nyquist = args.sampling_rate / 2
    if args.mel_fmax_loss is not None and args.mel_fmax_loss > nyquist:
        raise UserError(f"--mel-fmax-loss {args.mel_fmax_loss:g} is above the Nyquist frequency of --sampling-rate "
                        f"{args.sampling_rate} ({nyquist:g} Hz): give {nyquist:g} or less, or leave it out (the "
                        "default is the Nyquist frequency)")
