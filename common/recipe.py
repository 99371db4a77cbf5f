"""What a model family gives the shared trainer: one `Recipe` per folder (tacotron2/recipe.py, waveglow/recipe.py...).

train.py looks the recipe up by `-m NAME`, adds its flags to the parser, and hands it to common.trainer, which owns
everything else: devices, precision, DDP, the data loaders, the optimizer and LR schedule, checkpoints and logging.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
from torch import nn
from torch.utils.data import Dataset

from common.audio import AudioParams


@dataclass
class StepOutput:
    """What one forward pass on a batch gives the trainer."""
    loss: torch.Tensor  # scalar to minimise
    items: int  # throughput unit in this batch: mel frames (acoustic models) or audio samples (vocoders)
    metrics: dict[str, torch.Tensor] = field(default_factory=dict)  # extra scalars to log, e.g. gate_loss


@dataclass
class DataSplits:
    train: Dataset
    validation: Dataset
    collate: Callable[[list], Any]


@dataclass
class Recipe:
    name: str  # the -m value; also names checkpoints: checkpoint_<name>_<epoch>.pt
    items_unit: str  # "mel_frames" or "samples": what items/sec counts
    add_args: Callable[[argparse.ArgumentParser], None]  # the model's and its data's flags (arg_parser.py)
    model_config: Callable[[argparse.Namespace], dict]  # constructor kwargs, saved in every checkpoint
    build_model: Callable[[dict], nn.Module]  # from model_config's dict (also used when loading for inference)
    build_data: Callable[[argparse.Namespace, AudioParams], DataSplits]
    batch_to_device: Callable[[Any, torch.device], Any]
    compute_loss: Callable[[nn.Module, Any, argparse.Namespace], StepOutput]  # model may be DDP-wrapped
    uses_text: bool = False  # True: the text front-end (cleaners, symbols) is saved in checkpoints
    # Optional: (unwrapped model, one validation batch on device, args) -> {"scalars": {...}, "images": {...},
    # "audio": {...}} for the log and TensorBoard (e.g. Tacotron 2's alignment-health score and plots).
    validation_report: Callable[[nn.Module, Any, argparse.Namespace], dict] | None = None
    # Optional, for models with several optimizers (HiFi-GAN's generator and discriminators):
    # build_optimizers(model, args) -> {name: optimizer} (default: one Adam named "model"), and
    # train_step(model, batch, args, trainer) -> StepOutput, which runs its forward passes under
    # `with trainer.autocast():` and calls trainer.backward_and_step(loss, name) for each optimizer in turn.
    build_optimizers: Callable[[nn.Module, argparse.Namespace], dict[str, torch.optim.Optimizer]] | None = None
    train_step: Callable[[nn.Module, Any, argparse.Namespace, Any], StepOutput] | None = None
    # Optional: the learning-rate schedule (default: EpochAnnealSchedule from --learning-rate, --anneal-steps and
    # --anneal-factor); any object with lr_at(epoch, step) and state_dict(), e.g. WarmupPolynomialSchedule.
    lr_schedule: Callable[[argparse.Namespace], Any] | None = None
    # Optional: the `config` dict that NVIDIA DeepLearningExamples saves in its checkpoints -> this model_config's
    # keys, so that their files build the right model without model flags on the command line.
    config_from_reference: Callable[[dict], dict] | None = None
