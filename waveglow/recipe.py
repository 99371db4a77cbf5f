"""How the shared trainer trains WaveGlow (`python train.py -m WaveGlow ...`; see train.py)."""
from __future__ import annotations

import argparse

from torch import nn

from common.audio import AudioParams
from common.audio_crops import crops_to_device
from common.errors import UserError
from common.recipe import DataSplits, Recipe, StepOutput
from waveglow import arg_parser
from waveglow.data_function import MelAudioDataset, collate_mel_audio
from waveglow.loss_function import WaveGlowLoss
from waveglow.model import WaveGlow

VALIDATION_SAMPLE_SIGMA = 0.6  # the inference temperature NVIDIA's demos use


def build_model(config: dict) -> nn.Module:
    return WaveGlow(**config)


def build_data(args: argparse.Namespace, audio: AudioParams) -> DataSplits:
    if args.segment_length % args.groups != 0:
        raise UserError(f"--segment-length ({args.segment_length}) must be a multiple of --groups ({args.groups})")
    train = MelAudioDataset(args.training_files, args.dataset_path, audio, args.segment_length, seed=args.seed)
    validation = MelAudioDataset(args.validation_files, args.dataset_path, audio, args.segment_length,
                                 seed=args.seed, vary_with_epoch=False)
    return DataSplits(train=train, validation=validation, collate=collate_mel_audio)


def compute_loss(model: nn.Module, batch, args: argparse.Namespace) -> StepOutput:
    mel, audio = batch
    loss = WaveGlowLoss(args.sigma)(model(mel, audio))  # the loss sums in fp32 even under autocast
    return StepOutput(loss=loss, items=audio.numel())  # audio samples: batch * segment_length


def compile_model(model: nn.Module, args: argparse.Namespace) -> None:
    """--compile: every coupling network compiled (WaveGlow.compile_coupling)."""
    model.compile_coupling()


def validation_report(model: nn.Module, batch, args: argparse.Namespace) -> dict:
    """A vocoded validation crop to listen to in TensorBoard."""
    mel, _ = batch
    return {"audio": {"sample": model.infer(mel[:1], sigma=VALIDATION_SAMPLE_SIGMA)[0]}}


RECIPE = Recipe(
    name="WaveGlow",
    items_unit="samples",
    add_args=arg_parser.add_args,
    model_config=arg_parser.model_config,
    build_model=build_model,
    build_data=build_data,
    batch_to_device=crops_to_device,
    compute_loss=compute_loss,
    task="text-to-speech",
    description="WaveGlow: a flow-based vocoder from mel spectrograms to audio.",
    validation_report=validation_report,
    compile_model=compile_model,
    config_from_reference=arg_parser.config_from_reference,
    warm_start=True,
)
