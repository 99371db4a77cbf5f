"""One short generation of each nvwavenet kernel variant and precision, checked against float64: the program to run
under NVIDIA's compute-sanitizer.

    PYTORCH_NO_CUDA_MEMORY_CACHING=1 compute-sanitizer --tool memcheck --error-exitcode 3 \
        python3 -m scripts.nvwavenet.sanitize_nvwavenet [--variants single dual persistent] [--precisions fp32 fp16]

(scripts/gpu_checks.sh runs it under memcheck, racecheck, synccheck and initcheck.) Without PyTorch's caching
allocator every tensor is its own cudaMalloc, so memcheck sees the true end of each buffer. The model is small
(R 64, S 128, 4 layers) and short (24 samples in chunks of 10, so a relaunch carries state over) with two batch
groups of two columns, so that the dual and persistent hand-offs between blocks and groups all happen, and the
dumps of every activation are written, which exercises their indexing too. Each run is also compared with the
float64 reference, since a sanitizer slows the blocks down unevenly and can expose an ordering bug as a wrong
value rather than as a report. Exit status 1 if any comparison fails.
"""
from __future__ import annotations

import argparse
import sys

import torch

from nvwavenet import kernels
from tests.nvwavenet.kernel_reference import TOLERANCE, check_sampling, inputs, random_export, reference

R, S, A, LAYERS, MAX_DILATION = 64, 128, 256, 4, 4
BATCH, PER_BLOCK, SAMPLES, CHUNK = 4, 2, 24, 10


def check(variant: str, precision: str) -> str:
    """'' if the kernel's dumps match the float64 reference, else what differs."""
    exported = random_export(R, S, A, LAYERS, MAX_DILATION, seed=21)
    weights = kernels.pack_weights(exported, precision).to("cuda")
    conditioning, forced, selectors = inputs(R, LAYERS, BATCH, SAMPLES, A, seed=22)
    run = kernels.run_kernels(kernels.cuda_library(), weights, lambda a, b: conditioning[a:b].cuda(),
                              selectors.cuda(), variant=variant, batch_per_block=PER_BLOCK,
                              output_blocks=BATCH // PER_BLOCK, forced_classes=forced, chunk_size=CHUNK, dumps=True,
                              stream=torch.cuda.current_stream().cuda_stream)
    torch.cuda.synchronize()
    expected = reference(kernels.effective_weights(exported, precision), conditioning, forced, A // 2)
    try:
        for name in ("x", "h", "skip", "logits"):
            torch.testing.assert_close(run.dumps[name].cpu().double(), expected[name], rtol=2 * TOLERANCE["rtol"],
                                       atol=2 * TOLERANCE["atol"], msg=lambda m: f"{name}: {m}")
        check_sampling(run.dumps["logits"].cpu(), selectors, run.classes.cpu())
    except AssertionError as error:
        return str(error).splitlines()[0]
    return ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", nargs="+", choices=list(kernels.VARIANTS), default=list(kernels.VARIANTS))
    parser.add_argument("--precisions", nargs="+", choices=list(kernels.PRECISIONS),
                        default=list(kernels.PRECISIONS))
    args = parser.parse_args(argv)
    usable, reason = kernels.cuda_status()
    if not usable:
        print(f"sanitize_nvwavenet: {reason}", file=sys.stderr)
        return 2
    kernels.cuda_library()  # build or load before the first timed/sanitized launch
    failures = 0
    for variant in args.variants:
        for precision in args.precisions:
            problem = check(variant, precision)
            failures += bool(problem)
            print(f"{variant:10s} {precision}: {'matches float64' if not problem else 'MISMATCH: ' + problem}",
                  flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
