"""The program to run under Nsight Compute to see why one nv-wavenet kernel variant is slower than another.

    ncu --kernel-name regex:persistent --launch-skip 1 --launch-count 1 --section SpeedOfLight \
        --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats \
        python3 -m scripts.nvwavenet.profile_kernels --variant persistent [--model medium] [--precision fp32]

(scripts/gpu_checks.sh's `ncu` stage runs it for every variant.) One warm-up generation, then one timed generation
of --samples samples (one chunk: one kernel launch) at batch 1, with the benchmark's random-weight model
(nvwavenet/benchmark.py). It prints the timed generation's samples/s, so the profile can be read beside the rate.
"""
from __future__ import annotations

import argparse
import sys
import time

import torch

from nvwavenet import kernels
from nvwavenet.benchmark import HOP, MODELS, N_MEL, build_model


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", choices=list(kernels.VARIANTS), required=True)
    parser.add_argument("--model", choices=list(MODELS), default="medium")
    parser.add_argument("--precision", choices=list(kernels.PRECISIONS), default="fp32")
    parser.add_argument("--samples", type=int, default=2048, help="samples of the profiled generation (one launch "
                                                                   "up to nvwavenet.kernels.DEFAULT_CHUNK)")
    args = parser.parse_args(argv)
    if args.samples < HOP:
        parser.error(f"--samples must be at least one mel frame, {HOP}")
    usable, reason = kernels.cuda_status()
    if not usable:
        print(f"error: profile_kernels needs the CUDA extension: {reason}", file=sys.stderr)
        return 2
    vocoder = kernels.KernelVocoder(build_model(args.model), args.precision)
    mel = torch.randn(1, N_MEL, args.samples // HOP, device=vocoder.device)
    vocoder.generate_classes(mel[:, :, :1], args.variant)  # the skipped launch: first use, allocations
    torch.cuda.synchronize()
    start = time.perf_counter()
    classes = vocoder.generate_classes(mel, args.variant)
    torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    print(f"{args.variant} {args.model} {args.precision}: {classes.shape[1]} samples in {seconds * 1e3:.1f} ms, "
          f"{classes.shape[1] / seconds:,.0f} samples/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
