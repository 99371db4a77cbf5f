"""How the shared trainer trains WaveNet (`python train.py -m WaveNet -o output/ -lr 1e-3 --epochs 100 -bs 8 ...`).

Generation is sample by sample: nvwavenet.incremental.generate on the CPU, the CUDA kernels on a GPU.
"""
from __future__ import annotations

from torch import nn

from common.audio_crops import crops_to_device
from common.recipe import DataSplits, Recipe, StepOutput
from nvwavenet import arg_parser
from nvwavenet.arg_parser import WaveNetTrainingSettings
from nvwavenet.data_function import MelAudioCrops, collate_crops
from nvwavenet.loss_function import next_sample_accuracy, next_sample_loss
from nvwavenet.model import WaveNet


def build_model(config: dict) -> nn.Module:
    return WaveNet(**config)


def build_data(settings: WaveNetTrainingSettings, model_config: dict) -> DataSplits:
    """Crops of --segment-length samples, mu-law quantized into the model's out_channels classes."""
    common = dict(dataset_path=settings.dataset_path, audio=settings.audio, segment_length=settings.segment_length,
                  quantization=model_config["out_channels"], seed=settings.seed)
    return DataSplits(train=MelAudioCrops(settings.training_files, **common),
                      validation=MelAudioCrops(settings.validation_files, vary_with_epoch=False, **common),
                      collate=collate_crops)


def compute_loss(model: nn.Module, batch, settings: WaveNetTrainingSettings) -> StepOutput:
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
    settings=WaveNetTrainingSettings,
)
