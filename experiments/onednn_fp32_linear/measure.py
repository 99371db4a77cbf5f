"""fp32 linear layers through oneDNN instead of MKL on the CPU: one product's rate, and wav2vec 2.0 Base's recognizer
with every nn.Linear so computed, against PyTorch's own path (F.linear, which calls MKL's sgemm).

    python -m experiments.onednn_fp32_linear.measure [--quick]
    ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2 python -m experiments.onednn_fp32_linear.measure

On AMD processors MKL runs its AVX2 kernels whatever the CPU has; oneDNN runs its own best (AVX-512 where there is
one). `torch.ops.mkldnn._linear_pointwise` is the oneDNN linear layer that inductor uses on the CPU, an internal
operator (no autograd), so this is an inference-only measurement. Printed: GFLOP/s of a 1200 x 768 -> 3072 product
each way (the best of 10), then the recognizer's median seconds over 7 calls on one 6 s utterance each way, the two
taking turns, and the largest difference of their logits.
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from common.cpu import cpu_description
from scripts.benchmark_speed import best_seconds
from scripts.wav2vec2 import benchmark_wav2vec2
from wav2vec2.api import Recognizer


class OneDnnLinear(torch.nn.Module):
    """An nn.Linear's weights, multiplied through oneDNN's linear operator (inference only)."""

    def __init__(self, linear: torch.nn.Linear):
        super().__init__()
        self.weight, self.bias = linear.weight, linear.bias

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(-1, x.shape[-1])
        y = torch.ops.mkldnn._linear_pointwise(rows, self.weight, self.bias, "none", [], "")
        return y.reshape(*x.shape[:-1], y.shape[-1])


def use_onednn_linear(module: torch.nn.Module) -> int:
    """Every nn.Linear below module replaced by a OneDnnLinear of the same weights; how many."""
    count = 0
    for name, child in module.named_children():
        if type(child) is torch.nn.Linear:
            setattr(module, name, OneDnnLinear(child))
            count += 1
        else:
            count += use_onednn_linear(child)
    return count


def best_rate(run, flops: int, repeats: int = 10) -> float:
    return flops / best_seconds(run, repeats) / 1e9


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a tiny recognizer and product: a smoke test")
    options = parser.parse_args(argv)
    rows, inputs, outputs = (16, 32, 64) if options.quick else (1200, 768, 3072)
    x, weight, bias = torch.randn(rows, inputs), torch.randn(outputs, inputs), torch.randn(outputs)
    flops = 2 * rows * inputs * outputs
    report = {"cpu": cpu_description(), "threads": torch.get_num_threads(),
              "product_gflops": {
                  "mkl": best_rate(lambda: F.linear(x, weight, bias), flops),
                  "onednn": best_rate(lambda: torch.ops.mkldnn._linear_pointwise(x, weight, bias, "none", [], ""),
                                      flops)}}
    with tempfile.TemporaryDirectory() as scratch:
        checkpoint = Path(scratch) / "ctc.pt"
        benchmark_wav2vec2.save_random_ctc_checkpoint(checkpoint, "tiny" if options.quick else "base",
                                                      "[1,(1,2),1]" if options.quick else "[2,(8,4),2]")
        wav = benchmark_wav2vec2.write_batch_inputs(Path(scratch) / "utterance", 1, 1.0 if options.quick else 6.0,
                                                    1.0 if options.quick else 6.0)
        recognizers = {"mkl": Recognizer.from_checkpoint(checkpoint, "cpu", "fp32", 1),
                       "onednn": Recognizer.from_checkpoint(checkpoint, "cpu", "fp32", 1)}
        report["linear_layers"] = use_onednn_linear(recognizers["onednn"].model)
        batch = recognizers["mkl"].utterances(wav)
        logits = {name: recognizer.logits(batch)[0] for name, recognizer in recognizers.items()}
        report["logits_max_abs_difference"] = float((logits["onednn"] - logits["mkl"]).abs().max())
        times = {name: [] for name in recognizers}
        for _ in range(1 if options.quick else 7):
            for name, recognizer in recognizers.items():
                start = time.perf_counter()
                recognizer.logits(batch)
                times[name].append(time.perf_counter() - start)
    report["recognizer_seconds"] = {name: statistics.median(values) for name, values in times.items()}
    report["speed_up"] = report["recognizer_seconds"]["mkl"] / report["recognizer_seconds"]["onednn"]
    print(report)
    return report


if __name__ == "__main__":
    main()
