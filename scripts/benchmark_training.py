"""Training throughput of any model: items/sec (mel frames for Tacotron 2, samples for vocoders) after warm-up.

    python -m scripts.benchmark_training --warmup 3 --iterations 20 -- -m Tacotron2 -o /tmp/bench -bs 16 -lr 1e-3 \
        --epochs 1 -d data/synthetic --training-files ... --validation-files ...

Everything after `--` is a train.py command line. Batches cycle through the training set; nothing is saved.
--profile N then runs N more steps under torch.profiler and prints its top operations by self time (where a step's
time goes: tacotron2/RESULTS.md quotes one).
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
import torch

import train
from scripts.benchmark_speed import print_top_operations


def main() -> None:
    argv = sys.argv[1:]
    if "--" not in argv:
        raise SystemExit("usage: python -m scripts.benchmark_training [--warmup N] [--iterations N] [--json F] "
                         "[--profile N] -- <train.py flags>")
    split = argv.index("--")
    parser = argparse.ArgumentParser(description="benchmark training throughput")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--json", default=None, help="also write the result here")
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="then profile N more steps and print the top operations (0: off)")
    options = parser.parse_args(argv[:split])
    if options.profile < 0:
        parser.error(f"--profile must be 0 (off) or a number of steps, got {options.profile}")
    train_argv = argv[split + 1:]
    args = train.parse_run_args(train_argv)  # as train.py reads them (presets, the reference's spellings)

    from common.registry import get_recipe
    from common.trainer import Trainer

    trainer = Trainer(get_recipe(args.model_name), args)
    trainer.model.train()
    trainer.train_sampler.set_epoch(0)
    times, items = [], []
    batches = iter(trainer.train_loader)

    def next_batch():
        nonlocal batches
        try:
            return next(batches)
        except StopIteration:
            batches = iter(trainer.train_loader)
            return next(batches)

    for step in range(options.warmup + options.iterations):
        batch = next_batch()
        start = time.perf_counter()
        record = trainer.train_step([batch])  # host-to-device copy included, as in training
        if trainer.device.type == "cuda":
            torch.cuda.synchronize()
        if step >= options.warmup:
            times.append(time.perf_counter() - start)
            items.append(record["items"])  # summed over ranks
    result = {"model": args.model_name, "device": str(trainer.device), "batch_size": args.batch_size,
              "precision": "fp16" if args.amp else "bf16" if args.bf16 else (
                  "tf32" if args.tf32 and trainer.device.type == "cuda" else "fp32"),  # --tf32 is the default
              "world_size": trainer.context.world_size, "iterations": options.iterations,
              f"{trainer.recipe.items_unit}_per_sec": sum(items) / sum(times),
              "iteration_time_mean": float(np.mean(times)), "iteration_time_std": float(np.std(times)),
              "torch_threads": torch.get_num_threads()}
    print(json.dumps(result, indent=2))
    if options.json:
        with open(options.json, "w") as handle:
            json.dump(result, handle, indent=2)
    if options.profile > 0:
        steps = [next_batch() for _ in range(options.profile)]  # loaded first: the profile is the steps alone
        print_top_operations(lambda: [trainer.train_step([batch]) for batch in steps],
                             f"== torch.profiler: {options.profile} training steps, self time")


if __name__ == "__main__":
    main()
