"""WaveGlow (Prenger et al., 2019): a normalising flow from audio to Gaussian noise, conditioned on a mel spectrogram.

Training runs the flow forward (audio -> z) and maximises the likelihood of z under N(0, sigma^2) plus the flow's
log-determinants; inference runs it backward from noise. The data path, in the order of the paper:

  mel --upsample (transposed conv)--> one conditioning vector per audio sample
  audio (B, L) --squeeze `groups` samples into channels--> (B, groups, L / groups)
  `flows` times: [split off `early_size` channels every `early_every` flows] -> invertible 1x1 conv -> affine coupling

Parameter and module names (upsample, WN.<k>, convinv.<k>, in_layers, cond_layers, res_skip_layers, start, end)
follow NVIDIA's implementation so its published checkpoints load after common.checkpoint.remap_legacy_state_dict.
"""
from __future__ import annotations

from typing import NamedTuple

import torch
from torch import nn
from torch.nn import functional as F

from common.layers import weight_norm


class FlowOutput(NamedTuple):
    z: torch.Tensor  # (B, groups, L / groups): the early outputs, in the order split off, then the last channels
    log_s: list[torch.Tensor]  # per flow: log scales of the affine coupling
    log_det_w: list[torch.Tensor]  # per flow: scalar log|det| of the 1x1 conv times batch * positions (fp32)


