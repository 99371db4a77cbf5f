"""How the shared trainer trains the mel inverter (`python train.py -m MelInverter --config-file
configs/melinverter_demo.json -d DATA --training-files F --validation-files F [--input-mels-dir MELS]`).

A step: hop-aligned audio crops and their input mels (common/mel_audio_data.py: the recordings' own mels, or an
acoustic model's teacher-forced mels from --input-mels-dir), the inverter's log magnitude against the crop's, mean
absolute error (melinverter/loss_function.py), one Adam. Validation: the same error over whole held-out utterances.
"""
from __future__ import annotations

import argparse

from torch import nn

from common.arguments import audio_params_of
from common.audio import AudioParams
from common.errors import UserError
from common.item_cache import check_kept_in_this_process
from common.mel_audio_data import (FullUtterances, MelAudioBatch, MelAudioCrops, batch_to_device, collate,
                                   crops_or_whole_utterances)
from common.recipe import DataSplits, Recipe, StepOutput
from melinverter import arg_parser
from melinverter.loss_function import absolute_errors, edge_frames
from melinverter.model import MelInverter

NAME = "MelInverter"


def build_model(config: dict) -> nn.Module:
    return MelInverter(**config)


def build_data(args: argparse.Namespace, audio: AudioParams) -> DataSplits:
    check_kept_in_this_process(args.keep_in_memory, args.num_workers)
    if args.segment_length // audio.hop_length <= 2 * edge_frames(audio):
        raise UserError(f"--segment-length {args.segment_length} is {args.segment_length // audio.hop_length} "
                        f"frames; the loss leaves out {edge_frames(audio)} at each end, so give it more than "
                        f"{2 * edge_frames(audio) * audio.hop_length} samples")
    train = MelAudioCrops(args.training_files, args.dataset_path, audio, args.segment_length, seed=args.seed,
                          input_mels_dir=args.input_mels_dir, keep_in_memory=args.keep_in_memory)
    validation = FullUtterances(args.validation_files, args.dataset_path, audio, input_mels_dir=args.input_mels_dir)
    return DataSplits(train=train, validation=validation, collate=collate)


def compute_loss(model: nn.Module, batch: MelAudioBatch, args: argparse.Namespace) -> StepOutput:
    errors = absolute_errors(model(batch.mel), batch.audio, audio_params_of(args))
    loss = errors.mean()
    sums = {} if model.training else {"abs_error": float(errors.sum()), "elements": errors.numel()}
    return StepOutput(loss=loss, items=batch.audio.numel(), sums=sums)


def validation_metrics(sums: dict[str, float]) -> dict[str, float]:
    """The log-magnitude L1 over every element of the whole validation set."""
    return {"val_log_magnitude_l1": sums["abs_error"] / sums["elements"]} if sums.get("elements") else {}


RECIPE = Recipe(
    name=NAME,
    items_unit="samples",
    add_args=arg_parser.add_args,
    model_config=arg_parser.model_config,
    build_model=build_model,
    build_data=build_data,
    batch_to_device=batch_to_device,
    compute_loss=compute_loss,
    task="text-to-speech",
    description=("Mel inverter: a small convolutional network from log mel spectrograms to the "
                 "linear magnitude spectrum, whose phase Griffin-Lim finds."),
    batch_sampler=crops_or_whole_utterances,
    validation_metrics=validation_metrics,
)
