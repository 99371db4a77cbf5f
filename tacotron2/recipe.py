"""How the shared trainer trains Tacotron 2: python train.py -m Tacotron2 ... (see train.py)."""
from __future__ import annotations

import argparse
import functools
from pathlib import Path

import torch
from torch import nn

from common.arguments import config_from_args
from common.audio import griffin_lim
from common.distributed import unwrapped
from common.filelist import read_filelist
from common.item_cache import check_kept_in_this_process
from common.logger import plot_to_image
from common.recipe import BatchingContext, DataSplits, Recipe, StepOutput
from common.sampler import EpochBatchSampler, fixed_size_batches
from common.text import TextProcessor, read_symbols_file, reads_phonemes, symbols_of_transcripts, text_language
from common.text.symbols import SYMBOLS
from tacotron2 import arg_parser
from tacotron2.alignment import alignment_health
from tacotron2.arg_parser import Tacotron2TrainingSettings, loss_config
from tacotron2.data_function import TextMelCollate, TextMelDataset, batch_to_device
from tacotron2.loss_function import Tacotron2Loss
from tacotron2.model import build_model, max_steps_warnings_silenced


def prepare_for_training(model: nn.Module, settings: Tacotron2TrainingSettings) -> None:
    """NVIDIA's training re-draws every BatchNorm weight from U(0, 1) (kept for parity unless disabled); and
    --fast-decoder chooses the decoder loop (a run-time choice, so it is not in the model config)."""
    model.decoder.fast = settings.fast_decoder
    if settings.disable_uniform_initialize_bn_weight:
        return
    for module in model.modules():
        if isinstance(module, nn.modules.batchnorm._BatchNorm) and module.affine:
            nn.init.uniform_(module.weight)


def compile_model(model: nn.Module, settings: Tacotron2TrainingSettings) -> None:
    """--compile: the fast decoder, its per-step work compiled (Decoder.compile_step)."""
    model.decoder.compile_step()


@functools.lru_cache(maxsize=4)
def _symbols_of_filelist(filelist: str, dataset_path: str, cleaners: tuple[str, ...], language: str | None,
                         modified_ns: int) -> tuple:
    """symbols_of_transcripts of a filelist, read once per run (the trainer asks for the table three times); with
    --language, phonemized through the filelist's phoneme cache."""
    transcripts = [entry.text for entry in read_filelist(filelist, dataset_path)]
    TextProcessor(cleaners, language=language).cache_phonemes(filelist, transcripts)
    return tuple(symbols_of_transcripts(transcripts, cleaners, language))


def symbol_table(settings: Tacotron2TrainingSettings) -> list[str]:
    """NVIDIA's 148 symbols, or the table of --symbols-file or of the training transcripts (--symbols-from-filelist,
    and the default with a phoneme cleaner: NVIDIA's table has no IPA)."""
    if settings.symbols_file:
        return read_symbols_file(settings.symbols_file)
    if settings.symbols_from_filelist or reads_phonemes(settings.text_cleaners):
        filelist = Path(settings.training_files)
        modified_ns = filelist.stat().st_mtime_ns if filelist.is_file() else 0  # read_filelist reports a missing one
        return list(_symbols_of_filelist(str(filelist), str(settings.dataset_path), tuple(settings.text_cleaners),
                                         text_language(settings), modified_ns))
    return list(SYMBOLS)


def text_processor(settings: Tacotron2TrainingSettings) -> TextProcessor:
    """The run's text front-end: --text-cleaners (with --language) and the symbol table (symbol_table); saved in
    every checkpoint."""
    return TextProcessor(settings.text_cleaners, symbol_table(settings), language=text_language(settings))


def model_config(args: argparse.Namespace) -> dict:
    """Tacotron2Config of the parsed flags, with as many symbols as the run's table has."""
    settings = config_from_args(Tacotron2TrainingSettings, args)
    return arg_parser.model_config(args, n_symbols=text_processor(settings).n_symbols)


def build_data(settings: Tacotron2TrainingSettings, model_config: dict) -> DataSplits:
    audio = settings.audio
    check_kept_in_this_process(settings.keep_in_memory, settings.num_workers)
    text = text_processor(settings)
    train = TextMelDataset(settings.training_files, settings.dataset_path, text, audio, settings.load_mel_from_disk,
                           settings.keep_in_memory, settings.final_punctuation_dropout, settings.seed)
    validation = TextMelDataset(settings.validation_files, settings.dataset_path, text, audio,
                                settings.load_mel_from_disk, settings.keep_in_memory)
    return DataSplits(train, validation, TextMelCollate())


