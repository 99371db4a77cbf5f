"""HiFi-GAN generator inference speed: samples/s, real-time factor and measured latency percentiles per
(preset, batch size, mel frames), weight norm folded away as inference runs it.

    python -m scripts.hifigan.benchmark_hifigan [--presets v1 v2] [--batch-sizes 1 8 16] [--frames 100 400 800 1200] \
        [--repeats 10] [--warmup 2] [--cpu] [--threads N] [--with-weight-norm] [--json out.json]
    python -m scripts.hifigan.benchmark_hifigan --quick      # a smoke test: v2, batch 1, 100 frames, 2 repeats

Random weights at the preset's size (the time does not depend on the weights) and a random log mel. Each cell runs
--warmup untimed calls, then --repeats timed ones; the latency statistics are common.inference_args' (mean, std and
numpy's empirical p50/p90/p95/p99 over the repeats, not a normal-distribution estimate). RTF is seconds of audio per
second of compute (above 1: faster than real time), samples/s the audio samples made per second over the batch.
--with-weight-norm adds a row per cell with weight norm kept, as training runs the generator, for comparison.
Prints a table and writes every number as JSON (--json).
"""
from __future__ import annotations

import argparse
import json
import sys

import torch

from common.inference_args import Stopwatch, inference_device, latency_statistics
from hifigan.model import PRESETS, Generator

SAMPLING_RATE = 22050


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description="benchmark HiFi-GAN generator inference", allow_abbrev=False)
    parser.add_argument("--presets", nargs="+", default=["v1", "v2"], choices=sorted(PRESETS))
    parser.add_argument("--batch-sizes", nargs="+", type=int, default=[1, 8, 16])
    parser.add_argument("--frames", nargs="+", type=int, default=[100, 400, 800, 1200], help="mel frames per item")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--cpu", action="store_true", help="on the CPU even if a GPU is present")
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's)")
    parser.add_argument("--with-weight-norm", action="store_true", help="also time the generator with weight norm")
    parser.add_argument("--quick", action="store_true", help="smoke test: v2, batch 1, 100 frames, 2 repeats")
    parser.add_argument("--json", default=None, help="write the results here")
    return parser


def random_log_mel(batch_size: int, frames: int, device: torch.device) -> torch.Tensor:
    """A log mel of uniform values in [-9, 1) (the range of real ones; the time does not depend on them)."""
    return torch.rand(batch_size, 80, frames, generator=torch.Generator().manual_seed(0)).to(device) * 10.0 - 9.0


def measure(generator: Generator, batch_size: int, frames: int, repeats: int, warmup: int,
            device: torch.device) -> dict:
    mel = random_log_mel(batch_size, frames, device)
    latencies = []
    with torch.inference_mode():
        for run in range(warmup + repeats):
            with Stopwatch(device) as stopwatch:
                generator(mel)
            if run >= warmup:
                latencies.append(stopwatch.seconds)
    stats = latency_statistics(latencies)
    samples = batch_size * frames * generator.hop_length
    return {**stats, "samples_per_sec": samples / stats["latency_mean"],
            "real_time_factor": samples / SAMPLING_RATE / stats["latency_mean"],
            "audio_seconds_per_item": frames * generator.hop_length / SAMPLING_RATE}


def run(options: argparse.Namespace) -> list[dict]:
    if options.quick:
        options.presets, options.batch_sizes, options.frames = ["v2"], [1], [100]
        options.repeats, options.warmup = 2, 1
    if options.threads:
        torch.set_num_threads(options.threads)
    device = inference_device(options)
    results = []
    for preset in options.presets:
        torch.manual_seed(0)
        with_weight_norm = Generator(**PRESETS[preset]).to(device).eval()
        folded = Generator(**PRESETS[preset]).to(device).eval()
        folded.load_state_dict(with_weight_norm.state_dict())
        folded.remove_weight_norm()
        for generator in (with_weight_norm, folded):  # as inference runs it (hifigan/vocoder.py)
            generator.use_fast_layout_for(device)
        variants = [("removed", folded)] + ([("kept", with_weight_norm)] if options.with_weight_norm else [])
        for batch_size in options.batch_sizes:
            for frames in options.frames:
                for weight_norm, generator in variants:
                    record = {"preset": preset, "batch_size": batch_size, "mel_frames": frames,
                              "weight_norm": weight_norm, "device": str(device), "threads": torch.get_num_threads(),
                              **measure(generator, batch_size, frames, options.repeats, options.warmup, device)}
                    results.append(record)
                    print_row(record, header=len(results) == 1)
    return results


def print_row(record: dict, header: bool) -> None:
    if header:
        print(f"{'preset':6} {'batch':>5} {'frames':>6} {'WN':7} {'mean s':>8} {'p50 s':>8} {'p90 s':>8} "
              f"{'p99 s':>8} {'samples/s':>11} {'RTF':>7}")
    print(f"{record['preset']:6} {record['batch_size']:>5} {record['mel_frames']:>6} {record['weight_norm']:7} "
          f"{record['latency_mean']:>8.3f} {record['latency_p50']:>8.3f} {record['latency_p90']:>8.3f} "
          f"{record['latency_p99']:>8.3f} {record['samples_per_sec']:>11,.0f} {record['real_time_factor']:>7.2f}",
          flush=True)


def main(argv: list[str] | None = None) -> list[dict]:
    options = build_parser().parse_args(argv)
    if options.repeats < 1 or options.warmup < 0:
        raise SystemExit("error: --repeats must be at least 1 and --warmup at least 0")
    results = run(options)
    text = json.dumps({"hifigan_inference": results}, indent=1)
    if options.json:
        with open(options.json, "w") as handle:
            handle.write(text + "\n")
    else:
        print(text, file=sys.stdout)
    return results


if __name__ == "__main__":
    main()
