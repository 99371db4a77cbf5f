"""What every `inference.py -m NAME` shares: output, device and precision, seed, logging and benchmark flags, and the
helpers that act on them (device, autocast, timing, latency statistics), so each family's part stays about its model.
"""
from __future__ import annotations

import argparse
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from common.arguments import add_device_args
from common.errors import UserError
from common.logger import RunLogger

WARMUP_RUNS = 3  # first-call costs (allocations, kernel selection, TorchScript's profiling runs) excluded from timings
LATENCY_PERCENTILES = (50, 90, 95, 99)


def add_inference_args(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("output, device and benchmarking (every model)")
    group.add_argument("-o", "--output", required=True, help="directory for the wavs (created)")
    group.add_argument("--suffix", default="", help="appended to output file names")
    add_device_args(group)
    group.add_argument("--seed", type=int, default=1234,
                       help="seeds every random draw (Tacotron 2's prenet dropout, the vocoder's noise)")
    group.add_argument("--log-file", default="nvlog.json", help="DLLogger file, relative to --output")
    group.add_argument("--include-warmup", action="store_true",
                       help=f"run {WARMUP_RUNS} warm-up batches before the measured ones (first-call costs excluded)")
    group.add_argument("--benchmark-repeats", type=int, default=0,
                       help="benchmark mode: synthesize the first batch N times and report latency statistics")
    group.add_argument("--compile", action=argparse.BooleanOptionalAction, default=False,
                       help="torch.compile the model's hot loops (Tacotron 2's decoder step, WaveGlow's coupling "
                            "networks; tacotron2/RESULTS.md: what pays where). The first batch pays the compile time")
    group.add_argument("--quiet", action="store_true")


def check_inference_args(args: argparse.Namespace) -> None:
    if args.benchmark_repeats < 0:
        raise UserError(f"--benchmark-repeats must be 0 (off) or more, got {args.benchmark_repeats}")


def inference_device(args: argparse.Namespace) -> torch.device:
    return torch.device("cpu") if args.cpu or not torch.cuda.is_available() else torch.device("cuda")


def inference_dtype(args: argparse.Namespace) -> torch.dtype:
    return torch.float16 if args.amp else torch.bfloat16 if args.bf16 else torch.float32


def autocast(device: torch.device, dtype: torch.dtype):
    """Autocast to the chosen precision; none for fp32 (autocast would still cost a dispatch per op)."""
    return nullcontext() if dtype == torch.float32 else torch.autocast(device.type, dtype=dtype)


class Stopwatch:
    """Wall time of a block, waiting for the GPU's queued work at both ends so the time is the block's own."""

    def __init__(self, device: torch.device):
        self.device = device
        self.seconds = 0.0

    def _synchronize(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize()

    def __enter__(self) -> "Stopwatch":
        self._synchronize()
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc_info) -> None:
        self._synchronize()
        self.seconds = time.perf_counter() - self.start


def open_run_logger(args: argparse.Namespace) -> RunLogger:
    output = Path(args.output)
    output.mkdir(parents=True, exist_ok=True)
    return RunLogger(output / args.log_file)


def latency_statistics(latencies: list[float]) -> dict:
    """Mean, std and measured percentiles (numpy's linear interpolation between the observed latencies)."""
    values = np.asarray(latencies)
    stats = {"latency_mean": float(values.mean()), "latency_std": float(values.std()), "repeats": len(values)}
    for percentile in LATENCY_PERCENTILES:
        stats[f"latency_p{percentile}"] = float(np.percentile(values, percentile))
    return stats


def benchmark(measure: Callable[[int], dict], args: argparse.Namespace, averaged: tuple[str, ...]) -> dict:
    """--benchmark-repeats N: measure(seed) -> a record with 'latency' (seconds), run N times after the warm-up.
    Returns the latency statistics and the mean of each `averaged` key of the records."""
    warm_up(measure, args, force=True)
    records = [measure(args.seed) for _ in range(args.benchmark_repeats)]
    summary = latency_statistics([record["latency"] for record in records])
    for key in averaged:
        summary[key] = float(np.mean([record[key] for record in records]))
    return summary


def warm_up(measure: Callable[[int], object], args: argparse.Namespace, force: bool = False) -> None:
    """The warm-up runs of --include-warmup (always before a benchmark), each with its own seed."""
    if force or args.include_warmup:
        for repeat in range(WARMUP_RUNS):
            measure(args.seed + repeat)
