"""Layers shared by the models: linear and 1-d convolution with Xavier initialisation, masks, weight norm, and 1-d
convolutions that also run on signals laid out as one-row images (the CPU's fast layout)."""
from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


class LinearNorm(nn.Module):
    """Linear layer with Xavier-uniform weights scaled by the gain of the nonlinearity that follows. The layer sits
    in `linear_layer`, the name NVIDIA's Tacotron 2 checkpoints use (`<name>.linear_layer.weight`)."""

    def __init__(self, in_dim: int, out_dim: int, bias: bool = True, w_init_gain: str = "linear"):
        super().__init__()
        self.linear_layer = nn.Linear(in_dim, out_dim, bias=bias)
        nn.init.xavier_uniform_(self.linear_layer.weight, gain=nn.init.calculate_gain(w_init_gain))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear_layer(x)


def xavier_conv1d(in_channels: int, out_channels: int, kernel_size: int = 1, stride: int = 1,
                  padding: int | None = None, dilation: int = 1, bias: bool = True,
                  w_init_gain: str = "linear") -> nn.Conv1d:
    """nn.Conv1d with "same" padding for odd kernels (unless padding is given) and Xavier-uniform weights scaled by
    the gain of the nonlinearity that follows."""
    if padding is None:
        if kernel_size % 2 != 1:
            raise ValueError(f"a same-padded convolution needs an odd kernel size, got {kernel_size}")
        padding = dilation * (kernel_size - 1) // 2
    conv = nn.Conv1d(in_channels, out_channels, kernel_size, stride=stride, padding=padding, dilation=dilation,
                     bias=bias)
    nn.init.xavier_uniform_(conv.weight, gain=nn.init.calculate_gain(w_init_gain))
    return conv


class ConvNorm(nn.Module):
    """xavier_conv1d held in `conv`, the name NVIDIA's Tacotron 2 checkpoints use (`<name>.conv.weight`)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int = 1, stride: int = 1,
                 padding: int | None = None, dilation: int = 1, bias: bool = True, w_init_gain: str = "linear"):
        super().__init__()
        self.conv = xavier_conv1d(in_channels, out_channels, kernel_size, stride, padding, dilation, bias,
                                  w_init_gain)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def lengths_to_mask(lengths: torch.Tensor, max_length: int | None = None) -> torch.Tensor:
    """(B,) lengths -> (B, max_length) bool mask, True on valid positions."""
    if max_length is None:
        max_length = int(lengths.max())
    positions = torch.arange(max_length, device=lengths.device)
    return positions.unsqueeze(0) < lengths.unsqueeze(1)


def weight_norm(module: nn.Module) -> nn.Module:
    """Weight norm through parametrizations (the state dict then says parametrizations.weight.original0/1)."""
    return nn.utils.parametrizations.weight_norm(module)


def remove_weight_norm(model: nn.Module) -> nn.Module:
    """Fold every weight-norm parametrization into a plain weight, for inference."""
    for module in model.modules():
        if nn.utils.parametrize.is_parametrized(module, "weight"):
            nn.utils.parametrize.remove_parametrizations(module, "weight", leave_parametrized=True)
    return model


# ---------------------------------------------------------------------------------------------------------------
# Signals as one-row images
#
# A signal (B, C, T) can be seen as an image (B, C, 1, T) one row high, and every 1-d convolution as the 2-d one with a
# (1, k) kernel. On the CPU, oneDNN's 2-d convolutions on channels-last images (the C values of each sample side by
# side) ran HiFi-GAN's convolutions 1.0-2.7x and WaveGlow's 1.1-1.2x faster than its 1-d ones on the same numbers
# (experiments/cpu_convolution_layouts/), and element-wise layers keep the layout, so a model converts its input once
# and its output once. Conv1d and ConvTranspose1d below take either layout, with nn.Conv1d's parameters and state dict.


def as_image_rows(signal: torch.Tensor) -> torch.Tensor:
    """(B, C, T) -> (B, C, 1, T) in channels-last memory."""
    return signal.unsqueeze(2).contiguous(memory_format=torch.channels_last)


def from_image_rows(image: torch.Tensor) -> torch.Tensor:
    """(B, C, 1, T) -> (B, C, T), as a view."""
    return image.squeeze(2)


def _row_padding(padding) -> tuple[int, int] | str:
    return padding if isinstance(padding, str) else (0, padding[0])


class Conv1d(nn.Conv1d):
    """nn.Conv1d that also takes a signal as image rows (B, C, 1, T) and returns image rows."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 4:
            return super().forward(x)
        if self.padding_mode != "zeros":
            raise ValueError(f"image rows are implemented for zero padding only, not {self.padding_mode!r}")
        return F.conv2d(x, self.weight.unsqueeze(2), self.bias, (1, self.stride[0]), _row_padding(self.padding),
                        (1, self.dilation[0]), self.groups)


class ConvTranspose1d(nn.ConvTranspose1d):
    """nn.ConvTranspose1d that also takes a signal as image rows (B, C, 1, T) and returns image rows."""

    def forward(self, x: torch.Tensor, output_size: list[int] | None = None) -> torch.Tensor:
        if x.dim() != 4:
            return super().forward(x, output_size)
        if output_size is not None:
            raise ValueError("image rows take no output_size")
        return F.conv_transpose2d(x, self.weight.unsqueeze(2), self.bias, (1, self.stride[0]),
                                  (0, self.padding[0]), (0, self.output_padding[0]), self.groups,
                                  (1, self.dilation[0]))
