"""What a model family gives the shared trainer: one `Recipe` per folder (tacotron2/recipe.py, waveglow/recipe.py...).

train.py looks the recipe up by `-m NAME`, adds its flags to the parser, and hands it to common.trainer, which owns
everything else: devices, precision, DDP, the training loop, the LR schedule, checkpoints and logging. A recipe
says what is particular to its family: the model and its parts, the data and how it is batched, the loss, and
what validation measures. Only the first eight fields are required; docs/adding_a_family.md walks
through them.
"""
from __future__ import annotations

import argparse
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Protocol, runtime_checkable

import torch
from torch import nn
from torch.utils.data import Dataset, Sampler

from common.distributed import ModelParts
from common.training_settings import TrainingSettings

if TYPE_CHECKING:  # training_state builds the samplers of BatchingContext, below
    from common.training_state import ReferenceTrainingState


@dataclass(frozen=True)
class WeightsForExport:
    """A file that only its family can read, as an exported folder holds it (common/exported_weights.py)."""
    model_config: dict  # what the family's build_model (or build_exported_model) takes
    state_dict: dict[str, torch.Tensor]
    text: dict | None  # the text front-end's to_dict, or the CTC dictionary as {"symbols": [...]}
    audio_params: dict | None
    # metadata beyond the common keys, e.g. of weights that are one part of the training model
    extra_metadata: dict = field(default_factory=dict)
    training: dict = field(default_factory=dict)  # epoch, iteration where the file records them otherwise


@dataclass
class StepOutput:
    """What one forward pass on a batch gives the trainer."""
    loss: torch.Tensor  # scalar to minimise: a mean over the batch's loss items (see Recipe.loss_items)
    items: int  # throughput unit in this batch: mel frames (acoustic models) or audio samples (vocoders)
    metrics: dict[str, torch.Tensor] = field(default_factory=dict)  # extra scalars to log, e.g. gate_loss
    # In validation only (compute_loss sees model.training False): {name: sum} for a corpus-level metric, e.g.
    # {"word_errors": 12, "words": 80}. The trainer adds them over the whole validation set on every rank and sums
    # across ranks, then Recipe.validation_metrics(sums) gives what is logged (e.g. {"val_wer": 0.15}).
    sums: dict[str, float] = field(default_factory=dict)


@runtime_checkable
class TrainerView(Protocol):
    """What a recipe's own train_step may use of the trainer (common/trainer.py's Trainer is one): the building
    blocks of a step, run in this order for each optimizer: forward passes under autocast(), backward() of each
    micro-batch inside gradient_sync(part, last micro-batch), then step()."""
    device: torch.device
    iteration: int  # optimizer steps taken before this one
    model: nn.Module  # the whole model, not DDP-wrapped: for what must not synchronise (an EMA, a frozen part)
    optimizers: dict[str, torch.optim.Optimizer]  # by name, as Recipe.build_optimizers made them

    def autocast(self) -> AbstractContextManager:
        """The run's precision context (--amp, --bf16 or none)."""

    def gradient_sync(self, part: str, enabled: bool) -> AbstractContextManager:
        """Context for backward passes of `part`; enabled=False (a micro-batch before the last) keeps gradients
        local instead of all-reducing them."""

    def backward(self, loss: torch.Tensor, name: str, weight: float = 1.0) -> bool:
        """Backward of loss * weight for optimizer `name` through its loss scaler; False (and that optimizer's step
        skipped) when the loss is not finite on some rank."""

    def step(self, name: str) -> bool:
        """Unscale, clip, step and zero optimizer `name`; False when the step was skipped."""


@dataclass
class DataSplits:
    train: Dataset
    validation: Dataset
    collate: Callable[[list], Any]


@dataclass
class BatchingContext:
    """What a recipe's batch sampler needs to know about the run."""
    training: bool  # False: the validation set (no shuffling, nothing dropped)
    seed: int
    rank: int
    world_size: int


