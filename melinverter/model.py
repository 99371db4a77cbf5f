"""The mel inverter: a small convolutional network that turns a log mel spectrogram back into the log magnitude of the
linear-frequency spectrogram it came from, so that Griffin-Lim can find its phase. Tacotron (Wang et al., 2017)
ended in such a post-processing net; Tacotron 2 replaced it with WaveNet.

Why learn it: 80 mel bands summarise 513 FFT bins, so the least-squares inverse (common/audio.py's griffin_lim) can
only spread each band's energy smoothly over its bins, and the harmonics that make a voice sound voiced are lost.
A network trained on a corpus learns what that speaker's spectrum looks like under each mel, harmonics included;
trained on an acoustic model's own (teacher-forced) mels, it also learns to undo that model's smoothing.

    log mel (B, n_mel, T)
      --conv (kernel k)--> C channels, ReLU
      --n_blocks x [x + ReLU(conv_k(x))]-->          residual blocks, each widening the context by k - 1 frames
      --1x1 conv--> n_fft_bins                        the learned part
      + a linear map of the log mel (kernel k)        the part a least-squares inverse would give
    = log magnitude (B, n_fft_bins, T)
"""
from __future__ import annotations

import torch
from torch import nn


class MelInverter(nn.Module):
    def __init__(self, n_mel_channels: int = 80, n_fft_bins: int = 513, channels: int = 128, kernel_size: int = 5,
                 n_blocks: int = 3):
        super().__init__()
        if kernel_size % 2 == 0:
            raise ValueError(f"kernel_size must be odd (centred convolutions keep the frame count), got {kernel_size}")
        padding = kernel_size // 2
        self.input = nn.Conv1d(n_mel_channels, channels, kernel_size, padding=padding)
        self.blocks = nn.ModuleList(nn.Conv1d(channels, channels, kernel_size, padding=padding)
                                    for _ in range(n_blocks))
        self.output = nn.Conv1d(channels, n_fft_bins, 1)
        self.linear = nn.Conv1d(n_mel_channels, n_fft_bins, kernel_size, padding=padding)

    def forward(self, log_mel: torch.Tensor) -> torch.Tensor:
        """(B, n_mel_channels, T) log mel -> (B, n_fft_bins, T) natural-log linear magnitude."""
        hidden = torch.relu(self.input(log_mel))
        for block in self.blocks:
            hidden = hidden + torch.relu(block(hidden))
        return self.output(hidden) + self.linear(log_mel)
