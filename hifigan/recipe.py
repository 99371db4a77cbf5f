"""How the shared trainer trains HiFi-GAN (`python train.py -m HiFiGAN --config-file configs/hifigan_nvidia.json ...`).

A step is the reference's: the discriminators (MPD and MSD) learn from real and generated audio, then the generator
learns against the updated discriminators (adversarial + feature matching x2 + mel L1 x45), each with its own
AdamW and loss scaler, with gradient accumulation over the step's micro-batches. Learning rates decay by --lr-decay
every epoch. An exponential moving average of the generator (--ema-decay) is kept in the model, so checkpoints hold
it and resume it, and validation reports its mel L1 beside the live generator's.

Each of the generator, MPD and MSD is a DDP part of its own (trainer.parts). The step keeps DDP correct with two
backward passes per step: see train_step.
"""
from __future__ import annotations

import argparse
import functools
import itertools
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from common.arguments import check_after_parsing
from common.audio import AudioParams, MelSpectrogram
from common.distributed import ModelParts, unwrapped
from common.errors import UserError
from common.item_cache import check_kept_in_this_process
from common.logger import plot_to_image
from common.mel_audio_data import (FullUtterances, MelAudioBatch, MelAudioCrops, batch_to_device, collate,
                                   crops_or_whole_utterances)
from common.recipe import DataSplits, InPlaceStart, Recipe, StepOutput, TrainerView
from hifigan import arg_parser, checkpoints
from hifigan.arg_parser import HiFiGANTrainingSettings
from hifigan.data_function import check_mel_flags
from hifigan.loss_function import MEL_WEIGHT, HiFiGANLoss, loss_mel_params
from hifigan.model import HiFiGAN

PARTS = ("generator", "mpd", "msd")


def add_args(parser: argparse.ArgumentParser) -> None:
    """The architecture flags and NVIDIA's spellings; the others are HiFiGANTrainingSettings'."""
    arg_parser.add_args(parser)
    check_after_parsing(parser, check_mel_flags)
    arg_parser.add_reference_args(parser)


def build_model(config: dict) -> nn.Module:
    return HiFiGAN(**config)


def compile_model(model: HiFiGAN, settings: HiFiGANTrainingSettings) -> None:
    """--compile: the generator and both discriminators compiled in place (state-dict names unchanged). The EMA
    generator, which only validation runs, stays eager. The discriminators compile twice, trainable and frozen
    (train_step freezes them for the generator's phase)."""
    for part in (model.generator, model.mpd, model.msd):
        part.compile()


# ---- the data ------------------------------------------------------------------------------------------------


def build_data(settings: HiFiGANTrainingSettings, model_config: dict) -> DataSplits:
    audio = settings.audio
    check_kept_in_this_process(settings.keep_in_memory, settings.num_workers)
    train = MelAudioCrops(settings.training_files, settings.dataset_path, audio, settings.segment_length,
                          seed=settings.seed, input_mels_dir=settings.input_mels_dir,
                          keep_in_memory=settings.keep_in_memory)
    validation = FullUtterances(settings.validation_files, settings.dataset_path, audio,
                                input_mels_dir=settings.input_mels_dir)
    return DataSplits(train=train, validation=validation, collate=collate)


# ---- optimizers and schedule ---------------------------------------------------------------------------------


def build_optimizers(model: HiFiGAN, settings: HiFiGANTrainingSettings) -> dict[str, torch.optim.Optimizer]:
    """Two AdamW, as the reference: the generator's, and one over both discriminators (MSD's parameters, then MPD's,
    the reference's order, so that its optimizer states load index for index)."""
    def adamw(parameters):
        return torch.optim.AdamW(parameters, lr=settings.learning_rate * settings.fine_tune_lr_factor,
                                 betas=tuple(settings.adam_betas), weight_decay=settings.weight_decay,
                                 fused=settings.fused_optimizer)
    return {"discriminator": adamw(itertools.chain(model.msd.parameters(), model.mpd.parameters())),
            "generator": adamw(model.generator.parameters())}


@dataclass
class ExponentialDecay:
    """The reference's ExponentialLR stepped once per epoch: epoch e (from 0) trains at lr * gamma^e."""
    gamma: float

    def multiplier(self, epoch: int, step: int) -> float:
        return self.gamma ** epoch

    def state_dict(self) -> dict:
        return {"kind": "exponential_per_epoch", "gamma": self.gamma}


