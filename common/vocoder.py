"""The seam between acoustic models and vocoders: anything that turns a batch of log mels into audio.

inference.py talks to every vocoder (Griffin-Lim, WaveGlow, WaveNet, later HiFi-GAN) through this interface. Each
vocoder carries the AudioParams its mels must have, and inference.py refuses a pairing whose parameters differ.
"""
from __future__ import annotations

from typing import Protocol

import torch

from common.audio import AudioParams, griffin_lim


class Vocoder(Protocol):
    name: str
    audio_params: AudioParams

    def __call__(self, mel: torch.Tensor) -> torch.Tensor:
        """(B, n_mels, T) log mel -> (B, T * hop_length) audio in [-1, 1]."""
        ...


class GriffinLimVocoder:
    name = "griffin_lim"

    def __init__(self, audio_params: AudioParams, n_iters: int = 60):
        self.audio_params = audio_params
        self.n_iters = n_iters

    def __call__(self, mel: torch.Tensor) -> torch.Tensor:
        return griffin_lim(mel.float(), self.audio_params, n_iters=self.n_iters)
