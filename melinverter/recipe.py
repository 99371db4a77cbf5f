"""How the shared trainer trains the mel inverter (`python train.py -m MelInverter --config-file
configs/melinverter_demo.json -d DATA --training-files F --validation-files F [--input-mels-dir MELS]`).

A step: hop-aligned audio crops and their input mels (common/mel_audio_data.py: the recordings' own mels, or an
acoustic model's teacher-forced mels from --input-mels-dir), the inverter's log magnitude against the crop's, mean
absolute error (melinverter/loss_function.py), one Adam. Validation: the same error over whole held-out utterances.
"""
from __future__ import annotations

from torch import nn

from common.errors import UserError
from common.item_cache import check_kept_in_this_process
from common.mel_audio_data import (FullUtterances, MelAudioBatch, MelAudioCrops, batch_to_device, collate,
                                   crops_or_whole_utterances)
from common.recipe import DataSplits, Recipe, StepOutput
from melinverter import arg_parser
from melinverter.arg_parser import MelInverterTrainingSettings
from melinverter.loss_function import absolute_errors, edge_frames
from melinverter.model import MelInverter

NAME = "MelInverter"


def build_model(config: dict) -> nn.Module:
    return MelInverter(**config)


def build_data(settings: MelInverterTrainingSettings, model_config: dict) -> DataSplits:
    audio = settings.audio
    check_kept_in_this_process(settings.keep_in_memory, settings.num_workers)
    if settings.segment_length // audio.hop_length <= 2 * edge_frames(audio):
        raise UserError(f"--segment-length {settings.segment_length} is {settings.segment_length // audio.hop_length} "
                        f"frames; the loss leaves out {edge_frames(audio)} at each end, so give it more than "
                        f"{2 * edge_frames(audio) * audio.hop_length} samples")
    train = MelAudioCrops(settings.training_files, settings.dataset_path, audio, settings.segment_length,
                          seed=settings.seed, input_mels_dir=settings.input_mels_dir,
                          keep_in_memory=settings.keep_in_memory)
    validation = FullUtterances(settings.validation_files, settings.dataset_path, audio,
                                input_mels_dir=settings.input_mels_dir)
    return DataSplits(train=train, validation=validation, collate=collate)


def compute_loss(model: nn.Module, batch: MelAudioBatch, settings: MelInverterTrainingSettings) -> StepOutput:
    errors = absolute_errors(model(batch.mel), batch.audio, settings.audio)
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
    settings=MelInverterTrainingSettings,
    batch_sampler=crops_or_whole_utterances,
    validation_metrics=validation_metrics,
)
