"""WaveGlow's training objective: the negative log-likelihood of the audio under the flow, per audio sample."""
from __future__ import annotations

import torch
from torch import nn

from waveglow.model import FlowOutput


class WaveGlowLoss(nn.Module):
    """(sum z^2 / (2 sigma^2) - sum log s - sum log|det W|) / number of audio samples.

    The constant 0.5 * log(2 pi sigma^2) per sample is left out, as in NVIDIA's implementation, so the numbers are
    comparable with its published curves (about -6 when trained). Every sum is taken in fp32, also under autocast:
    a batch of fp16 log s values easily sums past fp16's range.
    """

    def __init__(self, sigma: float = 1.0):
        super().__init__()
        if sigma <= 0:
            raise ValueError(f"WaveGlowLoss: sigma must be positive, got {sigma}")
        self.sigma = sigma

    def forward(self, output: FlowOutput) -> torch.Tensor:
        z, log_s_list, log_det_w_list = output
        z = z.float()
        log_s_total = torch.stack([log_s.float().sum() for log_s in log_s_list]).sum()
        log_det_w_total = torch.stack([log_det_w.float() for log_det_w in log_det_w_list]).sum()
        negative_log_likelihood = (z * z).sum() / (2 * self.sigma ** 2) - log_s_total - log_det_w_total
        return negative_log_likelihood / z.numel()  # z has B * groups * (L / groups) = B * L elements
