"""Removes WaveGlow's constant background hiss by spectral subtraction of its own "bias" (common/denoise.py).

The bias is what WaveGlow says for a mel that carries nothing: WaveGlow.infer(constant mel, sigma=0). Mode "zeros"
(the default) is NVIDIA's denoiser exactly, so published settings such as strength 0.01 give the reference's audio.
"""
from __future__ import annotations

import torch
from torch import nn

from common.audio import AudioParams
from common.denoise import BIAS_FRAMES, SpectralDenoiser, bias_mel


class Denoiser(SpectralDenoiser):
    def __init__(self, waveglow: nn.Module, params: AudioParams = AudioParams(), mode: str = "zeros",
                 bias_frames: int = BIAS_FRAMES):
        reference = next(waveglow.parameters())
        with torch.no_grad():
            bias_audio = waveglow.infer(bias_mel(params, mode, like=reference, frames=bias_frames), sigma=0.0)
        super().__init__(bias_audio.float(), params, mode)
