"""HiFi-GAN (Kong et al., 2020): a GAN vocoder, mel spectrogram -> waveform, with two families of discriminators.

The generator, in the order of the paper:

  mel (B, n_mel, T) --conv_pre--> C0 channels
  per upsampling stage i: leaky ReLU -> transposed conv (x upsample_rates[i], half the channels)
                          -> multi-receptive-field fusion: the mean of |resblock_kernel_sizes| residual blocks
  leaky ReLU -> conv_post (1 channel) -> tanh: audio (B, 1, T * prod(upsample_rates)) in [-1, 1]

The discriminators judge real and generated audio: the multi-period discriminator looks at the audio folded into
(T / p, p) grids for periods p = 2, 3, 5, 7, 11 (periodic structure), the multi-scale discriminator at the raw audio
and two average-pooled versions of it (structure at longer scales).

Module and parameter names (conv_pre, ups.i, resblocks.i.j.convs1/convs2/convs, conv_post; discriminators.k.convs,
conv_post) follow NVIDIA's implementation, so its checkpoints and jik876's load after the key mapping of
hifigan/checkpoints.py. Every convolution is weight-normed through torch's parametrizations (keys
*.parametrizations.weight.original0/1) except the first scale discriminator's, which is spectral-normed.

Initialisation: the reference calls init_weights (normal(0, 0.01)) *after* weight norm has captured the weight, so
it has no effect and every published HiFi-GAN was trained from PyTorch's default initialisation of g and v. We keep
that effective behaviour on purpose (no re-draw): it is what the published hyper-parameters were tuned with.
"""
from __future__ import annotations

import copy
import math

import torch
from torch import nn
from torch.nn import functional as F

from common.layers import (Conv1d, ConvTranspose1d, as_image_rows, from_image_rows, remove_weight_norm,
                           weight_norm)

MPD_PERIODS = (2, 3, 5, 7, 11)  # the multi-period discriminator's, in every published HiFi-GAN
LRELU_SLOPE = 0.1  # every leaky ReLU inside the networks; the one before conv_post keeps torch's default 0.01

# The paper's three generators (jik876's config_v1/v2/v3.json). Only v1 was trained by NVIDIA.
PRESETS = {
    "v1": {"resblock": "1", "upsample_rates": [8, 8, 2, 2], "upsample_kernel_sizes": [16, 16, 4, 4],
           "upsample_initial_channel": 512, "resblock_kernel_sizes": [3, 7, 11],
           "resblock_dilation_sizes": [[1, 3, 5], [1, 3, 5], [1, 3, 5]]},
    "v2": {"resblock": "1", "upsample_rates": [8, 8, 2, 2], "upsample_kernel_sizes": [16, 16, 4, 4],
           "upsample_initial_channel": 128, "resblock_kernel_sizes": [3, 7, 11],
           "resblock_dilation_sizes": [[1, 3, 5], [1, 3, 5], [1, 3, 5]]},
    "v3": {"resblock": "2", "upsample_rates": [8, 8, 4], "upsample_kernel_sizes": [16, 16, 8],
           "upsample_initial_channel": 256, "resblock_kernel_sizes": [3, 5, 7],
           "resblock_dilation_sizes": [[1, 2], [2, 6], [3, 12]]},
}


def same_padding(kernel_size: int, dilation: int = 1) -> int:
    """Padding that keeps the length of a stride-1 convolution with an odd kernel."""
    return (kernel_size * dilation - dilation) // 2


class ResBlock1(nn.Module):
    """Per dilation d: x + conv(lrelu(conv_d(lrelu(x)))), a dilated conv then an undilated one (the paper's v1/v2)."""

    def __init__(self, channels: int, kernel_size: int, dilations=(1, 3, 5)):
        super().__init__()
        self.convs1 = nn.ModuleList(
            weight_norm(Conv1d(channels, channels, kernel_size, dilation=d, padding=same_padding(kernel_size, d)))
            for d in dilations)
        self.convs2 = nn.ModuleList(
            weight_norm(Conv1d(channels, channels, kernel_size, padding=same_padding(kernel_size)))
            for _ in dilations)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for dilated, plain in zip(self.convs1, self.convs2):
            x = x + plain(F.leaky_relu(dilated(F.leaky_relu(x, LRELU_SLOPE)), LRELU_SLOPE))
        return x


