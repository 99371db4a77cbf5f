"""Command-line flags every model shares, and `--config-file` presets.

A config file is JSON: flag names (with dashes or underscores) to values, optionally grouped in sections such as
{"audio": {...}, "training": {...}}. Its values become defaults; flags given on the command line win. Unknown keys
are errors naming the file, as unknown flags are.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from common.audio import add_audio_args
from common.errors import UserError, UserFileNotFoundError
from common.schedules import add_schedule_args


# Flag value checkers: argparse turns their ArgumentTypeError into an error naming the flag and the value.


def _at_least(value, minimum):
    if value < minimum:
        raise argparse.ArgumentTypeError(f"must be >= {minimum:g}, got {value}")
    return value


def non_negative_int(text: str) -> int:
    return _at_least(int(text), 0)


def positive_int(text: str) -> int:
    return _at_least(int(text), 1)


def odd_positive_int(text: str) -> int:
    value = positive_int(text)
    if value % 2 == 0:
        raise argparse.ArgumentTypeError(f"must be odd (\"same\" padding), got {value}")
    return value


def probability(text: str) -> float:
    value = float(text)
    if not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(f"must be in [0, 1), got {value}")
    return value


def non_negative_float(text: str) -> float:
    return _at_least(float(text), 0.0)


def positive_float(text: str) -> float:
    value = float(text)
    if value <= 0.0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {value}")
    return value


def add_device_args(group) -> None:
    """--cpu, and --amp (fp16 autocast; training adds dynamic loss scaling) or --bf16: for training and inference."""
    group.add_argument("--cpu", action="store_true", help="run on the CPU even if a GPU is present")
    precision = group.add_mutually_exclusive_group()
    precision.add_argument("--amp", action="store_true", help="fp16 mixed precision")
    precision.add_argument("--bf16", action="store_true", help="bf16 mixed precision")


def add_training_args(parser: argparse.ArgumentParser) -> None:
    general = parser.add_argument_group("run")
    general.add_argument("-o", "--output", required=True, help="directory for checkpoints and logs (created)")
    general.add_argument("-d", "--dataset-path", default="./", help="root that filelist paths are relative to")
    general.add_argument("--log-file", default="nvlog.json", help="DLLogger JSON-lines file, relative to --output")
    general.add_argument("--tensorboard-dir", default=None, help="write TensorBoard events here")
    general.add_argument("--config-file", default=None, help="JSON file of flag defaults (a preset)")
    general.add_argument("--seed", type=int, default=1234, help="seeds data order, dropout and init on every rank")
    general.add_argument("--dry-run", action="store_true",
                         help="print the resolved flags and model configuration, and exit without training")
    general.add_argument("--quiet", action="store_true", help="no progress bar or per-iteration stdout lines")

    training = parser.add_argument_group("training (the run ends at --epochs or --max-updates, whichever comes first)")
    training.add_argument("--epochs", type=int, default=None, help="passes over the training set")
    training.add_argument("--max-updates", type=int, default=None, help="optimizer steps")
    training.add_argument("--epochs-per-checkpoint", type=non_negative_int, default=50,
                          help="checkpoint every N epochs (0: only at the end)")
    training.add_argument("--save-interval-updates", "--iters-per-checkpoint", dest="save_interval_updates",
                          type=int, default=0, help="also checkpoint every N optimizer steps (0: off)")
    training.add_argument("--val-interval-updates", type=int, default=0,
                          help="validate every N optimizer steps instead of at the end of each epoch (0: off)")
    training.add_argument("--checkpoint-path", default="", help="resume from this checkpoint")
    training.add_argument("--resume-from-last", action="store_true",
                          help="resume from checkpoint_<model>_last.pt in --output if it exists")
    add_device_args(training)
    training.add_argument("--tf32", action=argparse.BooleanOptionalAction, default=True,
                          help="TF32 matmuls and convolutions on Ampere and newer GPUs")
    training.add_argument("--compile", action=argparse.BooleanOptionalAction, default=False,
                          help="torch.compile the model's hot loops (what each family compiles: README)")
    training.add_argument("--cudnn-enabled", action=argparse.BooleanOptionalAction, default=True)
    training.add_argument("--cudnn-benchmark", action=argparse.BooleanOptionalAction, default=False)
    training.add_argument("--num-workers", type=int, default=2, help="data loader worker processes")
    training.add_argument("--val-interval-epochs", type=positive_int, default=1,
                          help="validate every N epochs and after the last (without --val-interval-updates)")
    training.add_argument("--epochs-this-job", type=non_negative_int, default=0,
                          help="stop after N epochs of this invocation, with a checkpoint, and exit 0; "
                               "--resume-from-last goes on (0: no limit)")
    training.add_argument("--max-skipped-steps", type=non_negative_int, default=0,
                          help="after N steps in a row skipped for a non-finite loss or gradient, stop with an "
                               "error naming the last checkpoint (0: never; with --amp leave room for the loss "
                               "scaler's first overflows, e.g. 100)")
    training.add_argument("--benchmark-epochs-num", type=non_negative_int, default=0,
                          help="log the mean throughput of the last N epochs as train_benchmark_items_per_sec")

    retention = parser.add_argument_group(
        "checkpoint retention (periodic checkpoints; the best one and the `last` link are always kept)")
    retention.add_argument("--keep-last-checkpoints", type=non_negative_int, default=0,
                           help="keep the newest N periodic checkpoints and delete older ones once a newer one is "
                                "written (0: keep all, the default)")
    retention.add_argument("--keep-every-updates", type=non_negative_int, default=0,
                           help="never delete a checkpoint written at a multiple of N optimizer steps")
    retention.add_argument("--keep-every-epochs", type=non_negative_int, default=0,
                           help="never delete a checkpoint written at the end of a multiple of N epochs")
    retention.add_argument("--no-save", action="store_true",
                           help="write no checkpoints at all (benchmarks)")

    optimization = parser.add_argument_group("optimization")
    optimization.add_argument("-lr", "--learning-rate", type=float, required=True)
    optimization.add_argument("--weight-decay", type=float, default=1e-6)
    optimization.add_argument("--grad-clip-thresh", type=float, default=1.0,
                              help="max gradient norm (0: no clipping; the norm is still logged)")
    optimization.add_argument("-bs", "--batch-size", type=int, default=None,
                              help="items per batch, per process (models that batch by size take their own flag)")
    optimization.add_argument("--grad-accumulation", type=int, default=1,
                              help="batches accumulated into one optimizer step")
    add_schedule_args(optimization)

    data = parser.add_argument_group("dataset")
    data.add_argument("--training-files", default="filelists/ljs_audio_text_train_filelist.txt")
    data.add_argument("--validation-files", default="filelists/ljs_audio_text_val_filelist.txt")

    add_audio_args(parser)

    distributed = parser.add_argument_group("distributed (launch with torchrun or python -m multiproc)")
    distributed.add_argument("--dist-backend", default=None, choices=["nccl", "gloo"],
                             help="default: nccl on GPUs, gloo on CPUs")


def read_config_file(path: str | Path, parser: argparse.ArgumentParser) -> dict:
    """Flatten a JSON preset into {dest: value}, rejecting keys that are no flag of this parser."""
    path = Path(path)
    try:
        content = json.loads(path.read_text())
    except FileNotFoundError:
        raise UserFileNotFoundError(f"--config-file {path} does not exist")
    except json.JSONDecodeError as error:
        raise UserError(f"--config-file {path} is not valid JSON: {error}")
    flat = {}
    for key, value in content.items():
        if isinstance(value, dict):  # a section such as "audio"
            flat.update(value)
        else:
            flat[key] = value
    destinations = {action.dest for action in parser._actions}
    values = {}
    for key, value in flat.items():
        dest = key.replace("-", "_")
        if dest not in destinations:
            raise UserError(f"--config-file {path}: unknown setting '{key}'")
        values[dest] = value
    return values


def parse_args(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """parse_args that first applies --config-file as defaults (so the file may supply required flags)."""
    config_path = None
    for index, token in enumerate(argv):
        if token == "--config-file" and index + 1 < len(argv):
            config_path = argv[index + 1]
        elif token.startswith("--config-file="):
            config_path = token.split("=", 1)[1]
    if config_path is not None:
        values = read_config_file(config_path, parser)
        for action in parser._actions:
            if action.dest in values:
                action.required = False
        parser.set_defaults(**values)
    return parser.parse_args(argv)
