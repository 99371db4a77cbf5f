"""The settings of a training run that every model shares, as a typed dataclass whose fields are train.py's flags.

TrainingSettings is what the trainer (common/trainer.py), the resume logic (common/training_state.py) and the LR
schedule read. A family that has flags of its own subclasses it (tacotron2/recipe.py: Tacotron2TrainingSettings,
...) and names the subclass in its Recipe.settings; its recipe's hooks get an instance of that subclass. Each field
is a flag (common.arguments.flag) in the --help group its metadata names; train.py adds the flags of the family's
class (add_training_args) and builds the instance from the parsed flags (config_from_args), so the command line, a
--config-file preset and the Python API go through the same fields:

    settings = Tacotron2TrainingSettings(output="run", learning_rate=1e-3, epochs=10, batch_size=8)
    Trainer(tacotron2.recipe.RECIPE, settings, model_config=...).train()

The audio flags (common.arguments.add_audio_args) are its `audio` field, an AudioParams; the model's flags are the
family's model-config dataclass, whose dict the trainer takes beside the settings.
"""
from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass

from common.arguments import (ChoosePrecision, add_audio_args, add_dataclass_args, argument_group, flag,
                              non_negative_float, non_negative_int, not_a_flag, positive_float, positive_int,
                              required_flag)
from common.audio import AudioParams
from common.schedules import SCHEDULES

RUN = "run"
TRAINING = "training (the run ends at --epochs or --max-updates, whichever comes first)"
RETENTION = ("checkpoint retention (periodic checkpoints; the best one and the `last` link are always kept)")
OPTIMIZATION = "optimization"
DATASET = "dataset"
DISTRIBUTED = "distributed (launch with torchrun or python -m multiproc)"