@dataclass(frozen=True)
class InPlaceStart:
    """A family's flag that goes on from the last checkpoint in -o/--output as --resume-from-last does, and changes
    the run once, on the first such load (HiFi-GAN's --fine-tuning: NVIDIA fine-tunes a trained vocoder on an
    acoustic model's mels in the base run's own folder). The epoch it started at is saved in every later checkpoint
    (`fine_tune_epoch_start`), so the next load in the folder resumes it and changes nothing again."""
    flag: str  # its spelling, for messages: "--fine-tuning"
    asked: Callable[[TrainingSettings], bool]  # whether the run's settings ask for it
    # (trainer, the base checkpoint) -> None, on the first load, after the base run's state is restored: the change
    # (HiFi-GAN: learning rates x --fine-tune-lr-factor); raises UserError where it cannot start.
    start: Callable[[Any, Path], None]
    no_base: str  # the error's advice where -o/--output holds no checkpoint to start from


@dataclass
class Recipe:
    name: str  # the -m value; also names checkpoints: checkpoint_<name>_<epoch>.pt
    items_unit: str  # "mel_frames" or "samples": what items/sec counts
    # The model's flags (its config dataclass, arg_parser.py) and the checks across them; the family's other flags
    # are the fields of `settings` below.
    add_args: Callable[[argparse.ArgumentParser], None]
    model_config: Callable[[argparse.Namespace], dict]  # constructor kwargs of the parsed flags, saved in checkpoints
    build_model: Callable[[dict], nn.Module]  # from model_config's dict (also used when loading for inference)
    build_data: Callable[[TrainingSettings, dict], DataSplits]  # (settings, model_config)
    batch_to_device: Callable[[Any, torch.device], Any]
    compute_loss: Callable[[nn.Module, Any, TrainingSettings], StepOutput]  # model may be DDP-wrapped
    task: str  # Hugging Face's pipeline tag for its model card: "text-to-speech" or "automatic-speech-recognition"
    description: str  # what the model is, in a sentence or two: the first words of its model card
    # The run's settings: TrainingSettings, or the family's subclass of it whose fields are its own training, data
    # and loss flags. Every hook below that takes settings gets an instance of this class.
    settings: type[TrainingSettings] = TrainingSettings

    # ---- the model -------------------------------------------------------------------------------------------
    # Training-only initialisation after build_model, e.g. Tacotron 2's re-draw of BatchNorm weights as NVIDIA does.
    init_weights: Callable[[nn.Module, TrainingSettings], None] | None = None
    # (model on its device, settings) -> None: with --compile, compile the family's hot modules in place
    # (torch.compile);
    # called before DDP wrapping. None: --compile compiles nothing for this family.
    compile_model: Callable[[nn.Module, TrainingSettings], None] | None = None
    # (model, optimizer steps taken) -> None, before every step and after a resume: for what changes with training
    # progress inside the model (wav2vec 2.0's quantizer temperature, a frozen encoder's unfreezing).
    set_num_updates: Callable[[nn.Module, int], None] | None = None
    # Names of the model's submodules that train as separate parts (a GAN's generator and discriminators): each is
    # wrapped for DDP on its own, and train_step gets them wrapped (`model.generator(...)` synchronises gradients).
    # Empty: the whole model is one part.
    parts: tuple[str, ...] = ()
    # True when a step may leave some parameters without gradients (LayerDrop, a frozen encoder): DDP then looks for
    # them every step (a small cost), instead of waiting for their gradients forever.
    find_unused_parameters: bool = False
    # (model, settings) -> {name: optimizer} (default: one Adam named "model" over every parameter at --learning-rate).
    # Per-group learning rates set here are kept: the schedule multiplies each group's own initial rate.
    build_optimizers: Callable[[nn.Module, TrainingSettings], dict[str, torch.optim.Optimizer]] | None = None
    # For several optimizers: train_step(parts, micro_batches, settings, trainer) -> StepOutput gets the parts
    # (DDP-wrapped
    # when distributed, by name: parts.generator) and the step's micro-batches (--grad-accumulation of them, on the
    # device), and trains them with the trainer's building blocks (TrainerView above).
    train_step: Callable[[ModelParts, list, TrainingSettings, TrainerView], StepOutput] | None = None
    # settings -> schedule (an object with multiplier(epoch, step) and state_dict()); default: --lr-schedule's.
    lr_schedule: Callable[[TrainingSettings], Any] | None = None

    # Whether --warm-start CKPT [--ignore-layers NAME ...] may start this family from trained weights with a fresh
    # optimizer and step count (common/training_state.py: warm_start). False: the flag is an error naming the family
    # (HiFi-GAN has its own --fine-tune-from).
    warm_start: bool = False

    # ---- the data --------------------------------------------------------------------------------------------
    # settings -> the text front-end (TTS symbols, ASR letters...) with to_dict(), saved in checkpoints; None: no text.
    text_processor: Callable[[TrainingSettings], Any] | None = None
    # (settings, dataset, context) -> a batch sampler with set_epoch(epoch, skip_batches) and len(), a pure function of
    # (seed, epoch) sharded by rank (common/sampler.py has two). Default: EpochBatchSampler of --batch-size items.
    batch_sampler: Callable[[TrainingSettings, Dataset, BatchingContext], Sampler] | None = None
    # (batch on the host, settings) -> how many items its loss is a mean over (mel frames, target tokens, masked
    # frames).
    # Gradients of the micro-batches of one step, on every rank, are weighted by it, so the step's gradient is
    # the mean over all those items. Default: every micro-batch weighs the same.
    loss_items: Callable[[Any, TrainingSettings], int] | None = None
    # True: with no precision flag (nor a preset's), train in bf16 autocast where the CPU computes bf16 natively
    # (common/trainer.py: training_precision). Only for a family whose bf16 training curve was measured within
    # common/trainer.py's BF16_TRAINING_TOLERANCE of fp32's, and ran faster (docs/training.md says which).
    bf16_on_native_cpu: bool = False

    # ---- validation ------------------------------------------------------------------------------------------
    # The validation set's StepOutput.sums, added up -> {name: value} to log (e.g. {"val_wer": 0.15}); default: each
    # sum logged as val_<name>.
    validation_metrics: Callable[[dict[str, float]], dict[str, float]] | None = None
    # (unwrapped model, one validation batch on device, settings) -> {"scalars": {...}, "images": {...},
    # "audio": {...}} for the log and TensorBoard, on rank 0 (e.g. Tacotron 2's alignment plots).
    validation_report: Callable[[nn.Module, Any, TrainingSettings], dict] | None = None
    # A logged validation value where lower is better (e.g. "val_wer"): whenever it improves, the checkpoint is
    # also written as checkpoint_<name>_best.pt (besides the regular ones, which are never deleted).
    best_checkpoint_metric: str | None = None

    # ---- the command line ------------------------------------------------------------------------------------
    # (argv, the full parser) -> argv: the reference implementation's spellings of flags (underscores, other names)
    # rewritten to this project's, so that its command lines run.
    translate_argv: Callable[[list[str], argparse.ArgumentParser], list[str]] | None = None

    # ---- published checkpoints -------------------------------------------------------------------------------
    # The `config` dict that NVIDIA DeepLearningExamples saves in its checkpoints -> this model_config's keys, so
    # that their files build the right model without model flags on the command line.
    config_from_reference: Callable[[dict], dict] | None = None
    # (path, the file's contents, the run's model) -> ReferenceTrainingState (common/training_state.py): for
    # --checkpoint-path with another implementation's training file (HiFi-GAN: NVIDIA's and jik876's generator +
    # discriminator files), its weights, optimizer and loss-scaler states, epoch and step, which the trainer resumes
    # as it resumes its own checkpoints; raises UserError saying why a file cannot be resumed.
    training_state_from_reference: Callable[[Path, dict, nn.Module], ReferenceTrainingState] | None = None
    # Export (scripts/export_weights.py) of files that are not the project's own training checkpoints of this family:
    # read_for_export(path, the file's contents or None where weights_only refused it, flag, the reference's config
    # file or None) -> WeightsForExport, or None for a file that the common path reads (one of ours). A family whose
    # export may hold one part of its training model builds that part with build_exported_model(metadata) -> (the
    # part, the prefix of its names in the training model's state dict), or None for the whole model (build_model).
    read_for_export: Callable[[Path, dict | None, str | None, str | None], WeightsForExport | None] | None = None
    build_exported_model: Callable[[dict], tuple[nn.Module, str] | None] | None = None

    # ---- continuing a run in its own folder --------------------------------------------------------------------
    # A flag that resumes the run in -o/--output and changes it once (InPlaceStart above); None: the family has none.
    in_place_start: InPlaceStart | None = None