def lr_schedule(settings: HiFiGANTrainingSettings) -> ExponentialDecay:
    return ExponentialDecay(settings.lr_decay)


# ---- initialisation: fine-tuning and the EMA -------------------------------------------------------------------


def init_weights(model: HiFiGAN, settings: HiFiGANTrainingSettings) -> None:
    """--fine-tune-from's weights, then the EMA started from the generator (not from its own random draw, as the
    reference's was). A resumed run, and --fine-tuning (start_fine_tuning below), then load their checkpoint over
    all of this, the EMA included."""
    if settings.fine_tune_discriminator_from and not settings.fine_tune_from:
        raise UserError("--fine-tune-discriminator-from needs --fine-tune-from (the generator to start from)")
    if settings.fine_tuning and not settings.input_mels_dir:
        raise UserError("--fine-tuning trains on an acoustic model's own mels: give --input-mels-dir DIR "
                        "(scripts/extract_gta_mels.sh writes them)")
    if settings.fine_tuning and settings.fine_tune_from:
        raise UserError("--fine-tuning goes on from the checkpoint in -o/--output, --fine-tune-from starts from "
                        "another one in a new folder: give one of them")
    if settings.fine_tune_from:
        checkpoints.load_fine_tune_weights(model, settings.fine_tune_from, settings.fine_tune_discriminator_from,
                                           settings.audio, settings.hifigan_config)
    model.reset_ema()


def start_fine_tuning(trainer, base: Path) -> None:
    """--fine-tuning's first load of the base run's checkpoint, just restored (weights, optimizer moments, epoch,
    step): as NVIDIA's first fine-tuning load, both learning rates are multiplied by --fine-tune-lr-factor. The trainer
    then records the epoch it started at, so a later --fine-tuning in the folder resumes this run and multiplies
    nothing again (Recipe.in_place_start)."""
    settings = trainer.settings
    if ((settings.epochs and trainer.epoch >= settings.epochs)
            or (settings.max_updates and trainer.iteration >= settings.max_updates)):
        raise UserError(f"--fine-tuning: the base run {base} has done {trainer.epoch} epochs and {trainer.iteration} "
                        "updates, so there is nothing left to fine-tune; raise --epochs or --max-updates past them "
                        "(NVIDIA fine-tunes 6500 base epochs with --epochs 10000)")
    for optimizer in trainer.optimizers.values():
        for group in optimizer.param_groups:
            group["initial_lr"] *= settings.fine_tune_lr_factor  # what the schedule multiplies; the optimizer saves it
            group["lr"] *= settings.fine_tune_lr_factor
    print(f"--fine-tuning: fine-tuning {base} from epoch {trainer.epoch}, step {trainer.iteration}, with the "
          f"learning rates x{settings.fine_tune_lr_factor:g}; it stays in {settings.output}", flush=True)


FINE_TUNING = InPlaceStart(
    flag="--fine-tuning", asked=lambda settings: settings.fine_tuning, start=start_fine_tuning,
    no_base="give the base run's folder as -o, or start from a checkpoint elsewhere with --fine-tune-from CKPT")


# ---- the training step ---------------------------------------------------------------------------------------


@functools.cache
def hifigan_loss(params: AudioParams, device: torch.device) -> HiFiGANLoss:
    return HiFiGANLoss(params).to(device)


def loss_for(settings: HiFiGANTrainingSettings, device: torch.device) -> HiFiGANLoss:
    return hifigan_loss(loss_mel_params(settings.audio, settings.mel_fmax_loss), device)


def judge(discriminators, real: torch.Tensor, fake: torch.Tensor) -> tuple[list, list]:
    """Each discriminator's (scores, feature maps) of the real and of the generated audio (B, 1, T), from one forward
    pass over both (one DDP forward per backward; the discriminators treat batch items independently)."""
    batch = real.shape[0]
    real_outputs, fake_outputs = [], []
    for discriminator in discriminators:
        scores, maps = discriminator(torch.cat([real, fake]))
        real_outputs.append(([s[:batch] for s in scores], [[m[:batch] for m in layers] for layers in maps]))
        fake_outputs.append(([s[batch:] for s in scores], [[m[batch:] for m in layers] for layers in maps]))
    return real_outputs, fake_outputs


