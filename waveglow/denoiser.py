"""Removes WaveGlow's constant background hiss by spectral subtraction of the vocoder's own "bias" spectrum.

The bias is what the vocoder says for a mel that carries nothing: WaveGlow.infer(constant mel, sigma=0).
Mode "zeros" (the default) is NVIDIA's denoiser exactly: a mel of zeros and the first STFT frame of the result, so the
published settings such as strength 0.01 give the reference's audio. A log-mel of zero is linear magnitude exp(0) = 1,
a faint broadband sound rather than silence, and the first frame also sees the edge of the vocoder's output; mode
"silence" instead uses log(1e-5), the floor of common.audio's log compression (the mel of true silence), and the
middle frame, away from the edges.
"""
from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from common.audio import LOG_CLAMP_MIN, AudioParams

BIAS_MEL_VALUES = {"zeros": 0.0, "silence": math.log(LOG_CLAMP_MIN)}
BIAS_FRAME = {"zeros": "first", "silence": "middle"}


class Denoiser(nn.Module):
    def __init__(self, waveglow: nn.Module, params: AudioParams = AudioParams(), mode: str = "zeros",
                 bias_frames: int = 88):
        super().__init__()
        if mode not in BIAS_MEL_VALUES:
            raise ValueError(f"Denoiser: unknown mode {mode!r}; choose one of {sorted(BIAS_MEL_VALUES)}")
        self.params = params
        reference = next(waveglow.parameters())
        self.register_buffer("window", torch.hann_window(params.win_length, periodic=True, device=reference.device),
                             persistent=False)
        bias_mel = torch.full((1, params.n_mel_channels, bias_frames), BIAS_MEL_VALUES[mode],
                              dtype=reference.dtype, device=reference.device)
        with torch.no_grad():
            bias_audio = waveglow.infer(bias_mel, sigma=0.0).float()
        magnitude = self._stft(bias_audio).abs()
        frame = 0 if BIAS_FRAME[mode] == "first" else magnitude.size(2) // 2
        self.register_buffer("bias_spectrum", magnitude[0, :, frame:frame + 1], persistent=False)  # (freqs, 1)

    def _stft(self, audio: torch.Tensor) -> torch.Tensor:
        return torch.stft(audio, n_fft=self.params.filter_length, hop_length=self.params.hop_length,
                          win_length=self.params.win_length, window=self.window, center=True, pad_mode="reflect",
                          return_complex=True)

    def forward(self, audio: torch.Tensor, strength: float = 0.1) -> torch.Tensor:
        """Audio (B, L) or (L,) -> the same with strength * bias taken off every frame's magnitude (phase kept)."""
        length = audio.size(-1)
        # The STFT reflects filter_length / 2 samples at each edge, so it needs more than that: a clip of a few mel
        # frames (an early stop) is padded with silence first.
        padded = F.pad(audio.float(), (0, max(self.params.filter_length // 2 + 1 - length, 0)))
        spectrum = self._stft(padded)
        magnitude = torch.clamp(spectrum.abs() - self.bias_spectrum * strength, min=0.0)
        denoised = torch.polar(magnitude, spectrum.angle())
        denoised = torch.istft(denoised, n_fft=self.params.filter_length, hop_length=self.params.hop_length,
                               win_length=self.params.win_length, window=self.window, center=True,
                               length=padded.size(-1))
        return denoised[..., :length].to(audio.dtype)
