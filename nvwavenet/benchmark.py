"""Inference speed of nv-wavenet: every kernel variant and precision on a GPU, and the CPU incremental path.

    python -m nvwavenet.benchmark --output nvwavenet_benchmark.json        (or scripts/nvwavenet/benchmark_nvwavenet.sh)

For the "medium" (R64, S128, 20 layers) and "large" (R64, S256, 40 layers) models (A = 256, random weights: speed
does not depend on them) it measures, per variant and precision:
  * samples/sec of one utterance (batch 1), and
  * the largest batch whose per-utterance rate stays real-time at 16 kHz and at 24 kHz
    (the 2018 README's method: sweep the batch, keep the largest one at or above the audio rate),
plus the CPU path's samples/sec (nvwavenet.incremental.generate, batch 1). Timings include computing the
per-layer conditioning chunk by chunk, as generation does. On a machine without CUDA only the CPU path runs, and
the JSON says why. Prints a table and writes JSON.
"""
from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import torch

from nvwavenet import kernels
from nvwavenet.incremental import generate
from nvwavenet.model import WaveNet

MODELS = {  # name: (residual, skip, layers)
    "medium": (64, 128, 20),
    "large": (64, 256, 40),
}
AUDIO_CLASSES, N_MEL, HOP, MAX_DILATION = 256, 80, 256, 512
REAL_TIME_RATES = (16000, 24000)


def build_model(name: str) -> WaveNet:
    residual, skip, layers = MODELS[name]
    torch.manual_seed(0)
    return WaveNet(n_mel_channels=N_MEL, hop_length=HOP, residual_channels=residual, skip_channels=skip,
                   out_channels=AUDIO_CLASSES, n_layers=layers, max_dilation=MAX_DILATION).eval()


