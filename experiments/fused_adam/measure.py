"""The optimizer step of each family's model: torch's Adam/AdamW looping over the tensors (--no-fused-optimizer, what
the reference runs on a CPU) against the fused kernel (fused=True, the default), and how far apart their weights are.

    python -m experiments.fused_adam.measure [--steps 5]

Each model is built as train.py builds it (its recipe's model and optimizers, at the sizes named below), with random
gradients of 1e-3 standard deviation. Both optimizers start from the same weights and gradients; each step is timed
(the median of --steps after one untimed), and after them the largest difference between the two sets of weights is
printed against the largest change either made.
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch

import train
from common.cpu import cpu_description
from common.registry import get_recipe
from common.trainer import default_optimizers

MODELS = {  # name: train.py's flags that size it
    "Tacotron 2, NVIDIA's size": ["-m", "Tacotron2"],
    "Tacotron 2, make demo's": ["-m", "Tacotron2", "--config-file", "configs/tacotron2_demo.json"],
    "WaveGlow, NVIDIA's size": ["-m", "WaveGlow"],
    "HiFi-GAN v1, G + MPD + MSD": ["-m", "HiFiGAN", "--hifigan-preset", "v1"],
    "wav2vec 2.0 Base": ["-m", "wav2vec2", "--data", "unused"],
    "mel inverter, make demo's": ["-m", "MelInverter", "--config-file", "configs/melinverter_demo.json"],
}


def trained_weights(flags: list[str], steps: int) -> tuple[list[float], list[torch.Tensor], list[torch.Tensor]]:
    """Step times, the weights before and after `steps` + 1 steps of the model's optimizers under these flags."""
    args = train.parse_run_args(flags + ["-o", "unused", "-lr", "1e-3"])
    recipe = get_recipe(args.model_name)
    torch.manual_seed(0)
    model = recipe.build_model(recipe.model_config(args))
    optimizers = (recipe.build_optimizers or default_optimizers)(model, args)
    parameters = [p for p in model.parameters() if p.requires_grad]
    before = [p.detach().clone() for p in parameters]
    generator = torch.Generator().manual_seed(1)
    for p in parameters:
        p.grad = torch.randn(p.shape, generator=generator) * 1e-3
    times = []
    for step in range(steps + 1):
        start = time.perf_counter()
        for optimizer in optimizers.values():
            optimizer.step()
        if step:
            times.append(time.perf_counter() - start)
    return times, before, [p.detach() for p in parameters]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--models", nargs="+", choices=list(MODELS), default=list(MODELS))
    options = parser.parse_args(argv)
    print(f"{cpu_description()}; torch {torch.__version__}, {torch.get_num_threads()} threads")
    print("| model | weights | tensors | looped step | fused step | speed-up | largest weight difference "
          "(of the largest change) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name in options.models:
        looped_times, before, looped = trained_weights(MODELS[name] + ["--no-fused-optimizer"], options.steps)
        fused_times, _, fused = trained_weights(MODELS[name], options.steps)
        looped_step, fused_step = statistics.median(looped_times), statistics.median(fused_times)
        difference = max((a - b).abs().max().item() for a, b in zip(looped, fused))
        change = max((a - b).abs().max().item() for a, b in zip(looped, before))
        print(f"| {name} | {sum(p.numel() for p in before) / 1e6:.1f} M | {len(before)} | "
              f"{looped_step * 1000:.1f} ms | {fused_step * 1000:.1f} ms | {looped_step / fused_step:.2f}x | "
              f"{difference:.1e} ({change:.1e}) |", flush=True)


if __name__ == "__main__":
    main()
