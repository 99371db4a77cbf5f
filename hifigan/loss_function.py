"""HiFi-GAN's losses (Kong et al., 2020, section 2.4), as the reference trains with them.

The discriminators' scores and feature maps come as lists with one entry per sub-discriminator (5 periods of the
MPD, then 3 scales of the MSD); every adversarial and feature-matching term is summed over them:

  discriminator:  sum_k mean((1 - D_k(y))^2) + mean(D_k(y_hat)^2)          (least-squares GAN)
  generator:      sum_k mean((1 - D_k(y_hat))^2)
                + 2  * sum_k sum_l mean(|D_k^l(y) - D_k^l(y_hat)|)           (feature matching over every layer l)
                + 45 * mean(|mel(y) - mel(y_hat)|)                           (mel L1)

The loss mel is common/audio.py's log mel with its own filterbank top, --mel-fmax-loss (default sr / 2, the
reference's fmax_for_loss None), computed from the ground-truth audio and from the generated audio in fp32.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch
from torch import nn

from common.audio import AudioParams, MelSpectrogram

FEATURE_MATCHING_WEIGHT = 2.0  # lambda_fm of the paper
MEL_WEIGHT = 45.0  # lambda_mel of the paper


def discriminator_loss(real_scores: list[torch.Tensor], fake_scores: list[torch.Tensor]) -> torch.Tensor:
    """Real audio scored towards 1, generated audio towards 0, summed over sub-discriminators."""
    return sum(torch.mean((1.0 - real.float()) ** 2) + torch.mean(fake.float() ** 2)
               for real, fake in zip(real_scores, fake_scores, strict=True))


def generator_adversarial_loss(fake_scores: list[torch.Tensor]) -> torch.Tensor:
    """The generator wants its audio scored 1 by every sub-discriminator."""
    return sum(torch.mean((1.0 - fake.float()) ** 2) for fake in fake_scores)


def feature_matching_loss(real_maps: list[list[torch.Tensor]], fake_maps: list[list[torch.Tensor]]) -> torch.Tensor:
    """FEATURE_MATCHING_WEIGHT x the L1 distances between the discriminators' feature maps of real and generated
    audio (each a mean over its elements), summed over every layer of every sub-discriminator."""
    total = sum(torch.mean(torch.abs(real.detach().float() - fake.float()))
                for real_layers, fake_layers in zip(real_maps, fake_maps, strict=True)
                for real, fake in zip(real_layers, fake_layers, strict=True))
    return FEATURE_MATCHING_WEIGHT * total


def loss_mel_params(audio: AudioParams, mel_fmax_loss: float | None) -> AudioParams:
    """The audio parameters of the loss's mel: the input mel's, with the filterbank up to mel_fmax_loss (None:
    the Nyquist frequency)."""
    return dataclasses.replace(audio, mel_fmax=audio.sampling_rate / 2 if mel_fmax_loss is None else mel_fmax_loss)


class MelL1(nn.Module):
    """The mean absolute difference between the loss mels of real and generated audio (unweighted), and the sums
    of that difference and of its element count, for corpus-level validation."""

    def __init__(self, params: AudioParams):
        super().__init__()
        self.mel_spectrogram = MelSpectrogram(params)

    def errors(self, real: torch.Tensor, fake: torch.Tensor) -> torch.Tensor:
        """|mel(real) - mel(fake)| per element; real and fake are audio (B, T) or (B, 1, T) of the same shape."""
        real, fake = real.reshape(real.shape[0], -1), fake.reshape(fake.shape[0], -1)
        if real.shape != fake.shape:
            raise ValueError(f"real audio {tuple(real.shape)} and generated audio {tuple(fake.shape)} differ in shape")
        # Outside autocast: the mel's log and the small differences it measures want fp32.
        with torch.autocast(real.device.type, enabled=False):
            mels = self.mel_spectrogram(torch.cat([real.float(), fake.float()]))
        real_mel, fake_mel = mels.split(real.shape[0])
        return torch.abs(real_mel - fake_mel)

    def forward(self, real: torch.Tensor, fake: torch.Tensor) -> torch.Tensor:
        return self.errors(real, fake).mean()


@dataclass
class GeneratorLosses:
    adversarial: torch.Tensor
    feature_matching: torch.Tensor  # weighted (x2)
    mel: torch.Tensor  # weighted (x45)

    @property
    def total(self) -> torch.Tensor:
        return self.adversarial + self.feature_matching + self.mel


class HiFiGANLoss(nn.Module):
    """Both players' losses from the discriminators' outputs ((scores, feature maps) of the MPD and of the MSD)."""

    def __init__(self, loss_mel: AudioParams):
        super().__init__()
        self.mel_l1 = MelL1(loss_mel)

    def discriminator(self, real_outputs, fake_outputs) -> torch.Tensor:
        """real_outputs / fake_outputs: [(scores, feature maps) of the MPD, of the MSD] on real / generated audio."""
        return sum(discriminator_loss(real[0], fake[0]) for real, fake in zip(real_outputs, fake_outputs, strict=True))

    def generator(self, real_outputs, fake_outputs, real_audio: torch.Tensor,
                  fake_audio: torch.Tensor) -> GeneratorLosses:
        return GeneratorLosses(
            adversarial=sum(generator_adversarial_loss(fake[0]) for fake in fake_outputs),
            feature_matching=sum(feature_matching_loss(real[1], fake[1])
                                 for real, fake in zip(real_outputs, fake_outputs, strict=True)),
            mel=MEL_WEIGHT * self.mel_l1(real_audio, fake_audio))
