import math

import pytest
import torch

from common.audio import AudioParams
from waveglow.denoiser import Denoiser
from waveglow.model import WaveGlow

PARAMS = AudioParams(n_mel_channels=8)


@pytest.fixture(scope="module")
def waveglow() -> WaveGlow:
    torch.manual_seed(0)
    model = WaveGlow(n_mel_channels=8, flows=4, early_every=2, wn_channels=16, wn_layers=2)
    with torch.no_grad():  # random end layers, so the vocoder's output for a constant mel is a real hiss
        for wn in model.WN:
            wn.end.weight.normal_(0, 0.1)
            wn.end.bias.normal_(0, 0.1)
    return model


def energy(audio: torch.Tensor) -> float:
    return audio.pow(2).sum().item()


def test_strength_zero_gives_the_input_back(waveglow):
    audio = 0.3 * torch.randn(2, 20 * 256)
    denoised = Denoiser(waveglow, PARAMS)(audio, strength=0.0)
    assert denoised.shape == audio.shape
    assert torch.allclose(denoised, audio, atol=1e-5)


# "zeros" takes NVIDIA's bias frame, the first, which also sees the edge of the vocoder's output: it removes less.
@pytest.mark.parametrize("mode, bias_mel_value, left_at_most", [("zeros", 0.0, 0.05), ("silence", math.log(1e-5), 0.01)])
def test_the_bias_is_removed_from_a_signal_made_of_it(waveglow, mode, bias_mel_value, left_at_most):
    denoiser = Denoiser(waveglow, PARAMS, mode=mode)
    hiss = waveglow.infer(torch.full((1, 8, 40), bias_mel_value), sigma=0.0)  # what the vocoder says for the bias mel
    assert energy(hiss) > 0
    assert energy(denoiser(hiss, strength=1.0)) < left_at_most * energy(hiss)
    # Partial strength removes part of it; a louder, different signal mostly survives.
    assert 0.05 * energy(hiss) < energy(denoiser(hiss, strength=0.5)) < 0.5 * energy(hiss)
    tone = torch.sin(2 * math.pi * 440 * torch.arange(40 * 256) / 22050.0)[None] * hiss.abs().max() * 20
    assert energy(denoiser(tone, strength=1.0)) > 0.9 * energy(tone)


def test_one_dimensional_audio_keeps_its_shape(waveglow):
    audio = torch.randn(5000)
    assert Denoiser(waveglow, PARAMS)(audio, strength=0.1).shape == (5000,)


@pytest.mark.parametrize("length", [1, 256, 512])  # shorter than the STFT's reflect padding of 512 + 1
def test_clips_of_a_few_frames_are_denoised_too(waveglow, length):
    audio = 0.3 * torch.randn(2, length)
    denoiser = Denoiser(waveglow, PARAMS)
    assert torch.allclose(denoiser(audio, strength=0.0), audio, atol=1e-5)
    assert denoiser(audio, strength=0.5).shape == (2, length)


class RecordingVocoder(torch.nn.Module):
    """Stands in for WaveGlow and records the mel it was asked to vocode."""

    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(1))
        self.mels = []

    def infer(self, mel, sigma):
        self.mels.append((mel, sigma))
        return torch.randn(1, mel.size(2) * 256)


def test_modes_choose_the_bias_mel():
    vocoder = RecordingVocoder()
    Denoiser(vocoder, PARAMS, mode="zeros")
    Denoiser(vocoder, PARAMS, mode="silence")
    (zeros, sigma_zeros), (silence, sigma_silence) = vocoder.mels
    assert zeros.shape == (1, 8, 88) and torch.all(zeros == 0) and sigma_zeros == 0.0
    assert torch.allclose(silence, torch.full_like(silence, math.log(1e-5))) and sigma_silence == 0.0
    with pytest.raises(ValueError, match="unknown mode 'normal'"):
        Denoiser(vocoder, PARAMS, mode="normal")