def judge_for_generator(discriminators, real: torch.Tensor, fake: torch.Tensor) -> tuple[list, list]:
    """judge's outputs for the generator's loss, from frozen discriminators: the generated audio's with autograd,
    then the real audio's through none, since its feature maps are feature matching's targets and pass no gradient
    to the generator (nor its scores, which that loss does not read). The same gradients as one pass over both,
    with no backward work on the real half. The real audio is judged in eval mode: spectral norm advances its power
    iteration at every call in training mode, and so judges it with the weights the generated audio just had, as
    one pass over both does."""
    real_outputs, fake_outputs = [], []
    for discriminator in discriminators:
        fake_outputs.append(discriminator(fake))
        training = discriminator.training
        try:
            discriminator.eval()
            with torch.no_grad():
                real_outputs.append(discriminator(real))
        finally:
            discriminator.train(training)
    return real_outputs, fake_outputs


@contextmanager
def frozen(*modules: nn.Module):
    """requires_grad off for these modules' parameters inside the block (restored after): the generator's loss then
    computes no discriminator gradients, so DDP neither all-reduces them nor leaves them for the next step."""
    parameters = [p for module in modules for p in module.parameters()]
    saved = [p.requires_grad for p in parameters]
    for parameter in parameters:
        parameter.requires_grad_(False)
    try:
        yield
    finally:
        for parameter, requires_grad in zip(parameters, saved):
            parameter.requires_grad_(requires_grad)


def train_step(parts: ModelParts, batches: list[MelAudioBatch], settings: HiFiGANTrainingSettings,
               trainer: TrainerView) -> StepOutput:
    """The discriminators' step on every micro-batch, then the generator's against the updated discriminators.

    DDP: (a) the discriminators run through their DDP parts in their phase, all-reducing on the last micro-batch
    only; (b) in the generator's phase they run unwrapped and frozen, so nothing of theirs is reduced twice; (c) the
    generator's DDP reducer sees each synchronised forward right before its backward: with one micro-batch the
    forward is shared by both phases (the reference's saving; nothing runs the generator's DDP in between), with
    several the discriminators' phase generates under no_grad through the unwrapped generator and the generator's
    phase generates again. Every micro-batch weighs 1 / len(batches) (equal-size crops)."""
    model, loss = trainer.model, loss_for(settings, trainer.device)
    if trainer.iteration == 0:
        # DDP gave every rank rank 0's generator after init_weights, so the average restarts from that one.
        model.reset_ema()
    weight = 1.0 / len(batches)
    shared_forward = len(batches) == 1
    trainer.optimizers["discriminator"].zero_grad(set_to_none=True)
    trainer.optimizers["generator"].zero_grad(set_to_none=True)

    fakes, discriminator_losses = [], []
    for index, batch in enumerate(batches):
        last = index == len(batches) - 1
        real = batch.audio.unsqueeze(1)
        with trainer.autocast():
            if shared_forward:
                fake = parts.generator(batch.mel)
            else:
                with torch.no_grad():
                    fake = model.generator(batch.mel)
        fakes.append(fake)
        with trainer.gradient_sync("mpd", last), trainer.gradient_sync("msd", last):
            with trainer.autocast():
                real_outputs, fake_outputs = judge((parts.mpd, parts.msd), real, fake.detach())
                discriminator_loss = loss.discriminator(real_outputs, fake_outputs)
            trainer.backward(discriminator_loss, "discriminator", weight)
        discriminator_losses.append(discriminator_loss.detach())
    trainer.step("discriminator")

    totals, parts_of_total = [], []
    judge_generated = judge_for_generator if settings.real_features_without_grad else judge
    with frozen(model.mpd, model.msd):
        for index, batch in enumerate(batches):
            last = index == len(batches) - 1
            real = batch.audio.unsqueeze(1)
            with trainer.gradient_sync("generator", last):
                with trainer.autocast():
                    fake = fakes[index] if shared_forward else parts.generator(batch.mel)
                    real_outputs, fake_outputs = judge_generated((model.mpd, model.msd), real, fake)
                    losses = loss.generator(real_outputs, fake_outputs, real, fake)
                trainer.backward(losses.total, "generator", weight)
            totals.append(losses.total.detach())
            parts_of_total.append(torch.stack([losses.adversarial.detach(), losses.feature_matching.detach(),
                                               losses.mel.detach()]))
    if trainer.step("generator") and settings.ema_decay > 0:
        model.update_ema(settings.ema_decay)

    adversarial, feature_matching, mel = torch.stack(parts_of_total).mean(0)
    return StepOutput(loss=torch.stack(totals).mean(), items=sum(batch.audio.numel() for batch in batches),
                      metrics={"discriminator_loss": torch.stack(discriminator_losses).mean(),
                               "adversarial_loss": adversarial, "feature_matching_loss": feature_matching,
                               "mel_loss": mel})