@dataclass(kw_only=True)
class TrainingSettings:
    """train.py's shared flags, field for flag (`--max-updates` is max_updates)."""
    # ---- the run
    output: str = required_flag("directory for checkpoints and logs (created)", aliases=["-o"], group=RUN)
    dataset_path: str = flag("./", "root that filelist paths are relative to", aliases=["-d"], group=RUN)
    log_file: str = flag("nvlog.json", "DLLogger JSON-lines file, relative to --output", group=RUN)
    tensorboard_dir: str | None = flag(None, "write TensorBoard events here", group=RUN)
    seed: int = flag(1234, "seeds data order, dropout and init on every rank", type=non_negative_int, group=RUN)
    quiet: bool = flag(False, "no progress bar or per-iteration stdout lines", group=RUN)

    # ---- how long, how often, from where
    epochs: int | None = flag(None, "passes over the training set", type=non_negative_int, group=TRAINING)
    max_updates: int | None = flag(None, "optimizer steps", type=non_negative_int, group=TRAINING)
    epochs_per_checkpoint: int = flag(50, "checkpoint every N epochs (0: only at the end)", type=non_negative_int,
                                      group=TRAINING)
    save_interval_updates: int = flag(0, "also checkpoint every N optimizer steps (0: off)", type=non_negative_int,
                                      aliases=["--iters-per-checkpoint"], group=TRAINING)
    val_interval_updates: int = flag(0, "validate every N optimizer steps instead of at the end of each epoch "
                                        "(0: off)", type=non_negative_int, group=TRAINING)
    checkpoint_path: str = flag("", "resume from this checkpoint", group=TRAINING)
    resume_from_last: bool = flag(False, "resume from checkpoint_<model>_last.pt in --output if it exists",
                                  group=TRAINING)
    warm_start: str | None = flag(None, "start from the weights of a trained checkpoint (ours or NVIDIA's) that fit, "
                                        "with a fresh optimizer at step 0 (a new voice or language; Tacotron 2 and "
                                        "WaveGlow)", metavar="CKPT", group=TRAINING)
    ignore_layers: list[str] = flag([], "with --warm-start: weights left as initialised, by parameter name or module "
                                        "prefix (e.g. embedding); weights of another shape are left anyway",
                                    metavar="NAME", group=TRAINING)
    # ---- the device and precision (common.arguments.add_device_args's flags)
    cpu: bool = flag(False, "run on the CPU even if a GPU is present", group=TRAINING)
    amp: bool = flag(False, "fp16 mixed precision", action=ChoosePrecision, group=TRAINING)
    bf16: bool = flag(False, "bf16 mixed precision", action=ChoosePrecision, group=TRAINING)
    fp32: bool = flag(False, "full precision (the default, but for HiFi-GAN and wav2vec 2.0 on a CPU that computes "
                             "bf16 natively, which train in bf16; the last of --amp, --bf16 and --fp32 wins, over a "
                             "preset's too)", action=ChoosePrecision, group=TRAINING)
    tf32: bool = flag(True, "TF32 matmuls and convolutions on Ampere and newer GPUs", group=TRAINING)
    compile: bool = flag(False, "torch.compile the model's hot loops (what each family compiles: "
                                "<family>/README.md)", action=argparse.BooleanOptionalAction, group=TRAINING)
    cudnn_enabled: bool = flag(True, None, group=TRAINING)
    cudnn_benchmark: bool = flag(False, None, action=argparse.BooleanOptionalAction, group=TRAINING)
    num_workers: int = flag(2, "data loader worker processes", type=non_negative_int, group=TRAINING)
    val_interval_epochs: int = flag(1, "validate every N epochs and after the last (without --val-interval-updates)",
                                    type=positive_int, group=TRAINING)
    epochs_this_job: int = flag(0, "stop after N epochs of this invocation, with a checkpoint, and exit 0; "
                                   "--resume-from-last goes on (0: no limit)", type=non_negative_int, group=TRAINING)
    max_skipped_steps: int = flag(0, "after N steps in a row skipped for a non-finite loss or gradient, stop with an "
                                     "error naming the last checkpoint (0: never; with --amp leave room for the loss "
                                     "scaler's first overflows, e.g. 100)", type=non_negative_int, group=TRAINING)
    benchmark_epochs_num: int = flag(0, "log the mean throughput of the last N epochs as "
                                        "train_benchmark_items_per_sec", type=non_negative_int, group=TRAINING)

    # ---- which periodic checkpoints stay
    keep_last_checkpoints: int = flag(0, "keep the newest N periodic checkpoints and delete older ones once a newer "
                                         "one is written (0: keep all, the default)", type=non_negative_int,
                                      group=RETENTION)
    keep_every_updates: int = flag(0, "never delete a checkpoint written at a multiple of N optimizer steps",
                                   type=non_negative_int, group=RETENTION)
    keep_every_epochs: int = flag(0, "never delete a checkpoint written at the end of a multiple of N epochs",
                                  type=non_negative_int, group=RETENTION)
    no_save: bool = flag(False, "write no checkpoints at all (benchmarks)", group=RETENTION)

    # ---- the optimizer and its learning-rate schedule (common/schedules.py)
    learning_rate: float = required_flag(None, type=non_negative_float, aliases=["-lr"], group=OPTIMIZATION)
    weight_decay: float = flag(1e-6, None, type=non_negative_float, group=OPTIMIZATION)
    grad_clip_thresh: float = flag(1.0, "max gradient norm (0: no clipping; the norm is still logged)",
                                   type=non_negative_float, group=OPTIMIZATION)
    batch_size: int | None = flag(None, "items per batch, per process (models that batch by size take their own "
                                        "flag)", type=positive_int, aliases=["-bs"], group=OPTIMIZATION)
    grad_accumulation: int = flag(1, "batches accumulated into one optimizer step", type=positive_int,
                                  group=OPTIMIZATION)
    fused_optimizer: bool = flag(True, "Adam/AdamW as one fused kernel over all the weights (torch's fused=True: the "
                                       "update equal to rounding, the optimizer step 2-6x faster on a CPU: "
                                       "experiments/fused_adam); --no-fused-optimizer: torch's loop over the tensors",
                                 action=argparse.BooleanOptionalAction, group=OPTIMIZATION)
    lr_schedule: str = flag("epoch-anneal", "epoch-anneal: NVIDIA's Tacotron 2/WaveGlow steps at --anneal-steps; "
                                            "warmup-polynomial: linear warm-up then polynomial decay to "
                                            "--final-lr-scale at --max-updates; tri-stage: warm-up, hold, exponential "
                                            "decay (wav2vec 2.0)", choices=SCHEDULES, group=OPTIMIZATION)
    anneal_steps: list[int] = flag([], "epochs at which the learning rate is annealed (epoch-anneal)", nargs="*",
                                   group=OPTIMIZATION)
    anneal_factor: float = flag(0.1, None, choices=[0.1, 0.3], group=OPTIMIZATION)
    warmup_updates: int = flag(0, "linear warm-up length in optimizer steps", group=OPTIMIZATION)
    hold_updates: int = flag(0, "tri-stage: steps at the full rate", group=OPTIMIZATION)
    decay_updates: int = flag(0, "tri-stage: steps of exponential decay", group=OPTIMIZATION)
    init_lr_scale: float = flag(0.01, "tri-stage: multiplier at step 0", group=OPTIMIZATION)
    final_lr_scale: float = flag(0.0, "multiplier at the end of the decay (tri-stage: must be > 0)",
                                 group=OPTIMIZATION)
    lr_power: float = flag(1.0, "warmup-polynomial: the decay's power", group=OPTIMIZATION)

    # ---- the data
    training_files: str = flag("filelists/ljs_audio_text_train_filelist.txt", None, group=DATASET)
    validation_files: str = flag("filelists/ljs_audio_text_val_filelist.txt", None, group=DATASET)

    # ---- several processes
    dist_backend: str | None = flag(None, "default: nccl on GPUs, gloo on CPUs", choices=["nccl", "gloo"],
                                    group=DISTRIBUTED)
    distributed_timeout: float = flag(30.0, "how long a collective may wait for the other ranks before the run ends "
                                            "(torch's process-group timeout); a rank that fails stops the others at "
                                            "once anyway, so this only bounds a rank that hangs without failing",
                                      type=positive_float, metavar="MINUTES", group=DISTRIBUTED)

    # ---- the audio: AudioParams of the audio flags (common.arguments.add_audio_args), which every run has
    audio: AudioParams = not_a_flag("the audio flags: --sampling-rate, --filter-length, --hop-length, ...",
                                    AudioParams())


def flag_values(settings: TrainingSettings) -> dict:
    """{field: value} of the settings' flags (what checkpoints record as the run's "args"; not the audio)."""
    return {field.name: getattr(settings, field.name) for field in dataclasses.fields(settings)
            if "set_by" not in field.metadata}


def default_of(settings_class: type, name: str, default) -> dataclasses.Field:
    """The field `name` of settings_class (its flag, help and checks) with another default: for a family whose
    reference trains with other values of a shared flag (HiFi-GAN's AdamW weight decay of 0.01)."""
    field = next(field for field in dataclasses.fields(settings_class) if field.name == name)
    return dataclasses.field(default=default, metadata=field.metadata)


def add_training_args(parser: argparse.ArgumentParser, settings_class: type = TrainingSettings) -> None:
    """The flags of settings_class (TrainingSettings or a family's subclass of it), the audio flags, and the two that
    only the command line has: --config-file and --dry-run."""
    run = argument_group(parser, RUN)
    run.add_argument("--config-file", default=None, help="JSON file of flag defaults (a preset)")
    run.add_argument("--dry-run", action="store_true",
                     help="print the resolved flags and model configuration, and exit without training")
    add_dataclass_args(parser, settings_class)
    add_audio_args(parser)
