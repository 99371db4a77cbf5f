"""Training throughput of any model: items/sec (mel frames for Tacotron 2, samples for vocoders) after warm-up.

    python -m scripts.benchmark_training --warmup 3 --iterations 20 -- -m Tacotron2 -o /tmp/bench -bs 16 -lr 1e-3 \
        --epochs 1 -d data/synthetic --training-files ... --validation-files ...

Everything after `--` is a train.py command line. Batches cycle through the training set; nothing is saved.
--profile N then runs N more steps under torch.profiler and prints its top operations by self time (where a step's
time goes: tacotron2/RESULTS.md quotes one).

    python -m scripts.benchmark_training --compare "--dropout 0.0" -- <train.py flags>

--compare FLAGS times a second model, built from the same command line with FLAGS added, step for step beside the
first: one step of each in turn (each first on alternate steps), on the same batches. A machine whose speed drifts
over minutes (this 2-core one does, by 10 % between two runs of the same command) slows both alike, so their ratio,
"speed_up" (the first's mean step time over the second's), holds where two separate runs would not. Both start from
the same seed, and each draws its dropout from a generator state of its own, so their training losses are two
curves of one run (`--compare=--bf16`: bf16's against fp32's):
"loss_curve" gives each run's mean train_loss over each tenth of the steps (warm-up included), and
"last_tenth_loss_relative_difference" how far the second's last tenth lies from the first's.

    python -m scripts.benchmark_training --warmup 0 --iterations 200 --compare=--bf16 -- -m Tacotron2 ...
"""
from __future__ import annotations

import argparse
import json
import shlex
import sys
import time

import numpy as np
import torch

import train
from scripts.benchmark_speed import print_top_operations


def cycling_batches(trainer):
    """The trainer's training batches, from the first again once they run out."""
    trainer.model.train()
    trainer.train_sampler.set_epoch(0)
    while True:
        yield from trainer.train_loader


def timed_step(trainer, batch) -> tuple[float, dict]:
    """One training step (host-to-device copy included, as in training): its seconds and its record (items summed
    over ranks, train_loss)."""
    start = time.perf_counter()
    record = trainer.train_step([batch])
    if trainer.device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - start, record


def random_state() -> dict:
    """torch's global generators (the CPU's, and each GPU's), which dropout draws from."""
    return {"cpu": torch.get_rng_state(), "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else []}


def set_random_state(state: dict) -> None:
    torch.set_rng_state(state["cpu"])
    if state["cuda"]:
        torch.cuda.set_rng_state_all(state["cuda"])


def loss_curve(losses: list[float], pieces: int = 10) -> list[float]:
    """The mean loss over each of `pieces` equal runs of steps (fewer when there are fewer steps)."""
    pieces = min(pieces, len(losses))
    return [float(np.mean(chunk)) for chunk in np.array_split(np.asarray(losses, dtype=float), pieces)]


def summary(trainer, args, times: list[float], items: list[float]) -> dict:
    return {"model": args.model_name, "device": str(trainer.device), "batch_size": args.batch_size,
            "precision": "fp16" if args.amp else "bf16" if args.bf16 else (
                "tf32" if args.tf32 and trainer.device.type == "cuda" else "fp32"),  # --tf32 is the default
            "world_size": trainer.context.world_size, "iterations": len(times),
            f"{trainer.recipe.items_unit}_per_sec": sum(items) / sum(times),
            f"{trainer.recipe.items_unit}_per_step": float(np.mean(items)),
            "iteration_time_mean": float(np.mean(times)), "iteration_time_median": float(np.median(times)),
            "iteration_time_std": float(np.std(times)), "torch_threads": torch.get_num_threads()}


def main() -> None:
    argv = sys.argv[1:]
    if "--" not in argv:
        raise SystemExit("usage: python -m scripts.benchmark_training [--warmup N] [--iterations N] [--json F] "
                         "[--profile N] [--compare FLAGS] -- <train.py flags>")
    split = argv.index("--")
    parser = argparse.ArgumentParser(description="benchmark training throughput")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--json", default=None, help="also write the result here")
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="then profile N more steps and print the top operations (0: off)")
    parser.add_argument("--compare", default=None, metavar="FLAGS",
                        help="also time the same command line with these train.py flags added, step by step beside it "
                             "(quoted; a single flag with '=': --compare=--compile)")
    options = parser.parse_args(argv[:split])
    if options.profile < 0:
        parser.error(f"--profile must be 0 (off) or a number of steps, got {options.profile}")
    if options.compare is not None and options.profile:
        parser.error("--profile and --compare are separate runs: give one of them")
    train_argv = argv[split + 1:]

    from common.registry import get_recipe
    from common.trainer import Trainer

    command_lines = [train_argv] + ([train_argv + shlex.split(options.compare)] if options.compare is not None else [])
    runs = []
    for command_line in command_lines:
        args = train.parse_run_args(command_line)  # as train.py reads them (presets, the reference's spellings)
        trainer = Trainer.from_args(get_recipe(args.model_name), args)
        runs.append({"args": args, "trainer": trainer, "batches": cycling_batches(trainer), "times": [], "items": [],
                     "losses": [], "random_state": random_state()})
    for step in range(options.warmup + options.iterations):
        # In turn, so that a drifting machine slows each alike; and first on alternate steps, since on this CPU the
        # first step of each pair measured up to 17 % slower than the second with identical flags.
        for run in runs if step % 2 == 0 else runs[::-1]:
            set_random_state(run["random_state"])  # each run draws its dropout from its own stream, as if alone
            seconds, record = timed_step(run["trainer"], next(run["batches"]))
            run["random_state"] = random_state()
            run["losses"].append(float(record["train_loss"]))
            if step >= options.warmup:
                run["times"].append(seconds)
                run["items"].append(record["items"])
    results = [{**summary(run["trainer"], run["args"], run["times"], run["items"]),
                "loss_curve": loss_curve(run["losses"])} for run in runs]
    if options.compare is None:
        result = results[0]
    else:
        first, second = results[0]["loss_curve"][-1], results[1]["loss_curve"][-1]
        result = {"baseline": results[0], "compared": {"flags": options.compare, **results[1]},
                  "speed_up": results[0]["iteration_time_mean"] / results[1]["iteration_time_mean"],
                  "last_tenth_loss_relative_difference": (second - first) / abs(first)}
    print(json.dumps(result, indent=2))
    if options.json:
        with open(options.json, "w") as handle:
            json.dump(result, handle, indent=2)
    if options.profile > 0:
        trainer, batches = runs[0]["trainer"], runs[0]["batches"]
        steps = [next(batches) for _ in range(options.profile)]  # loaded first: the profile is the steps alone
        print_top_operations(lambda: [trainer.train_step([batch]) for batch in steps],
                             f"== torch.profiler: {options.profile} training steps, self time")


if __name__ == "__main__":
    main()
