"""One checkpoint whose weights are the mean of several checkpoints of the same run (checkpoint averaging: the
last few checkpoints of a run, written every N updates, often recognize better than any one of them).

    python -m scripts.average_checkpoints -o output/demo_asr/checkpoint_wav2vec2_averaged.pt \
        output/demo_asr/checkpoint_wav2vec2_*_*.pt

The output is the newest input (by its update count) with its floating-point weights replaced by the mean over all
inputs, and no optimizer or loss-scaler state: inference.py, scripts.intelligibility and the other readers of a
trained model take it like any checkpoint; a training cannot resume from it. Inputs of another model, architecture
or set of weights end in one `error: ...` line naming the file.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

from common.checkpoint import load_checkpoint, save_checkpoint
from common.errors import UserError, exit_on_user_error

COMPARED = ("model_name", "model_config")  # what must agree for a mean of the weights to be one model


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoints", nargs="+", help="two or more checkpoints of one run")
    parser.add_argument("-o", "--output", required=True, help="the averaged checkpoint to write")
    return parser


def average(checkpoints: dict[str, dict]) -> dict:
    """The mean checkpoint of {name: checkpoint}; the names are for the error messages."""
    (first_name, first), *others = checkpoints.items()
    for name, checkpoint in others:
        for key in COMPARED:
            if checkpoint.get(key) != first.get(key):
                raise UserError(f"{name}: its {key} differs from {first_name}'s; average checkpoints of one run")
        if checkpoint["state_dict"].keys() != first["state_dict"].keys():
            raise UserError(f"{name}: its weights are not those of {first_name}; average checkpoints of one run")
    newest = max(checkpoints.values(), key=lambda checkpoint: checkpoint.get("iteration", 0))
    state = {}
    for key, value in newest["state_dict"].items():
        if torch.is_floating_point(value):  # summed in float64, so that the mean does not depend on the order
            total = sum(checkpoint["state_dict"][key].double() for checkpoint in checkpoints.values())
            state[key] = (total / len(checkpoints)).to(value.dtype)
        else:  # counters and the like are the newest's
            state[key] = value
    return {**newest, "state_dict": state, "optimizers": {}, "scalers": {},
            "averaged_from": [str(name) for name in checkpoints]}


def main(argv: list[str] | None = None) -> dict:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    if len(set(args.checkpoints)) < 2:
        raise UserError("give two or more checkpoints to average")
    if Path(args.output).resolve() in {Path(path).resolve() for path in args.checkpoints}:
        raise UserError(f"-o {args.output} is one of the inputs; write the average to a new file")
    checkpoints = {path: load_checkpoint(path) for path in args.checkpoints}
    for path, checkpoint in checkpoints.items():
        if "state_dict" not in checkpoint or "model_config" not in checkpoint:
            raise UserError(f"{path} is not a checkpoint of this project's training (no state_dict and model_config)")
    averaged = average(checkpoints)
    save_checkpoint(averaged, args.output)
    print(f"{args.output}: the mean of {len(checkpoints)} checkpoints "
          f"(updates {', '.join(str(c.get('iteration', '?')) for c in checkpoints.values())})")
    return averaged


if __name__ == "__main__":
    exit_on_user_error(main)
