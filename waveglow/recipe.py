"""How the shared trainer trains WaveGlow (`python train.py -m WaveGlow ...`; see train.py)."""
from __future__ import annotations

from torch import nn

from common.audio_crops import crops_to_device
from common.recipe import DataSplits, Recipe, StepOutput
from waveglow import arg_parser
from waveglow.arg_parser import WaveGlowTrainingSettings
from waveglow.data_function import MelAudioDataset, collate_mel_audio
from waveglow.loss_function import WaveGlowLoss
from waveglow.model import WaveGlow

VALIDATION_SAMPLE_SIGMA = 0.6  # the inference temperature NVIDIA's demos use


def build_model(config: dict) -> nn.Module:
    return WaveGlow(**config)


def build_data(settings: WaveGlowTrainingSettings, model_config: dict) -> DataSplits:
    audio = settings.audio
    train = MelAudioDataset(settings.training_files, settings.dataset_path, audio, settings.segment_length,
                            seed=settings.seed)
    validation = MelAudioDataset(settings.validation_files, settings.dataset_path, audio, settings.segment_length,
                                 seed=settings.seed, vary_with_epoch=False)
    return DataSplits(train=train, validation=validation, collate=collate_mel_audio)


def compute_loss(model: nn.Module, batch, settings: WaveGlowTrainingSettings) -> StepOutput:
    mel, audio = batch
    loss = WaveGlowLoss(settings.sigma)(model(mel, audio))  # the loss sums in fp32 even under autocast
    return StepOutput(loss=loss, items=audio.numel())  # audio samples: batch * segment_length


def compile_model(model: nn.Module, settings: WaveGlowTrainingSettings) -> None:
    """--compile: every coupling network compiled (WaveGlow.compile_coupling)."""
    model.compile_coupling()


def validation_report(model: nn.Module, batch, settings: WaveGlowTrainingSettings) -> dict:
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
    settings=WaveGlowTrainingSettings,
    validation_report=validation_report,
    compile_model=compile_model,
    config_from_reference=arg_parser.config_from_reference,
    warm_start=True,
)
