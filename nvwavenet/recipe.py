"""How the shared trainer trains WaveNet (`python train.py -m WaveNet -o output/ -lr 1e-3 --epochs 100 -bs 8 ...`).

Generation is sample by sample: nvwavenet.incremental.generate on the CPU, the CUDA kernels on a GPU.
"""
from __future__ import annotations

import argparse

from torch import nn

from common.audio import AudioParams
from common.audio_crops import crops_to_device
from common.recipe import DataSplits, Recipe, StepOutput
from nvwavenet import arg_parser
from nvwavenet.data_function import MelAudioCrops, collate_crops
from nvwavenet.loss_function import next_sample_accuracy, next_sample_loss
from nvwavenet.model import WaveNet


def build_model(config: dict) -> nn.Module:
    return WaveNet(**config)


def build_data(args: argparse.Namespace, audio: AudioParams) -> DataSplits:
    common = dict(dataset_path=args.dataset_path, audio=audio, segment_length=args.segment_length,
                  quantization=args.out_channels, seed=args.seed)
    return DataSplits(train=MelAudioCrops(args.training_files, **common),
                      validation=MelAudioCrops(args.validation_files, vary_with_epoch=False, **common),
                      collate=collate_crops)


def compute_loss(model: nn.Module, batch, args: argparse.Namespace) -> StepOutput:
    mel, audio_classes = batch
    logits = model(mel, audio_classes)
    return StepOutput(loss=next_sample_loss(logits, audio_classes), items=audio_classes.numel(),
                      metrics={"accuracy": next_sample_accuracy(logits.detach(), audio_classes)})


RECIPE = Recipe(
    name="WaveNet",
    items_unit="samples",
    add_args=arg_parser.add_args,
    model_config=arg_parser.model_config,
    build_model=build_model,
    build_data=build_data,
    batch_to_device=crops_to_device,
    compute_loss=compute_loss,
    task="text-to-speech",
    description=("WaveNet (nv-wavenet's autoregressive variant): a vocoder from mel spectrograms to "
                 "audio, sample by sample."),
)
