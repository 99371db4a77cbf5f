"""int8 convolutions (common/quantization.py's Int8Conv1d) beside float32 ones, layer by layer, on this CPU.

    python -m scripts.benchmark_int8_convolutions            # wav2vec 2.0 Base's extractor, HiFi-GAN v1's stages
    python -m scripts.benchmark_int8_convolutions --quick    # short inputs: a smoke test of the script

Each row is one convolution at the size a real call gives it (wav2vec 2.0 Base's feature extractor on a 6 s utterance;
HiFi-GAN v1's residual-block convolutions on 400 mel frames, one dilation per kernel), random weights, GELU-shaped
inputs: the best of --repeats calls of each, the ratio, and int8's largest difference from float32 as a share of the
float32 output's range. Int8Conv1d lays each output frame's receptive field out as a row (kernel x channels values)
before its int8 product; where a layer has few channels and a long kernel, that copy costs more than the int8
arithmetic saves, which is what the HiFi-GAN rows measure.
"""
from __future__ import annotations

import argparse

import torch
from torch import nn

from common.quantization import Int8Conv1d
from scripts.benchmark_speed import best_seconds

# (what, in and out channels, kernel, stride, dilation, input length in frames)
WAV2VEC2_BASE_6S = [("wav2vec 2.0 extractor layer 1", 512, 3, 2, 1, 19199),
                    ("wav2vec 2.0 extractor layer 2", 512, 3, 2, 1, 9599),
                    ("wav2vec 2.0 extractor layer 5", 512, 2, 2, 1, 1199)]
HIFIGAN_V1_400_FRAMES = [(f"HiFi-GAN v1 stage {stage}, kernel {kernel}", channels, kernel, 1, 3, frames)
                         for stage, (channels, frames) in enumerate([(256, 3200), (128, 25600), (64, 102400)], 1)
                         for kernel in (3, 7, 11)]


def measure(what: str, channels: int, kernel: int, stride: int, dilation: int, length: int, repeats: int) -> dict:
    torch.manual_seed(0)
    conv = nn.Conv1d(channels, channels, kernel, stride=stride, dilation=dilation,
                     padding=dilation * (kernel - 1) // 2 if stride == 1 else 0).eval()
    int8 = Int8Conv1d(conv)
    x = nn.functional.gelu(torch.randn(1, channels, length))
    with torch.inference_mode():
        exact, approximate = conv(x), int8(x)
        fp32_seconds = best_seconds(lambda: conv(x), repeats)
        int8_seconds = best_seconds(lambda: int8(x), repeats)
    error = float((approximate - exact).abs().max() / (exact.max() - exact.min()))
    return dict(what=what, channels=channels, kernel=kernel, stride=stride, dilation=dilation, length=length,
                fp32_seconds=fp32_seconds, int8_seconds=int8_seconds, speed_up=fp32_seconds / int8_seconds,
                error_share_of_range=error)


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="inputs 64 times shorter, one repeat")
    parser.add_argument("--repeats", type=int, default=None, help="timed calls per layer and precision (default 5)")
    options = parser.parse_args(argv)
    repeats = options.repeats or (1 if options.quick else 5)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, CPU capability "
          f"{torch.backends.cpu.get_cpu_capability()}; best of {repeats} calls")
    print(f"{'convolution':34} {'channels':>8} {'kernel':>6} {'frames':>7} {'fp32':>9} {'int8':>9} {'ratio':>6} "
          f"{'error':>6}")
    rows = []
    for what, channels, kernel, stride, dilation, length in WAV2VEC2_BASE_6S + HIFIGAN_V1_400_FRAMES:
        row = measure(what, channels, kernel, stride, dilation, max(length // 64, 64) if options.quick else length,
                      repeats)
        print(f"{what:34} {channels:8} {kernel:6} {row['length']:7} {row['fp32_seconds'] * 1e3:7.1f}ms "
              f"{row['int8_seconds'] * 1e3:7.1f}ms {row['speed_up']:5.2f}x {row['error_share_of_range']:6.2%}",
              flush=True)
        rows.append(row)
    return rows


if __name__ == "__main__":
    main()