def _at_least_fp32(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.to(torch.promote_types(tensor.dtype, torch.float32))


class Invertible1x1Conv(nn.Module):
    """Mixes the channels with an invertible matrix W so that every channel takes turns being transformed."""

    def __init__(self, channels: int):
        super().__init__()
        self.conv = nn.Conv1d(channels, channels, kernel_size=1, bias=False)
        # A random rotation (det +1) starts the flow volume-preserving. Drawn on the CPU so the module can also be
        # built on the meta device (e.g. to count parameters without allocating them).
        rotation = torch.linalg.qr(torch.randn(channels, channels, device="cpu"))[0]
        if torch.det(rotation) < 0:
            rotation[:, 0] = -rotation[:, 0]
        with torch.no_grad():
            self.conv.weight.copy_(rotation.unsqueeze(-1))
        # Cache of W^-1 for inference, valid for one version of one weight tensor in one dtype on one device.
        self._inverse: torch.Tensor | None = None
        self._inverse_of: torch.Tensor | None = None  # the weight it was computed from (keeps its storage alive)
        self._inverse_version = -1

    def forward(self, audio: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        batch_size, _, n_positions = audio.shape
        weight = self.conv.weight.squeeze(-1)
        # log|det W| in fp32 even under autocast: it is summed into the loss and fp16 would round it badly.
        with torch.autocast(device_type=weight.device.type, enabled=False):
            log_det_w = batch_size * n_positions * torch.logdet(_at_least_fp32(weight))
        return self.conv(audio), log_det_w

    def inverse(self, audio: torch.Tensor) -> torch.Tensor:
        return F.conv1d(audio, self.inverse_weight())

    def inverse_weight(self) -> torch.Tensor:
        """W^-1, recomputed whenever the weight changes: an optimizer step or load_state_dict bumps its version,
        .half()/.to() replaces its storage. Holding the old tensor means its address cannot be reused by a new one."""
        weight = self.conv.weight
        cached = self._inverse_of
        if (cached is None or cached.data_ptr() != weight.data_ptr() or cached.dtype != weight.dtype
                or cached.device != weight.device or self._inverse_version != weight._version):
            with torch.inference_mode(False), torch.no_grad():
                inverse = torch.linalg.inv(_at_least_fp32(weight.squeeze(-1))).to(weight.dtype).unsqueeze(-1)
            self._inverse, self._inverse_of, self._inverse_version = inverse, weight.detach(), weight._version
        return self._inverse


class WN(nn.Module):
    """The coupling network: a non-causal WaveNet from half the channels (and the mel) to log s and b of the other half.

    Gated dilated convolutions (tanh * sigmoid) with residual and skip connections. The last layer is zero, so every
    coupling starts as the identity and the untrained flow is just the stack of rotations.
    """

    def __init__(self, in_channels: int, cond_channels: int, n_layers: int, n_channels: int, kernel_size: int):
        super().__init__()
        self.n_layers, self.n_channels = n_layers, n_channels
        self.start = weight_norm(nn.Conv1d(in_channels, n_channels, 1))
        self.in_layers = nn.ModuleList()
        self.cond_layers = nn.ModuleList()
        self.res_skip_layers = nn.ModuleList()
        for i in range(n_layers):
            dilation = 2 ** i
            self.in_layers.append(weight_norm(nn.Conv1d(n_channels, 2 * n_channels, kernel_size, dilation=dilation,
                                                        padding=dilation * (kernel_size - 1) // 2)))
            self.cond_layers.append(weight_norm(nn.Conv1d(cond_channels, 2 * n_channels, 1)))
            # The last layer has no residual branch: all of its output goes to the skip sum.
            res_skip_channels = 2 * n_channels if i < n_layers - 1 else n_channels
            self.res_skip_layers.append(weight_norm(nn.Conv1d(n_channels, res_skip_channels, 1)))
        self.end = nn.Conv1d(n_channels, 2 * in_channels, 1)
        nn.init.zeros_(self.end.weight)
        nn.init.zeros_(self.end.bias)

    def forward(self, audio: torch.Tensor, spect: torch.Tensor) -> torch.Tensor:
        hidden = self.start(audio)
        skip = torch.zeros_like(hidden)
        channels = self.n_channels
        for i in range(self.n_layers):
            pre_activation = self.in_layers[i](hidden) + self.cond_layers[i](spect)
            acts = torch.tanh(pre_activation[:, :channels]) * torch.sigmoid(pre_activation[:, channels:])
            res_skip = self.res_skip_layers[i](acts)
            if i < self.n_layers - 1:
                hidden = hidden + res_skip[:, :channels]
                skip = skip + res_skip[:, channels:]
            else:
                skip = skip + res_skip
        return self.end(skip)


class WaveGlow(nn.Module):
    """forward(mel, audio) -> FlowOutput for training; infer(mel, sigma, noise) -> audio. Flow k transforms
    groups - early_size * (k // early_every) channels; with the defaults 8, 6 and 4 channels, 4 flows each."""

    def __init__(self, n_mel_channels: int = 80, flows: int = 12, groups: int = 8, early_every: int = 4,
                 early_size: int = 2, wn_channels: int = 512, wn_layers: int = 8, wn_kernel_size: int = 3,
                 hop_length: int = 256, win_length: int = 1024):
        super().__init__()
        for name, value in (("n_mel_channels", n_mel_channels), ("flows", flows), ("groups", groups),
                            ("early_every", early_every), ("wn_channels", wn_channels), ("wn_layers", wn_layers),
                            ("wn_kernel_size", wn_kernel_size), ("hop_length", hop_length)):
            if value < 1:
                raise ValueError(f"WaveGlow: {name} must be at least 1, got {value}")
        if early_size < 0:
            raise ValueError(f"WaveGlow: early_size must not be negative, got {early_size}")
        if wn_kernel_size % 2 != 1:
            raise ValueError(f"WaveGlow: wn_kernel_size must be odd (same padding), got {wn_kernel_size}")
        if hop_length % groups != 0:
            raise ValueError(f"WaveGlow: groups ({groups}) must divide hop_length ({hop_length}) so that every mel "
                             "length gives whole groups of samples")
        if win_length < hop_length:
            raise ValueError(f"WaveGlow: win_length ({win_length}) must be at least hop_length ({hop_length})")
        self.flows, self.groups = flows, groups
        self.early_every, self.early_size = early_every, early_size
        self.hop_length = hop_length

        # Each mel frame is spread over the win_length samples its STFT window covered, one hop apart.
        self.upsample = nn.ConvTranspose1d(n_mel_channels, n_mel_channels, kernel_size=win_length, stride=hop_length)
        self.WN = nn.ModuleList()
        self.convinv = nn.ModuleList()
        channels = groups
        for k in range(flows):
            if self._splits_before(k):
                channels -= early_size
            if channels < 2 or channels % 2 != 0:
                raise ValueError(
                    f"WaveGlow: flow {k} would have {channels} channels; with groups={groups}, "
                    f"early_every={early_every} and early_size={early_size} every flow needs an even number >= 2"
                )
            self.convinv.append(Invertible1x1Conv(channels))
            self.WN.append(WN(channels // 2, n_mel_channels * groups, wn_layers, wn_channels, wn_kernel_size))
        self.remaining_channels = channels

    def compile_coupling(self) -> None:
        """torch.compile every coupling network (WN) in place (state-dict names unchanged): the gated tanh * sigmoid
        and the residual and skip sums fuse around the convolutions. Flows with the same number of channels share
        one compiled graph."""
        for coupling in self.WN:
            coupling.compile()

    def _splits_before(self, flow: int) -> bool:
        return flow > 0 and flow % self.early_every == 0

    def _conditioning(self, mel: torch.Tensor, n_samples: int) -> torch.Tensor:
        """(B, n_mel, T) -> (B, n_mel * groups, n_samples / groups): the upsampled mel of each group of samples."""
        spect = self.upsample(mel)
        if spect.size(2) < n_samples:
            raise ValueError(f"WaveGlow: {mel.size(2)} mel frames cover {spect.size(2)} samples, "
                             f"fewer than the {n_samples} asked for")
        spect = spect[:, :, :n_samples]
        batch_size, n_mel, _ = spect.shape
        spect = spect.unfold(2, self.groups, self.groups)  # (B, n_mel, positions, groups)
        # Contiguous once here: every coupling layer's 1x1 convolution reads it, and would copy a strided view
        # (8% of inference time at 256 channels on a CPU).
        return spect.permute(0, 2, 1, 3).reshape(batch_size, -1, n_mel * self.groups).permute(0, 2, 1).contiguous()

    def forward(self, mel: torch.Tensor, audio: torch.Tensor) -> FlowOutput:
        """Audio (B, L) and its mel (B, n_mel, T) -> z (B, groups, L / groups) and the terms of the log-likelihood."""
        if audio.size(1) % self.groups != 0:
            raise ValueError(f"WaveGlow: audio length {audio.size(1)} is not a multiple of groups ({self.groups})")
        spect = self._conditioning(mel, audio.size(1))
        audio = audio.unfold(1, self.groups, self.groups).permute(0, 2, 1)  # (B, groups, L / groups)

        early_outputs, log_s_list, log_det_w_list = [], [], []
        for k in range(self.flows):
            if self._splits_before(k):
                early_outputs.append(audio[:, :self.early_size])
                audio = audio[:, self.early_size:]
            audio, log_det_w = self.convinv[k](audio)
            n_half = audio.size(1) // 2
            audio_0, audio_1 = audio[:, :n_half], audio[:, n_half:]
            coupling = self.WN[k](audio_0, spect)
            b, log_s = coupling[:, :n_half], coupling[:, n_half:]
            audio_1 = torch.exp(log_s) * audio_1 + b
            audio = torch.cat([audio_0, audio_1], dim=1)
            log_s_list.append(log_s)
            log_det_w_list.append(log_det_w)
        return FlowOutput(torch.cat(early_outputs + [audio], dim=1), log_s_list, log_det_w_list)

    def _reference_ordered_noise(self, shape: tuple, spect: torch.Tensor,
                                 generator: torch.Generator | None) -> torch.Tensor:
        """Standard normal noise drawn in NVIDIA's order: the last channels first, then each early output from the
        last split back to the first. With the same seed and weights this gives the reference's audio."""
        batch_size, _, positions = shape
        options = dict(generator=generator, device=spect.device, dtype=spect.dtype)
        draws = [torch.randn(batch_size, self.remaining_channels, positions, **options)]
        for _ in filter(self._splits_before, range(self.flows)):
            draws.append(torch.randn(batch_size, self.early_size, positions, **options))
        return torch.cat(draws[::-1], dim=1)  # forward's z layout: first split first

    @torch.no_grad()
    def infer(self, mel: torch.Tensor, sigma: float = 1.0, noise: torch.Tensor | None = None,
              generator: torch.Generator | None = None) -> torch.Tensor:
        """Mel (B, n_mel, T) -> audio (B, hop_length * T), from z = sigma * noise.

        noise is standard normal (from `generator`, else the global one) unless given; its layout is that of
        forward's z (B, groups, hop_length * T / groups), so infer(mel, 1.0, forward(mel, audio).z) gives the audio
        back. sigma = 0 is deterministic.
        """
        n_samples = mel.size(2) * self.hop_length
        spect = self._conditioning(mel, n_samples)
        shape = (mel.size(0), self.groups, n_samples // self.groups)
        if noise is None:
            noise = self._reference_ordered_noise(shape, spect, generator)
        elif tuple(noise.shape) != shape:
            raise ValueError(f"WaveGlow.infer: noise has shape {tuple(noise.shape)}, expected {shape} for this mel")
        z = sigma * noise.to(spect.dtype)

        n_early = self.groups - self.remaining_channels
        audio = z[:, n_early:]
        for k in reversed(range(self.flows)):
            n_half = audio.size(1) // 2
            audio_0, audio_1 = audio[:, :n_half], audio[:, n_half:]
            coupling = self.WN[k](audio_0, spect)
            b, log_s = coupling[:, :n_half], coupling[:, n_half:]
            audio_1 = (audio_1 - b) / torch.exp(log_s)
            audio = self.convinv[k].inverse(torch.cat([audio_0, audio_1], dim=1))
            if self._splits_before(k):
                split = k // self.early_every - 1  # which early output was split off before flow k
                start = split * self.early_size
                audio = torch.cat([z[:, start:start + self.early_size], audio], dim=1)
        return audio.permute(0, 2, 1).reshape(mel.size(0), -1)
