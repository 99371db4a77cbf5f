"""Train any model of the framework.

    python train.py -m Tacotron2 -o output/ -lr 1e-3 --epochs 1501 -bs 48 -d data/LJSpeech-1.1 ...
    torchrun --nproc-per-node 8 train.py -m WaveGlow ...        # or: python -m multiproc train.py -m WaveGlow ...
    python train.py -m Tacotron2 --config-file configs/tacotron2_demo.json -o output/demo

`python train.py -m NAME --help` lists the flags of that model. The exit status is in EXIT_STATUS.
"""
from __future__ import annotations

import argparse
import json
import sys

from common.arguments import compatibility_group, parse_args, read_reference_spellings
from common.errors import USER_ERROR_EXIT_CODE, ArgumentParser
from common.preemption import PREEMPTED_EXIT_CODE
from common.registry import RECIPES, get_recipe, model_name_in
from common.torch_version import check_torch_version
from common.training_settings import TrainingSettings, add_training_args

EXIT_STATUS = (
    "exit status: 0 when the run is finished (--epochs, --max-updates or --epochs-this-job reached); "
    f"{PREEMPTED_EXIT_CODE} when SIGTERM or SIGUSR1 stopped it after the current step and a checkpoint (the same "
    f"command with --resume-from-last continues exactly); {USER_ERROR_EXIT_CODE} for a mistake in what was given "
    "(one `error: ...` line); anything else is a bug")


def build_parser(model_name: str | None) -> argparse.ArgumentParser:
    parser = ArgumentParser(description="Train a speech model", allow_abbrev=False, epilog=EXIT_STATUS)
    parser.add_argument("-m", "--model-name", required=True, choices=list(RECIPES))
    recipe = get_recipe(model_name) if model_name in RECIPES else None
    add_training_args(parser, recipe.settings if recipe is not None else TrainingSettings)
    if recipe is not None:
        recipe.add_args(parser)
    compatibility_group(parser)  # --help says that NVIDIA's `--flag_name` spellings are read
    return parser


def parse_run_args(argv: list[str]) -> argparse.Namespace:
    """train.py's flags for argv: the model's parser, the reference's spellings translated, presets applied."""
    model_name = model_name_in(argv)
    parser = build_parser(model_name)
    translate_argv = get_recipe(model_name).translate_argv if model_name in RECIPES else None
    argv = (translate_argv or read_reference_spellings)(argv, parser)
    return parse_args(parser, argv)


def main(argv: list[str] | None = None) -> None:
    check_torch_version()  # before any checkpoint is read: an older torch's weights_only can be bypassed
    argv = sys.argv[1:] if argv is None else argv
    args = parse_run_args(argv)
    recipe = get_recipe(args.model_name)
    if args.dry_run:
        print(json.dumps({"model_name": recipe.name, "model_config": recipe.model_config(args),
                          "args": vars(args)}, indent=2, default=str))
        return
    from common.trainer import Trainer

    trainer = Trainer.from_args(recipe, args)
    trainer.train()
    if trainer.exit_status:
        sys.exit(trainer.exit_status)


if __name__ == "__main__":
    from common.distributed import run_entry_point  # a user's mistake: one `error:` line and exit code 2

    run_entry_point(main)
