"""WaveGlow inference (mel -> audio) as one ONNX file, checked against PyTorch.

    python -m scripts.export_onnx -m WaveGlow --checkpoint W.pt -o FOLDER     # writes FOLDER/waveglow.onnx

Inputs: mel (B, n_mel, T) log mel; z (B, groups, T * hop_length / groups), the flow's noise already scaled by sigma:
z = sigma * standard normal noise, laid out as WaveGlow.forward's z (WaveGlow.infer's `noise`). Output: audio
(B, T * hop_length). Batch and frames are dynamic. The noise is an input, not drawn inside the graph, so the file is
deterministic (the check compares it with PyTorch exactly) and sigma stays the caller's choice at run time:
`infer(mel, sigma, noise)` in PyTorch is the file run on (mel, sigma * noise). The denoiser is not part of the file.

Weight norm is folded away and each invertible 1x1 convolution's inverse is computed once, in fp32, at export (PyTorch
caches it at the first inference; the cache cannot be traced), so the file holds the inverses as constants.
"""
from __future__ import annotations

import argparse
import copy
from pathlib import Path

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from common.onnx_export import export_and_check
from waveglow.model import WaveGlow

WAVEGLOW_FILE = "waveglow.onnx"
CHECK_SHAPES = ((1, 37), (3, 64))  # (batch, mel frames) of the two check inputs


class FixedInverse(nn.Module):
    """An Invertible1x1Conv's inverse with W^-1 computed once: what WaveGlow.infer calls (`inverse`)."""

    def __init__(self, inverse_weight: Tensor):
        super().__init__()
        self.register_buffer("inverse_weight", inverse_weight)

    def inverse(self, audio: Tensor) -> Tensor:
        return F.conv1d(audio, self.inverse_weight)


class WaveGlowInference(nn.Module):
    """(mel, z) -> audio: WaveGlow.infer(mel, sigma=1, noise=z) on a copy of the model whose 1x1 convolutions hold
    their inverses."""

    def __init__(self, model: WaveGlow):
        super().__init__()
        self.model = copy.deepcopy(model).float().eval()
        with torch.no_grad():
            for index, convolution in enumerate(self.model.convinv):
                self.model.convinv[index] = FixedInverse(convolution.inverse_weight().detach().clone())

    def forward(self, mel: Tensor, z: Tensor) -> Tensor:
        return self.model.infer(mel, sigma=1.0, noise=z)


def noise_shape(model: WaveGlow, batch: int, frames: int) -> tuple[int, int, int]:
    return batch, model.groups, frames * model.hop_length // model.groups


def check_inputs(model: WaveGlow, n_mel_channels: int, shapes=CHECK_SHAPES, seed: int = 0) -> list[dict[str, Tensor]]:
    """Log mels in a speech-like range and z at sigma 0.6 (inference's usual)."""
    generator = torch.Generator().manual_seed(seed)
    return [{"mel": torch.rand(batch, n_mel_channels, frames, generator=generator) * 13.0 - 11.0,
             "z": 0.6 * torch.randn(noise_shape(model, batch, frames), generator=generator)}
            for batch, frames in shapes]


def export(model: WaveGlow, folder: str | Path, opset: int | None = None, what: str = "ONNX export"
           ) -> dict[str, float]:
    """Write FOLDER/waveglow.onnx (weight norm must be folded away already: waveglow.vocoder.load_waveglow does it),
    checked on two batches of other sizes and lengths than the example's; returns its largest difference."""
    n_mel_channels = model.upsample.in_channels
    frames = torch.export.Dim("frames", min=2)
    batch = torch.export.Dim("batch", max=1024)
    samples_per_frame = model.hop_length // model.groups
    axes = {"mel": {0: batch, 2: frames}, "z": {0: batch, 2: frames * samples_per_frame}}
    (example,) = check_inputs(model, n_mel_channels, shapes=((2, 16),), seed=1)
    difference = export_and_check(WaveGlowInference(model), Path(folder) / WAVEGLOW_FILE, example, axes, ["audio"],
                                  check_inputs(model, n_mel_channels), opset, what=what)
    return {WAVEGLOW_FILE: difference}


def add_export_args(group: argparse._ArgumentGroup) -> None:
    group.add_argument("--wn-channels", type=int, default=None,
                       help="WaveGlow: for a checkpoint without a model config (NVIDIA's waveglow256: 256)")


def export_checkpoint(args: argparse.Namespace, folder: Path) -> dict[str, float]:
    """scripts/export_onnx.py -m WaveGlow (InferencePart.export_onnx); --wn-channels for a file without a config."""
    from waveglow.vocoder import load_waveglow

    model, _ = load_waveglow(args.checkpoint, torch.device("cpu"), args.wn_channels, flag="--checkpoint")
    return export(model, folder, args.opset, what="scripts.export_onnx")
