"""The mel that jik876's HiFi-GAN and NVIDIA's base HiFi-GAN training compute (a reference for the tests).

It differs from common/audio.py's (Tacotron 2's) mel only in framing and one epsilon: frames are not centred (the
audio is reflect-padded by (n_fft - hop) / 2 = 384 samples on each side, so frame k is centred at hop * k + hop / 2
and there are T // hop frames, not 1 + T // hop), and the magnitude is sqrt(|X|^2 + 1e-9). AudioParams cannot say
this, so it lives here; this project's own training and Tacotron 2 never use it.
"""
from __future__ import annotations

import torch
from torch.nn import functional as F

from common.audio import AudioParams, MelSpectrogram

MAGNITUDE_EPSILON = 1e-9


class Jik876MelSpectrogram(MelSpectrogram):
    """Audio (B, T) in [-1, 1] -> log mel (B, n_mel_channels, T // hop_length), jik876's framing."""

    def magnitude(self, audio: torch.Tensor) -> torch.Tensor:
        params = self.params
        padding = (params.filter_length - params.hop_length) // 2
        padded = F.pad(audio.float().unsqueeze(1), (padding, padding), mode="reflect").squeeze(1)
        spectrum = torch.stft(padded, n_fft=params.filter_length, hop_length=params.hop_length,
                              win_length=params.win_length, window=self.window, center=False, return_complex=True)
        return torch.sqrt(spectrum.real ** 2 + spectrum.imag ** 2 + MAGNITUDE_EPSILON)


def jik876_mel(audio: torch.Tensor, params: AudioParams = AudioParams()) -> torch.Tensor:
    """One-off convenience: Jik876MelSpectrogram(params)(audio)."""
    return Jik876MelSpectrogram(params)(audio)
