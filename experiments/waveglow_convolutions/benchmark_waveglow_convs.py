"""Time WaveGlow's convolution shapes written four ways, to see whether rewriting them would pay on this machine.

    python -m experiments.waveglow_convolutions.benchmark_waveglow_convs [--wn-channels 256] [--mel-frames 86]
        [--threads 2] [--repeats 10]

The shapes are one coupling layer's at batch 1 (positions = mel frames * 256 / 8 groups): the dilated kernel-3
convolution (in_layers), the conditioning 1x1 (cond_layers, 640 channels in), the residual/skip 1x1
(res_skip_layers). Each 1x1 is timed as PyTorch's conv1d (its own choice of kernel), conv1d with oneDNN turned off,
a matrix product in the same (channels, positions) layout, and a matrix product in (positions, channels) layout
(which would need the whole network kept in that layout). Prints milliseconds per call and GFLOP/s. Then it times
WaveGlow's inference on --mel-frames of random mel as it is and with every 1x1 convolution of its coupling networks
replaced by a batched matrix product, and prints the largest difference between the two audios.
"""
from __future__ import annotations

import argparse
import time

import torch
from torch import nn
from torch.nn import functional as F

from common.layers import remove_weight_norm
from waveglow.model import WaveGlow


def milliseconds(function, repeats: int) -> float:
    for _ in range(2):
        function()
    start = time.perf_counter()
    for _ in range(repeats):
        function()
    return (time.perf_counter() - start) / repeats * 1e3


class MatrixProduct1x1(nn.Module):
    """A 1x1 Conv1d's computation as a batched matrix product: bias + W (out, in) @ x (B, in, positions)."""

    def __init__(self, conv: nn.Conv1d):
        super().__init__()
        self.weight = conv.weight.detach().squeeze(-1)
        self.bias = conv.bias.detach() if conv.bias is not None else torch.zeros(self.weight.size(0))

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        return torch.baddbmm(self.bias[None, :, None], self.weight.expand(inputs.size(0), -1, -1), inputs)


def time_waveglow(wn_channels: int, mel_frames: int, repeats: int) -> float:
    """Prints both timings; returns the largest difference between the two audios."""
    torch.manual_seed(0)
    model = remove_weight_norm(WaveGlow(wn_channels=wn_channels).eval())
    for coupling in model.WN:
        # A new WaveGlow's last coupling layer is zero, which would hide every other layer from the audio.
        nn.init.normal_(coupling.end.weight, std=0.01)
    mel = torch.randn(1, 80, mel_frames)

    def infer() -> torch.Tensor:
        with torch.no_grad():
            return model.infer(mel, sigma=0.6, generator=torch.Generator().manual_seed(0))

    as_convolutions = infer()
    conv_ms = milliseconds(infer, repeats)
    for coupling in model.WN:
        for layers in (coupling.cond_layers, coupling.res_skip_layers):
            for index, layer in enumerate(layers):
                layers[index] = MatrixProduct1x1(layer)
        coupling.start, coupling.end = MatrixProduct1x1(coupling.start), MatrixProduct1x1(coupling.end)
    as_products = infer()
    product_ms = milliseconds(infer, repeats)
    difference = (as_convolutions - as_products).abs().max().item()
    print(f"WaveGlow-{wn_channels} inference, {mel_frames} mel frames: conv1d {conv_ms / 1e3:.2f} s, 1x1 layers as "
          f"matrix products {product_ms / 1e3:.2f} s; largest audio difference "
          f"{difference:.2g}")
    return difference


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wn-channels", type=int, default=256)
    parser.add_argument("--mel-frames", type=int, default=86, help="86 frames are 1 s of audio at 22050 Hz")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    positions, channels = args.mel_frames * 256 // 8, args.wn_channels
    print(f"positions {positions}, WN channels {channels}, {args.threads} threads, ms per call (GFLOP/s)")

    def report(name: str, flops: float, timings: dict[str, float]) -> None:
        cells = ", ".join(f"{way} {ms:.2f} ({flops / ms / 1e6:.0f})" for way, ms in timings.items())
        print(f"{name}: {cells}")

    generator = torch.Generator().manual_seed(0)
    hidden = torch.randn(1, channels, positions, generator=generator)
    weight = torch.randn(2 * channels, channels, 3, generator=generator)
    bias = torch.randn(2 * channels, generator=generator)
    report(f"in_layer k3 {channels}->{2 * channels}", 2 * 3 * channels * 2 * channels * positions,
           {"conv1d": milliseconds(lambda: F.conv1d(hidden, weight, bias, padding=1), args.repeats),
            "conv1d dilation 64": milliseconds(lambda: F.conv1d(hidden, weight, bias, dilation=64, padding=64),
                                               args.repeats)})
    for name, in_channels, out_channels in (("cond_layer", 640, 2 * channels), ("res_skip_layer", channels,
                                                                                   2 * channels)):
        inputs = torch.randn(1, in_channels, positions, generator=generator)
        weight = torch.randn(out_channels, in_channels, 1, generator=generator)
        bias = torch.randn(out_channels, generator=generator)
        matrix, positions_major = weight.squeeze(-1), inputs[0].t().contiguous()
        timings = {"conv1d": milliseconds(lambda: F.conv1d(inputs, weight, bias), args.repeats)}
        with torch.backends.mkldnn.flags(enabled=False):
            timings["conv1d without oneDNN"] = milliseconds(lambda: F.conv1d(inputs, weight, bias), args.repeats)
        timings["addmm (channels, positions)"] = milliseconds(
            lambda: torch.addmm(bias.unsqueeze(1), matrix, inputs[0]), args.repeats)
        timings["linear (positions, channels)"] = milliseconds(
            lambda: F.linear(positions_major, matrix, bias), args.repeats)
        report(f"{name} 1x1 {in_channels}->{out_channels}", 2 * in_channels * out_channels * positions, timings)
    time_waveglow(channels, args.mel_frames, max(1, args.repeats // 5))


if __name__ == "__main__":
    main()
