"""HiFi-GAN's denoiser, as the reference's: the bias is the generator's audio for a log mel of zeros (88 frames), its
first STFT frame the bias spectrum, subtracted (times the strength) from every frame's magnitude; see common/denoise.py,
which WaveGlow's denoiser shares. Mode "silence" (the mel of true silence, middle frame) removes more of the hiss."""
from __future__ import annotations

import torch

from common.audio import AudioParams
from common.denoise import SpectralDenoiser, bias_mel


class Denoiser(SpectralDenoiser):
    def __init__(self, generator: torch.nn.Module, params: AudioParams = AudioParams(), mode: str = "zeros"):
        weight = next(generator.parameters())
        with torch.no_grad():
            bias_audio = generator(bias_mel(params, mode, like=weight)).float()  # (1, 1, samples)
        super().__init__(bias_audio, params, mode)