class ResBlock2(nn.Module):
    """Per dilation d: x + conv_d(lrelu(x)), one dilated conv per stage (the paper's light v3)."""

    def __init__(self, channels: int, kernel_size: int, dilations=(1, 3)):
        super().__init__()
        self.convs = nn.ModuleList(
            weight_norm(Conv1d(channels, channels, kernel_size, dilation=d, padding=same_padding(kernel_size, d)))
            for d in dilations)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for conv in self.convs:
            x = x + conv(F.leaky_relu(x, LRELU_SLOPE))
        return x


RESBLOCKS = {"1": ResBlock1, "2": ResBlock2}


class Generator(nn.Module):
    """Mel (B, n_mel_channels, T) -> audio (B, 1, T * hop_length) in [-1, 1].

    image_rows: compute on the signals as one-row images in channels-last memory (common/layers.py), the same numbers
    to float rounding; faster on the CPU (hifigan/RESULTS.md), so inference sets it there (use_fast_layout_for)."""

    def __init__(self, n_mel_channels: int = 80, resblock: str = "1", upsample_rates=(8, 8, 2, 2),
                 upsample_kernel_sizes=(16, 16, 4, 4), upsample_initial_channel: int = 512,
                 resblock_kernel_sizes=(3, 7, 11), resblock_dilation_sizes=((1, 3, 5),) * 3):
        super().__init__()
        resblock = str(resblock)
        if resblock not in RESBLOCKS:
            raise ValueError(f"resblock must be '1' or '2', got {resblock!r}")
        if len(upsample_rates) != len(upsample_kernel_sizes):
            raise ValueError(f"upsample_rates {list(upsample_rates)} and upsample_kernel_sizes "
                             f"{list(upsample_kernel_sizes)} must have the same length")
        if len(resblock_kernel_sizes) != len(resblock_dilation_sizes):
            raise ValueError(f"resblock_kernel_sizes {list(resblock_kernel_sizes)} and resblock_dilation_sizes "
                             f"{[list(d) for d in resblock_dilation_sizes]} must have the same length")
        for rate, kernel in zip(upsample_rates, upsample_kernel_sizes):
            # (kernel - rate) / 2 padding on both sides gives exactly T * rate samples only for an even difference.
            if kernel < rate or (kernel - rate) % 2:
                raise ValueError(f"an upsampling kernel must be at least its rate and differ from it by an even "
                                 f"number (kernel {kernel}, rate {rate})")
        if upsample_initial_channel % 2 ** len(upsample_rates):
            raise ValueError(f"upsample_initial_channel {upsample_initial_channel} must be divisible by "
                             f"2^{len(upsample_rates)} (channels halve at every upsampling)")
        self.hop_length = math.prod(upsample_rates)
        self.num_kernels = len(resblock_kernel_sizes)

        self.conv_pre = weight_norm(Conv1d(n_mel_channels, upsample_initial_channel, 7, padding=3))
        self.ups = nn.ModuleList()
        self.resblocks = nn.ModuleList()
        channels = upsample_initial_channel
        for rate, kernel in zip(upsample_rates, upsample_kernel_sizes):
            self.ups.append(weight_norm(ConvTranspose1d(channels, channels // 2, kernel, rate,
                                                        padding=(kernel - rate) // 2)))
            channels //= 2
            self.resblocks.append(nn.ModuleList(
                RESBLOCKS[resblock](channels, kernel_size, dilations)
                for kernel_size, dilations in zip(resblock_kernel_sizes, resblock_dilation_sizes)))
        self.conv_post = weight_norm(Conv1d(channels, 1, 7, padding=3))
        self.image_rows = False

    def forward(self, mel: torch.Tensor) -> torch.Tensor:
        x = self.conv_pre(as_image_rows(mel) if self.image_rows else mel)
        for upsample, fusion in zip(self.ups, self.resblocks):
            x = upsample(F.leaky_relu(x, LRELU_SLOPE))
            # Multi-receptive-field fusion: every block sees the same input; their outputs are averaged.
            total = fusion[0](x)
            for block in fusion[1:]:
                total = total + block(x)
            x = total / self.num_kernels
        x = F.leaky_relu(x)  # default slope 0.01, as in both reference implementations
        audio = torch.tanh(self.conv_post(x))
        return from_image_rows(audio) if self.image_rows else audio

    def use_fast_layout_for(self, device: torch.device) -> None:
        """Image rows on the CPU, where they give the same audio faster; plain signals elsewhere. For inference:
        in a training step on the CPU image rows were slower (docs/benchmarks.md)."""
        self.image_rows = device.type == "cpu"

    def remove_weight_norm(self) -> None:
        """Fold weight norm into plain weights for inference (same outputs, fewer operations). Idempotent."""
        remove_weight_norm(self)


def score_with_feature_maps(convs: nn.ModuleList, conv_post: nn.Module, x: torch.Tensor
                            ) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """A sub-discriminator's stack: (flattened score, the output of every layer), the maps feature matching compares."""
    feature_maps = []
    for conv in convs:
        x = F.leaky_relu(conv(x), LRELU_SLOPE)
        feature_maps.append(x)
    x = conv_post(x)
    feature_maps.append(x)
    return torch.flatten(x, 1), feature_maps


class DiscriminatorP(nn.Module):
    """Looks at every `period`-th sample: audio (B, 1, T) reflect-padded to a multiple of the period and folded
    into (B, 1, T / period, period); 2-d convolutions with (k, 1) kernels then treat the columns independently."""

    def __init__(self, period: int, kernel_size: int = 5, stride: int = 3, width_divisor: int = 1):
        super().__init__()
        self.period = period
        channels = [1] + [width // width_divisor for width in (32, 128, 512, 1024)]
        padding = (same_padding(kernel_size), 0)
        self.convs = nn.ModuleList(
            weight_norm(nn.Conv2d(c_in, c_out, (kernel_size, 1), (stride, 1), padding=padding))
            for c_in, c_out in zip(channels[:-1], channels[1:]))
        self.convs.append(weight_norm(nn.Conv2d(channels[-1], channels[-1], (kernel_size, 1), 1, padding=padding)))
        self.conv_post = weight_norm(nn.Conv2d(channels[-1], 1, (3, 1), 1, padding=(1, 0)))

    def forward(self, audio: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
        batch_size, channels, length = audio.shape
        if length % self.period:
            audio = F.pad(audio, (0, self.period - length % self.period), mode="reflect")
        x = audio.view(batch_size, channels, -1, self.period)
        return score_with_feature_maps(self.convs, self.conv_post, x)


class MultiPeriodDiscriminator(nn.Module):
    """One DiscriminatorP per period; returns (scores, feature maps), one entry per period."""

    def __init__(self, periods=MPD_PERIODS, width_divisor: int = 1):
        super().__init__()
        self.discriminators = nn.ModuleList(DiscriminatorP(period, width_divisor=width_divisor) for period in periods)

    def forward(self, audio: torch.Tensor) -> tuple[list[torch.Tensor], list[list[torch.Tensor]]]:
        scores, feature_maps = [], []
        for discriminator in self.discriminators:
            score, maps = discriminator(audio)
            scores.append(score)
            feature_maps.append(maps)
        return scores, feature_maps


class DiscriminatorS(nn.Module):
    """Strided, grouped 1-d convolutions over the raw (or pooled) audio. `norm` is weight or spectral norm."""

    # (in, out, kernel, stride, groups) of each conv; padding keeps "same" alignment for the odd kernels.
    LAYERS = [(1, 128, 15, 1, 1), (128, 128, 41, 2, 4), (128, 256, 41, 2, 16), (256, 512, 41, 4, 16),
              (512, 1024, 41, 4, 16), (1024, 1024, 41, 1, 16), (1024, 1024, 5, 1, 1)]

    def __init__(self, spectral_norm: bool = False, width_divisor: int = 1):
        super().__init__()
        norm = nn.utils.parametrizations.spectral_norm if spectral_norm else weight_norm
        self.convs = nn.ModuleList(
            norm(Conv1d(max(c_in // width_divisor, 1), c_out // width_divisor, kernel, stride, groups=groups,
                        padding=same_padding(kernel)))
            for c_in, c_out, kernel, stride, groups in self.LAYERS)
        self.conv_post = norm(Conv1d(1024 // width_divisor, 1, 3, 1, padding=1))

    def forward(self, audio: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
        return score_with_feature_maps(self.convs, self.conv_post, audio)


class MultiScaleDiscriminator(nn.Module):
    """Three DiscriminatorS on the audio, then on it average-pooled once and twice (x2 each time). The first is
    spectral-normed: the paper found that stabilises training on the raw scale.

    pool_padding: NVIDIA pools with padding 1 (the default here); jik876's code pads by 2. Neither has parameters,
    so both sets of weights load either way; only the pooled lengths (and so the scores) differ slightly."""

    def __init__(self, pool_padding: int = 1, width_divisor: int = 1):
        super().__init__()
        self.discriminators = nn.ModuleList([DiscriminatorS(spectral_norm=True, width_divisor=width_divisor),
                                             DiscriminatorS(width_divisor=width_divisor),
                                             DiscriminatorS(width_divisor=width_divisor)])
        self.meanpools = nn.ModuleList([nn.AvgPool1d(4, 2, padding=pool_padding) for _ in range(2)])

    def forward(self, audio: torch.Tensor) -> tuple[list[torch.Tensor], list[list[torch.Tensor]]]:
        scores, feature_maps = [], []
        for index, discriminator in enumerate(self.discriminators):
            if index > 0:
                audio = self.meanpools[index - 1](audio)
            score, maps = discriminator(audio)
            scores.append(score)
            feature_maps.append(maps)
        return scores, feature_maps


class HiFiGAN(nn.Module):
    """Everything that trains, in one module so one state dict holds it: generator, MPD, MSD and optionally an
    exponential moving average of the generator (not trained by gradients; updated with update_ema).

    discriminator_width_divisor divides every hidden channel count of both discriminators (1, 2, 4 or 8: the MSD's
    16 groups need 16 channels), for small experiments and fast tests; the published models use 1."""

    def __init__(self, generator: dict, mpd_periods=MPD_PERIODS, ema: bool = False,
                 discriminator_width_divisor: int = 1):
        super().__init__()
        if discriminator_width_divisor not in (1, 2, 4, 8):
            raise ValueError(f"discriminator width divisor must be 1, 2, 4 or 8, got {discriminator_width_divisor}")
        self.generator_config = dict(generator)
        self.generator = Generator(**generator)
        self.mpd = MultiPeriodDiscriminator(mpd_periods, width_divisor=discriminator_width_divisor)
        self.msd = MultiScaleDiscriminator(width_divisor=discriminator_width_divisor)
        self.generator_ema = None
        if ema:
            self.generator_ema = copy.deepcopy(self.generator)
            self.generator_ema.requires_grad_(False)

    def forward(self, mel: torch.Tensor) -> torch.Tensor:
        return self.generator(mel)

    @torch.no_grad()
    def reset_ema(self) -> None:
        """Start the average from the generator's current weights (after initialisation or loading)."""
        if self.generator_ema is not None:
            for average, live in zip(self.generator_ema.state_dict().values(), self.generator.state_dict().values()):
                average.copy_(live)

    @torch.no_grad()
    def update_ema(self, decay: float) -> None:
        """average = decay * average + (1 - decay) * weights, over the stored tensors (weight norm's g and v, as
        the reference averages its state dict)."""
        if self.generator_ema is None:
            return
        for average, live in zip(self.generator_ema.state_dict().values(), self.generator.state_dict().values()):
            if average.is_floating_point():
                average.lerp_(live.to(average.dtype), 1.0 - decay)
            else:
                average.copy_(live)
