"""What every `inference.py -m NAME` shares: output, device and precision, seed, logging and benchmark flags, and the
helpers that act on them (device, autocast, timing, latency statistics), so each family's part stays about its model.

NVIDIA's inference scripts are read as train.py reads its training scripts (common/arguments.py:
read_reference_spellings): `--warmup_steps` is `--warmup-steps`, HiFi-GAN's `--repeats R` is a benchmark of R runs,
`--cuda` is accepted for compatibility, and a flag of theirs this project cannot honour is refused with why
(RefusedFlag). tests/data/nvidia_inference_command_lines.json holds the scripts' command lines, each run through
--dry-run.
"""
from __future__ import annotations

import argparse
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from common.arguments import add_compatibility_flags, add_device_args, non_negative_int, positive_int
from common.cpu import default_dtype
from common.errors import UserError
from common.logger import RunLogger
from common.output_folder import make_output_folder

WARMUP_RUNS = 3  # first-call costs (allocations, kernel selection, TorchScript's profiling runs) excluded from timings
LATENCY_PERCENTILES = (50, 90, 95, 99)


def add_inference_args(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("output, device and benchmarking (every model)")
    group.add_argument("-o", "--output", required=True, help="directory for the wavs (created)")
    group.add_argument("--suffix", default="", help="appended to output file names")
    add_device_args(group)
    group.add_argument("--seed", type=int, default=1234,
                       help="seeds every random draw (Tacotron 2's prenet dropout, the vocoder's noise)")
    group.add_argument("--log-file", default="nvlog.json",
                       help="DLLogger file, relative to --output; a path that already begins with --output (what "
                            "NVIDIA's scripts pass: $OUTPUT_DIR/nvlog_infer.json) is taken as it is")
    group.add_argument("--include-warmup", action="store_true",
                       help=f"run {WARMUP_RUNS} warm-up batches before the measured ones (first-call costs excluded)")
    group.add_argument("--warmup-steps", type=non_negative_int, default=None, metavar="N",
                       help=f"warm-up runs of the first batch before the measured ones (default: {WARMUP_RUNS} before "
                            "a --benchmark-repeats benchmark or with --include-warmup, else none)")
    group.add_argument("--benchmark-repeats", type=int, default=0,
                       help="benchmark mode: synthesize the first batch N times and report latency statistics")
    group.add_argument("--repeats", dest="benchmark_repeats", type=reference_repeats, default=argparse.SUPPRESS,
                       metavar="R", help="NVIDIA's HiFi-GAN/FastPitch inference: R passes for benchmarking; 1 (its "
                                         "default) is an ordinary run, more is --benchmark-repeats R")
    group.add_argument("--cudnn-benchmark", action=argparse.BooleanOptionalAction, default=False,
                       help="let cuDNN time its convolution algorithms for each new shape and keep the fastest")
    group.add_argument("--dry-run", action="store_true",
                       help="print the resolved flags and exit without loading anything")
    group.add_argument("--compile", action=argparse.BooleanOptionalAction, default=False,
                       help="torch.compile the model's hot loops (Tacotron 2's decoder step, WaveGlow's coupling "
                            "networks, the HiFi-GAN generator, the wav2vec 2.0 model; WaveNet runs its own kernels "
                            "and compiles nothing; docs/benchmarks.md: what pays where). The first batch pays the "
                            "compile time")
    group.add_argument("--quiet", action="store_true")
    add_compatibility_flags(parser, {"--cuda": dict(help="NVIDIA's switch to the GPU: a GPU is used here whenever "
                                                         "there is one (--cpu refuses it)")})


def reference_repeats(text: str) -> int:
    """NVIDIA's --repeats R -> --benchmark-repeats: R = 1 is its ordinary run (outputs written), more a benchmark."""
    repeats = positive_int(text)
    return 0 if repeats == 1 else repeats


class RefusedFlag(argparse.Action):
    """A flag of NVIDIA's command lines that this project cannot honour: giving it ends in one error line saying
    why and what to do instead, rather than being ignored. `nargs` as the reference's flag takes values."""

    def __init__(self, option_strings, dest, why: str, nargs=0, **keywords):
        super().__init__(option_strings, dest, nargs=nargs, default=argparse.SUPPRESS, **keywords)
        self.why = why

    def __call__(self, parser, namespace, values, option_string=None):
        raise argparse.ArgumentError(self, self.why)


def check_inference_args(args: argparse.Namespace) -> None:
    """What every part checks before loading anything; outside --dry-run it also creates -o/--output."""
    if args.benchmark_repeats < 0:
        raise UserError(f"--benchmark-repeats must be 0 (off) or more, got {args.benchmark_repeats}")
    if not args.dry_run:
        make_output_folder(args.output, "the outputs")


def inference_device(args: argparse.Namespace) -> torch.device:
    return torch.device("cpu") if args.cpu or not torch.cuda.is_available() else torch.device("cuda")


def inference_dtype(args: argparse.Namespace, bf16_within_tolerance: bool = False) -> torch.dtype:
    """--amp, --bf16 or --fp32 as given; none of them: common.cpu.default_dtype (bf16 on a CPU with native bf16
    where the part's family measured bf16 within its tolerance, else fp32)."""
    if args.amp or args.bf16 or args.fp32:
        return torch.float16 if args.amp else torch.bfloat16 if args.bf16 else torch.float32
    return default_dtype(inference_device(args), bf16_within_tolerance)


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


def log_file_path(args: argparse.Namespace) -> Path:
    """--log-file under --output, unless it is absolute or already begins with --output (NVIDIA's scripts pass
    $OUTPUT_DIR/nvlog_infer.json, a path from the current folder)."""
    output, log_file = Path(args.output), Path(args.log_file)
    if log_file.is_absolute() or log_file.parts[:len(output.parts)] == output.parts:
        return log_file
    return output / log_file


def open_run_logger(args: argparse.Namespace) -> RunLogger:
    output = Path(args.output)
    output.mkdir(parents=True, exist_ok=True)
    log_file = log_file_path(args)
    log_file.parent.mkdir(parents=True, exist_ok=True)
    return RunLogger(log_file)


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
    """The warm-up runs of --include-warmup (always before a benchmark), each with its own seed: --warmup-steps of
    them if given, else WARMUP_RUNS."""
    runs = args.warmup_steps
    if runs is None:
        runs = WARMUP_RUNS if force or args.include_warmup else 0
    for repeat in range(runs):
        measure(args.seed + repeat)
