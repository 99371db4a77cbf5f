"""1-d convolutions three ways on this CPU, layer by layer: float32 on (B, C, T) signals (PyTorch's usual layout),
float32 on the same signals as one-row channels-last images (common/layers.py), and int8 (common/quantization.py's
Int8Conv1d).

    python -m experiments.cpu_convolution_layouts.benchmark_convolutions  # wav2vec 2.0 Base, HiFi-GAN v1, WaveGlow-256
    python -m experiments.cpu_convolution_layouts.benchmark_convolutions --quick  # short inputs: a smoke test

Each row is one convolution at the size a real call gives it: wav2vec 2.0 Base's feature extractor on a 6 s
utterance; HiFi-GAN v1's residual-block convolutions on 400 mel frames (one dilation per kernel); WaveGlow-256's
coupling-network convolutions on 86 mel frames. Random weights, GELU-shaped inputs. It prints the best of --repeats
calls of each way, each one's ratio to the first, and int8's largest difference from float32 as a share of the
float32 output's range. Int8Conv1d lays each output frame's receptive field out as a row (kernel x channels values)
before its int8 product; where a layer has few channels and a long input, that copy costs more than the int8
arithmetic saves.
"""
from __future__ import annotations

import argparse

import torch
from torch import nn

from common.layers import Conv1d, as_image_rows
from common.quantization import Int8Conv1d
from scripts.benchmark_speed import best_seconds

# (what, in channels, out channels, kernel, stride, dilation, input length in frames)
WAV2VEC2_BASE_6S = [("wav2vec 2.0 extractor layer 1", 512, 512, 3, 2, 1, 19199),
                    ("wav2vec 2.0 extractor layer 2", 512, 512, 3, 2, 1, 9599),
                    ("wav2vec 2.0 extractor layer 5", 512, 512, 2, 2, 1, 1199)]
HIFIGAN_V1_400_FRAMES = [(f"HiFi-GAN v1 stage {stage}, kernel {kernel}", channels, channels, kernel, 1, 3, frames)
                         for stage, (channels, frames) in enumerate([(256, 3200), (128, 25600), (64, 51200),
                                                                     (32, 102400)], 1)
                         for kernel in (3, 7, 11)]
WAVEGLOW_256_86_FRAMES = [("WaveGlow-256 gated layer, dilation 1", 256, 512, 3, 1, 1, 2752),
                          ("WaveGlow-256 gated layer, dilation 64", 256, 512, 3, 1, 64, 2752),
                          ("WaveGlow-256 residual and skip (1x1)", 256, 512, 1, 1, 1, 2752)]
LAYERS = WAV2VEC2_BASE_6S + HIFIGAN_V1_400_FRAMES + WAVEGLOW_256_86_FRAMES


def measure(what: str, in_channels: int, out_channels: int, kernel: int, stride: int, dilation: int, length: int,
            repeats: int) -> dict:
    torch.manual_seed(0)
    conv = Conv1d(in_channels, out_channels, kernel, stride=stride, dilation=dilation,
                  padding=dilation * (kernel - 1) // 2 if stride == 1 else 0).eval()
    int8 = Int8Conv1d(conv)
    x = nn.functional.gelu(torch.randn(1, in_channels, length))
    rows = as_image_rows(x)
    with torch.inference_mode():
        exact, approximate = conv(x), int8(x)
        seconds = {"fp32": best_seconds(lambda: conv(x), repeats),
                   "fp32_image_rows": best_seconds(lambda: conv(rows), repeats),
                   "int8": best_seconds(lambda: int8(x), repeats)}
    error = float((approximate - exact).abs().max() / (exact.max() - exact.min()))
    return dict(what=what, in_channels=in_channels, out_channels=out_channels, kernel=kernel, stride=stride,
                dilation=dilation, length=length, seconds=seconds,
                speed_up={way: seconds["fp32"] / value for way, value in seconds.items()},
                int8_error_share_of_range=error)


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="inputs 64 times shorter, one repeat")
    parser.add_argument("--repeats", type=int, default=None, help="timed calls per layer and way (default 5)")
    options = parser.parse_args(argv)
    repeats = options.repeats or (1 if options.quick else 5)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, CPU capability "
          f"{torch.backends.cpu.get_cpu_capability()}; best of {repeats} calls; ratios to float32 (B, C, T)")
    print(f"{'convolution':38} {'in':>4} {'out':>4} {'k':>3} {'frames':>7} {'fp32':>9} {'image rows':>17} "
          f"{'int8':>17} {'int8 error':>10}")
    rows = []
    for what, in_channels, out_channels, kernel, stride, dilation, length in LAYERS:
        row = measure(what, in_channels, out_channels, kernel, stride, dilation,
                      max(length // 64, 64 * dilation) if options.quick else length, repeats)
        seconds, speed_up = row["seconds"], row["speed_up"]
        print(f"{what:38} {in_channels:4} {out_channels:4} {kernel:3} {row['length']:7} "
              f"{seconds['fp32'] * 1e3:7.1f}ms "
              f"{seconds['fp32_image_rows'] * 1e3:7.1f}ms {speed_up['fp32_image_rows']:5.2f}x "
              f"{seconds['int8'] * 1e3:7.1f}ms {speed_up['int8']:5.2f}x {row['int8_error_share_of_range']:10.2%}",
              flush=True)
        rows.append(row)
    return rows


if __name__ == "__main__":
    main()
