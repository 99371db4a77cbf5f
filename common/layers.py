"""Layers shared by the models: linear and 1-d convolution with Xavier initialisation, masks, weight norm."""
from __future__ import annotations

import torch
from torch import nn


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