def batch_sampler(settings: Tacotron2TrainingSettings, dataset: TextMelDataset,
                  context: BatchingContext) -> EpochBatchSampler:
    """--batch-size utterances; with --bucket-by-length, utterances of similar text length batch together."""
    return fixed_size_batches(settings, dataset, context, dataset.bucket_lengths if settings.bucket_by_length else None)


def loss_items(batch: dict, settings: Tacotron2TrainingSettings) -> int:
    """The mel frames the loss is a mean over: the valid ones, or every padded one with --loss-over-padding."""
    if settings.loss_over_padding:
        return batch["mel"].shape[0] * batch["mel"].shape[-1]
    return int(batch["mel_lengths"].sum())


def compute_loss(model, batch: dict, settings: Tacotron2TrainingSettings) -> StepOutput:
    output = model(batch["text"], batch["text_lengths"], batch["mel"], batch["mel_lengths"])
    n_frames_per_step = unwrapped(model).n_frames_per_step
    losses = Tacotron2Loss(**loss_config(settings, n_frames_per_step))(output, batch)
    metrics = {name: value.detach() for name, value in losses.items() if name != "loss"}
    return StepOutput(losses["loss"], int(batch["mel_lengths"].sum()), metrics)


@torch.no_grad()
def validation_report(model, batch: dict, settings: Tacotron2TrainingSettings) -> dict:
    """Alignment health of free-running synthesis on validation texts (the real test of attention), with plots."""
    generator = torch.Generator(device=batch["text"].device).manual_seed(settings.seed)
    max_steps = int(batch["mel_lengths"].max()) * 2 // model.n_frames_per_step + 10
    # The gate alone stops these utterances (max_frames_after_text_end=0), so val_stopped_by_gate says whether the
    # gate has learned where speech ends.
    with max_steps_warnings_silenced():  # an unaligned model hits max_decoder_steps: counted below, not warned
        result = model.infer(batch["text"], batch["text_lengths"], max_decoder_steps=max_steps, generator=generator,
                             max_frames_after_text_end=0)
    health = alignment_health(result.alignments, batch["text_lengths"], result.mel_lengths, model.n_frames_per_step)
    first_steps = int((result.mel_lengths[0] + model.n_frames_per_step - 1) // model.n_frames_per_step)
    alignment = result.alignments[0, :first_steps, : int(batch["text_lengths"][0])].float().cpu().numpy()
    images = {"alignment": plot_to_image(alignment.T, "alignment (synthesis)", "decoder step", "encoder step"),
              "mel": plot_to_image(result.mel[0, :, : int(result.mel_lengths[0])].float().cpu().numpy(),
                                   "mel (synthesis)", "frame", "channel"),
              "mel_target": plot_to_image(batch["mel"][0, :, : int(batch["mel_lengths"][0])].float().cpu().numpy(),
                                          "mel (target)", "frame", "channel")}
    first_frames = int(result.mel_lengths[0])
    audio = griffin_lim(result.mel[:1, :, :first_frames].float().cpu(), settings.audio, n_iters=16)[0]
    scalars = {f"alignment_{name}": value for name, value in health.items()}
    scalars["val_stopped_by_gate"] = 1.0 - result.hit_max_decoder_steps.float().mean().item()
    return {"scalars": scalars, "images": images, "audio": {"synthesis_griffin_lim": audio}}


RECIPE = Recipe(
    name="Tacotron2",
    items_unit="mel_frames",
    add_args=arg_parser.add_args,
    model_config=model_config,
    build_model=build_model,
    build_data=build_data,
    batch_to_device=batch_to_device,
    compute_loss=compute_loss,
    task="text-to-speech",
    description=("Tacotron 2: an attention-based sequence-to-sequence model from characters (or "
                 "ARPAbet phonemes) to mel spectrograms; a vocoder turns them into audio."),
    settings=Tacotron2TrainingSettings,
    init_weights=prepare_for_training,
    compile_model=compile_model,
    text_processor=text_processor,
    warm_start=True,
    batch_sampler=batch_sampler,
    loss_items=loss_items,
    validation_report=validation_report,
    config_from_reference=dict,  # NVIDIA's config keys are the constructor's (tacotron2/model.py)
)