def cpu_samples_per_second(model: WaveNet, samples: int) -> float:
    mel = torch.randn(1, N_MEL, max(1, samples // HOP))
    start = time.perf_counter()
    generated = generate(model, mel, generator=torch.Generator().manual_seed(0))
    return generated.shape[1] / (time.perf_counter() - start)


def gpu_samples_per_second(vocoder: kernels.KernelVocoder, variant: str, batch: int, samples: int) -> float:
    """Per-utterance samples/sec at this batch size (batch utterances advance together)."""
    mel = torch.randn(batch, N_MEL, max(1, samples // HOP), device=vocoder.device)
    vocoder.generate_classes(mel[:, :, :1], variant)  # warm-up: first launch, allocations
    torch.cuda.synchronize()
    start = time.perf_counter()
    classes = vocoder.generate_classes(mel, variant)
    torch.cuda.synchronize()
    return classes.shape[1] / (time.perf_counter() - start)


def largest_real_time_batch(rate_at, target: float, max_batch: int) -> int:
    """Largest batch b <= max_batch with rate_at(b) >= target (0 if even batch 1 is too slow). The rate falls as
    the batch grows, so double until it drops below the target, then bisect between the last two. A batch the
    kernel cannot launch at all has rate 0 (see benchmark_gpu), so it ends the search like a slow one."""
    if rate_at(1) < target:
        return 0
    good, bad = 1, None
    while bad is None and good < max_batch:
        trial = min(2 * good, max_batch)
        if rate_at(trial) >= target:
            good = trial
        else:
            bad = trial
    while bad is not None and bad - good > 1:
        middle = (good + bad) // 2
        good, bad = (middle, bad) if rate_at(middle) >= target else (good, middle)
    return good


def benchmark_gpu(model_name: str, variants: list[str], precisions: list[str], samples: int, max_batch: int,
                  rows: list[dict], auto_batches: list[int] = (1,), on_row=None) -> None:
    """Per variant and precision: the batch-1 rate and the real-time batch search (one row each), then one "auto"
    row per batch in auto_batches: every variant's rate there and which one KernelVocoder's "auto" picks."""
    model = build_model(model_name)
    for precision in precisions:
        vocoder = kernels.KernelVocoder(model, precision)
        rates: dict[str, dict[int, float]] = {variant: {} for variant in variants}
        unlaunchable: dict[str, dict[int, str]] = {variant: {} for variant in variants}

        def rate_at(variant: str, batch: int) -> float:
            if batch not in rates[variant]:
                try:
                    rates[variant][batch] = gpu_samples_per_second(vocoder, variant, batch, samples)
                except (ValueError, torch.OutOfMemoryError) as error:
                    # This batch does not fit (co-resident blocks, size limits, memory): not real time either.
                    unlaunchable[variant][batch] = str(error).splitlines()[0]
                    rates[variant][batch] = 0.0
                    torch.cuda.empty_cache()
            return rates[variant][batch]

        failed = set()
        for variant in variants:
            row = {"model": model_name, "implementation": variant, "precision": precision}
            try:
                row["samples_per_second"] = rate_at(variant, 1)
                if 1 in unlaunchable[variant]:
                    raise ValueError(unlaunchable[variant][1])
                for target in REAL_TIME_RATES:
                    row[f"max_real_time_batch_{target // 1000}khz"] = largest_real_time_batch(
                        lambda batch: rate_at(variant, batch), target, max_batch)
                row["measured"] = {str(b): r for b, r in sorted(rates[variant].items())}
                if unlaunchable[variant]:
                    row["not_launchable"] = {str(b): e for b, e in sorted(unlaunchable[variant].items())}
            except (ValueError, RuntimeError) as error:  # a variant that cannot run this model says why
                row["error"] = str(error)
                failed.add(variant)
            rows.append(row)
            print(format_row(row), flush=True)
            if on_row is not None:
                on_row()
        for batch in auto_batches:
            measured = {variant: rate_at(variant, batch) for variant in variants if variant not in failed}
            measured = {variant: rate for variant, rate in measured.items() if rate > 0}
            if not measured:
                continue
            row = {"model": model_name, "implementation": "auto", "precision": precision, "batch": batch,
                   "rates": measured, "fastest": max(measured, key=measured.get)}
            try:
                row["auto_choice"] = vocoder._choose(batch, "auto").variant
                row["auto_is_fastest"] = row["auto_choice"] == row["fastest"]
                # auto times each kernel once on 512 samples: a near tie may go either way, so give the margin
                row["auto_rate_vs_fastest"] = measured.get(row["auto_choice"], 0.0) / measured[row["fastest"]]
            except (ValueError, RuntimeError) as error:
                row["error"] = str(error)
            rows.append(row)
            print(format_auto_row(row), flush=True)
            if on_row is not None:
                on_row()


def format_auto_row(row: dict) -> str:
    if "error" in row:
        return f"{row['model']:7s} {'auto':10s} {row['precision']:5s} batch {row['batch']}: {row['error']}"
    rates = ", ".join(f"{v} {r:,.0f}" for v, r in row["rates"].items())
    return (f"{row['model']:7s} {'auto':10s} {row['precision']:5s} batch {row['batch']}: picks "
            f"{row['auto_choice']} ({row['auto_rate_vs_fastest']:.0%} of the fastest, {row['fastest']}); {rates}")


def format_row(row: dict) -> str:
    if "error" in row:
        return f"{row['model']:7s} {row['implementation']:10s} {row['precision']:5s} not run: {row['error']}"
    batches = "".join(f" {row.get(f'max_real_time_batch_{r // 1000}khz', '-'):>12}" for r in REAL_TIME_RATES)
    return (f"{row['model']:7s} {row['implementation']:10s} {row['precision']:5s} "
            f"{row['samples_per_second']:>14,.0f}{batches}")


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", choices=sorted(MODELS), default=sorted(MODELS, reverse=True))
    parser.add_argument("--variants", nargs="+", choices=list(kernels.VARIANTS), default=list(kernels.VARIANTS))
    parser.add_argument("--precisions", nargs="+", choices=list(kernels.PRECISIONS),
                        default=list(kernels.PRECISIONS))
    parser.add_argument("--gpu-samples", type=int, default=16384, help="samples per timed GPU run")
    parser.add_argument("--cpu-samples", type=int, default=512, help="samples for the (slow) CPU path")
    parser.add_argument("--max-batch", type=int, default=512, help="largest batch the real-time search tries")
    parser.add_argument("--auto-batches", type=int, nargs="*", default=[1, 8, 64],
                        help="batch sizes at which every variant is timed and \"auto\"'s pick is checked")
    parser.add_argument("--output", type=Path, default=Path("nvwavenet_benchmark.json"))
    args = parser.parse_args(argv)

    usable, reason = kernels.cuda_status()
    results = {"machine": platform.node(), "torch": torch.__version__, "cpu_threads": torch.get_num_threads(),
               "gpu": {"available": usable, "reason": reason}, "rows": []}
    if usable:
        results["gpu"]["name"] = torch.cuda.get_device_name()
        results["gpu_samples"] = args.gpu_samples

    def save() -> None:  # after every row, so that a run cut short still leaves what it measured
        args.output.write_text(json.dumps(results, indent=2))
    header = f"{'model':7s} {'path':10s} {'prec':5s} {'samples/s (B=1)':>14s}" + "".join(
        f" {'RT batch ' + str(r // 1000) + 'k':>12s}" for r in REAL_TIME_RATES)
    print(header)
    for model_name in args.models:
        row = {"model": model_name, "implementation": "cpu", "precision": "fp32",
               "samples_per_second": cpu_samples_per_second(build_model(model_name), args.cpu_samples)}
        results["rows"].append(row)
        print(format_row(row), flush=True)
        save()
        if usable:
            benchmark_gpu(model_name, args.variants, args.precisions, args.gpu_samples, args.max_batch,
                          results["rows"], args.auto_batches, on_row=save)
    if not usable:
        print(f"GPU rows not run: {reason}")
    save()
    print(f"wrote {args.output}")
    return results


if __name__ == "__main__":
    main()