# ---- validation ----------------------------------------------------------------------------------------------


def mel_error_sums(generator: nn.Module, batch: MelAudioBatch, settings: HiFiGANTrainingSettings) -> tuple[float, int]:
    """Sum and count of |loss mel(real) - loss mel(generated)| over the batch's elements."""
    errors = loss_for(settings, batch.audio.device).mel_l1.errors(batch.audio, generator(batch.mel))
    return float(errors.sum()), errors.numel()


def compute_loss(model: nn.Module, batch: MelAudioBatch, settings: HiFiGANTrainingSettings) -> StepOutput:
    """Validation's loss (training has its own step): the mel L1 x45 of a whole utterance, with the sums of its
    errors (and the EMA generator's) for the corpus-level mel L1 of validation_metrics."""
    model = unwrapped(model)
    error, count = mel_error_sums(model.generator, batch, settings)
    sums = {"mel_abs_error": error, "mel_elements": count}
    if model.generator_ema is not None:
        sums["ema_mel_abs_error"], sums["ema_mel_elements"] = mel_error_sums(model.generator_ema, batch, settings)
    return StepOutput(loss=torch.tensor(MEL_WEIGHT * error / count), items=batch.audio.numel(), sums=sums)


def validation_metrics(sums: dict[str, float]) -> dict[str, float]:
    """The mel L1 over every element of the whole set (jik876's validation number) and x45 (NVIDIA's)."""
    metrics = {}
    for prefix in ("", "ema_"):
        if sums.get(f"{prefix}mel_elements"):
            l1 = sums[f"{prefix}mel_abs_error"] / sums[f"{prefix}mel_elements"]
            metrics[f"val_{prefix}mel_l1"] = l1
            metrics[f"val_{prefix}mel_loss"] = MEL_WEIGHT * l1
    return metrics


def validation_report(model: HiFiGAN, batch: MelAudioBatch, settings: HiFiGANTrainingSettings) -> dict:
    """The first validation utterance vocoded (live and EMA generator) beside the original, and the mels."""
    mel_spectrogram = MelSpectrogram(settings.audio).to(batch.mel.device)
    generated = model.generator(batch.mel[:1])[0, 0].float()
    audio = {"generated": generated, "ground_truth": batch.audio[0]}
    images = {"mel_input": plot_to_image(batch.mel[0].float().cpu().numpy(), "mel (input)", "frame", "channel"),
              "mel_generated": plot_to_image(mel_spectrogram(generated)[0].cpu().numpy(), "mel of the generated audio",
                                             "frame", "channel")}
    if model.generator_ema is not None:
        audio["generated_ema"] = model.generator_ema(batch.mel[:1])[0, 0].float()
    return {"audio": audio, "images": images}


RECIPE = Recipe(
    name=checkpoints.MODEL_NAME,
    items_unit="samples",
    add_args=add_args,
    model_config=arg_parser.model_config,
    build_model=build_model,
    compile_model=compile_model,
    build_data=build_data,
    batch_to_device=batch_to_device,
    compute_loss=compute_loss,
    task="text-to-speech",
    description="HiFi-GAN: a GAN vocoder from mel spectrograms to audio.",
    settings=HiFiGANTrainingSettings,
    init_weights=init_weights,
    parts=PARTS,
    build_optimizers=build_optimizers,
    train_step=train_step,
    lr_schedule=lr_schedule,
    batch_sampler=crops_or_whole_utterances,
    # bf16 on a CPU with native bf16, unless a flag says otherwise: 1.41x the fp32 step, its loss curve within 3.4 %
    # (experiments/cpu_bf16)
    bf16_on_native_cpu=True,
    validation_metrics=validation_metrics,
    validation_report=validation_report,
    config_from_reference=arg_parser.config_from_reference,
    translate_argv=arg_parser.translate_argv,
    training_state_from_reference=checkpoints.training_state_from_reference,
    read_for_export=checkpoints.read_for_export,
    build_exported_model=checkpoints.build_exported_model,
    in_place_start=FINE_TUNING,
)
