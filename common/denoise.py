"""Spectral subtraction of a vocoder's own "bias": the constant hiss it adds to everything it says.

The bias is the vocoder's audio for a mel that carries nothing; one STFT frame of it is the bias spectrum, and
denoising takes `strength` times that spectrum off every frame's magnitude (clamped at zero), keeping the phase.
Mode "zeros" is NVIDIA's estimate for both WaveGlow and HiFi-GAN: a log mel of zeros and the first frame of the
result. A log mel of zero is linear magnitude exp(0) = 1, a faint broadband sound rather than silence, and the first
frame also sees the edge of the vocoder's output; mode "silence" uses log(1e-5), the floor of common.audio's log
compression (the mel of true silence), and the middle frame, away from the edges.

Each vocoder brings only how it turns the bias mel into audio (waveglow/denoiser.py, hifigan/denoiser.py).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from common.arguments import add_dataclass_args, flag
from common.audio import LOG_CLAMP_MIN, AudioParams

BIAS_MEL_VALUES = {"zeros": 0.0, "silence": math.log(LOG_CLAMP_MIN)}
BIAS_FRAME = {"zeros": "first", "silence": "middle"}
BIAS_FRAMES = 88  # the length of NVIDIA's bias mel


@dataclass
class DenoiserSettings:
    """-d and --denoiser-mode, shared by the vocoders that have a denoiser (each has its own default strength)."""
    denoising_strength: float | None = flag(
        None, "0 turns the denoiser off (default: each vocoder's, NVIDIA's: WaveGlow 0.01, HiFi-GAN 0)", aliases=["-d"])
    denoiser_mode: str = flag("zeros", "zeros: NVIDIA's bias estimate (zero mel, first frame); silence: a silent "
                                       "mel's middle frame", choices=sorted(BIAS_MEL_VALUES))

    def strength_or(self, default: float) -> float:
        return default if self.denoising_strength is None else self.denoising_strength


def add_denoiser_args(group) -> None:
    add_dataclass_args(group, DenoiserSettings)


def bias_mel(params: AudioParams, mode: str, like: torch.Tensor, frames: int = BIAS_FRAMES) -> torch.Tensor:
    """The (1, n_mel_channels, frames) mel whose audio is the bias, on like's device and in its dtype."""
    if mode not in BIAS_MEL_VALUES:
        raise ValueError(f"denoiser: unknown mode {mode!r}; choose one of {sorted(BIAS_MEL_VALUES)}")
    return torch.full((1, params.n_mel_channels, frames), BIAS_MEL_VALUES[mode], dtype=like.dtype,
                      device=like.device)


class SpectralDenoiser(nn.Module):
    """Audio (B, L) or (L,) -> the same with strength * bias spectrum taken off every frame's STFT magnitude."""

    def __init__(self, bias_audio: torch.Tensor, params: AudioParams = AudioParams(), mode: str = "zeros"):
        super().__init__()
        self.params = params
        bias_audio = bias_audio.detach().float().reshape(1, -1)
        self.register_buffer("window", torch.hann_window(params.win_length, periodic=True, device=bias_audio.device),
                             persistent=False)
        magnitude = self._stft(bias_audio).abs()
        frame = 0 if BIAS_FRAME[mode] == "first" else magnitude.size(2) // 2
        self.register_buffer("bias_spectrum", magnitude[0, :, frame:frame + 1], persistent=False)  # (freqs, 1)

    def _stft(self, audio: torch.Tensor) -> torch.Tensor:
        return torch.stft(audio, n_fft=self.params.filter_length, hop_length=self.params.hop_length,
                          win_length=self.params.win_length, window=self.window, center=True, pad_mode="reflect",
                          return_complex=True)

    def forward(self, audio: torch.Tensor, strength: float = 0.1) -> torch.Tensor:
        length = audio.size(-1)
        # The STFT reflects filter_length / 2 samples at each edge, so it needs more than that: a clip of a few mel
        # frames (an early stop) is padded with silence first.
        padded = F.pad(audio.float(), (0, max(self.params.filter_length // 2 + 1 - length, 0)))
        spectrum = self._stft(padded)
        magnitude = torch.clamp(spectrum.abs() - self.bias_spectrum * strength, min=0.0)
        denoised = torch.istft(torch.polar(magnitude, spectrum.angle()), n_fft=self.params.filter_length,
                               hop_length=self.params.hop_length, win_length=self.params.win_length,
                               window=self.window, center=True, length=padded.size(-1))
        return denoised[..., :length].to(audio.dtype)
