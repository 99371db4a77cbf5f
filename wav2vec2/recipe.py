"""How the shared trainer trains wav2vec 2.0, in its two modes.

    python train.py -m wav2vec2 pretrain --data data/librispeech -o runs/pretrain -lr 5e-4 --max-updates 400000 ...
    python train.py -m wav2vec2 finetune --w2v-path runs/pretrain/checkpoint_wav2vec2_last.pt --data ... -lr 5e-5
    scripts/wav2vec2/pretrain_wav2vec2.sh and finetune_wav2vec2.sh (the reference's recipes, presets in configs/)

Pre-training: the model masks spans of its latent frames and learns, for each masked frame, to pick the quantized
latent that was there among 100 distractors from the same utterance (wav2vec2/loss_function.py). Masks and
distractors are drawn by the data side's collate (wav2vec2/data_function.py), so the number of masked frames - the
loss's items - is known before the forward pass and a run is a function of its seed alone.

Fine-tuning: a linear CTC head over letters (dict.ltr.txt) on the pre-trained encoder (ours, NVIDIA's, fairseq's,
or Hugging Face's through `python -m wav2vec2.convert`), the conv feature extractor frozen, the encoder frozen for
--freeze-finetune-updates. Validation reports WER and CER over the whole validation set, and the best-WER
checkpoint is kept as checkpoint_wav2vec2_best.pt.
"""
from __future__ import annotations

import argparse
import functools
from contextlib import contextmanager
from pathlib import Path

import torch
from torch import nn

from common.arguments import config_dict, config_from_args
from common.audio import AudioParams
from common.errors import UserError, UserFileNotFoundError
from common.recipe import DataSplits, Recipe, StepOutput
from common.schedules import TriStageSchedule, schedule_from_args
from wav2vec2 import arg_parser, checkpoints
from wav2vec2.checkpoints import FINETUNING_KEYS, MODEL_NAME
from wav2vec2.arg_parser import FINETUNE_CONFIG_DEFAULTS
from wav2vec2.data_function import AudioBatch, AudioDataset, Collater, max_tokens_batches, read_manifest
from wav2vec2.decoding import error_counts, error_rates, transcripts
from wav2vec2.dictionary import Dictionary
from wav2vec2.loss_function import ctc_loss, pretraining_loss
from wav2vec2.masking import conv_output_lengths
from wav2vec2.model import (ConvFeatureExtractor, TransformerLayer, Wav2Vec2CTC, Wav2Vec2Model, model_config_from,
                            parse_conv_feature_layers)



def add_args(parser: argparse.ArgumentParser) -> None:
    arg_parser.add_args(parser)


# ---- the model -------------------------------------------------------------------------------------------------


def dictionary_path(args: argparse.Namespace) -> Path:
    return Path(args.data) / f"dict.{args.labels}.txt"


def load_pretrained(path: str, flag: str = "--w2v-path") -> tuple[dict, dict]:
    """(model config, pre-training model state dict) of a pre-trained or fine-tuned wav2vec 2.0 file: ours,
    NVIDIA's or fairseq's. A fine-tuned file gives its encoder (its CTC head is left out)."""
    if not Path(path).is_file():
        raise UserFileNotFoundError(f"{flag} {path}: file not found")
    config, state = checkpoints.load_any_checkpoint(path, flag)
    return {key: value for key, value in config.items() if key not in FINETUNING_KEYS}, checkpoints.encoder_state(state)


def model_config(args: argparse.Namespace) -> dict:
    overrides = arg_parser.model_config_overrides(args)
    if args.mode == "pretrain":
        return model_config_from(overrides)
    if args.w2v_path:
        architecture, _ = load_pretrained(args.w2v_path)
    else:  # fine-tuning from scratch (a small model on a small corpus, as the ASR demo does)
        architecture = {}
    config = model_config_from({**architecture, **FINETUNE_CONFIG_DEFAULTS, **overrides})
    if not args.apply_mask:
        config.update(mask_prob=0.0, mask_channel_prob=0.0)
    ctc_head = config_from_args(arg_parser.CTCHeadConfig, args, vocab_size=len(load_dictionary(args)))
    return {**config, **config_dict(ctc_head)}


def build_model(config: dict) -> nn.Module:
    if "vocab_size" in config:
        architecture = {key: value for key, value in config.items() if key not in FINETUNING_KEYS}
        return Wav2Vec2CTC(architecture, config["vocab_size"], final_dropout=config["final_dropout"],
                           freeze_finetune_updates=config["freeze_finetune_updates"])
    return Wav2Vec2Model(config)


def init_weights(model: nn.Module, args: argparse.Namespace) -> None:
    """Fine-tuning starts from --w2v-path's encoder (a resumed run then loads its own checkpoint over it)."""
    if args.mode == "finetune" and args.w2v_path:
        _, state = load_pretrained(args.w2v_path)
        try:
            model.load_pretrained(state)
        except ValueError as error:
            raise UserError(f"--w2v-path {args.w2v_path}: {error}") from error


def set_num_updates(model: nn.Module, num_updates: int) -> None:
    model.set_num_updates(num_updates)


def build_optimizers(model: nn.Module, args: argparse.Namespace) -> dict[str, torch.optim.Optimizer]:
    """Adam with decoupled weight decay on every parameter (biases, norms and the codebook too), as the reference."""
    return {"model": torch.optim.AdamW(model.parameters(), lr=args.learning_rate, betas=tuple(args.adam_betas),
                                       eps=args.adam_eps, weight_decay=args.weight_decay)}


def lr_schedule(args: argparse.Namespace):
    """--lr-schedule as given; a tri-stage schedule without stage lengths takes the reference's fine-tuning split
    of --max-updates: 10 % warm-up, 40 % hold, 50 % decay."""
    if (args.lr_schedule == "tri-stage" and not (args.warmup_updates or args.hold_updates or args.decay_updates)
            and args.max_updates):
        warmup, hold = int(0.1 * args.max_updates), int(0.4 * args.max_updates)
        return TriStageSchedule(warmup, hold, args.max_updates - warmup - hold, args.init_lr_scale,
                                args.final_lr_scale)
    return schedule_from_args(args)


# ---- the data --------------------------------------------------------------------------------------------------


def load_dictionary(args: argparse.Namespace) -> Dictionary:
    if args.data is None:
        raise UserError("--data DIR is required: the folder of the .tsv manifests (and labels for fine-tuning)")
    return _dictionary_at(str(dictionary_path(args)))


@functools.lru_cache(maxsize=4)
def _dictionary_at(path: str) -> Dictionary:
    return Dictionary.load(path)


def text_processor(args: argparse.Namespace) -> Dictionary | None:
    """Fine-tuning's letters travel in the checkpoint, so inference decodes with the model's own dictionary."""
    return load_dictionary(args) if args.mode == "finetune" else None


def build_data(args: argparse.Namespace, audio: AudioParams) -> DataSplits:
    if args.data is None:
        raise UserError("--data DIR is required: the folder of the .tsv manifests (<DIR>/<subset>.tsv)")
    finetuning = args.mode == "finetune"
    config = model_config(args)
    dictionary = load_dictionary(args) if finetuning else None

    def dataset(subset: str, training: bool) -> AudioDataset:
        manifest = read_manifest(Path(args.data) / f"{subset}.tsv", audio.sampling_rate, resample=args.resample)
        labels = Path(args.data) / f"{subset}.{args.labels}" if finetuning else None
        return AudioDataset(manifest, audio.sampling_rate, labels=labels, dictionary=dictionary,
                            min_sample_size=args.min_sample_size if training else None,
                            max_sample_size=args.max_sample_size, normalize=config["normalize"],
                            resample=args.resample, seed=args.seed, training=training)

    collate = Collater(config, mode=args.mode, pad_index=dictionary.pad_index if dictionary is not None else 1,
                       random_phase_prob=args.random_phase_prob)
    return DataSplits(train=dataset(args.train_subset, True), validation=dataset(args.valid_subset, False),
                      collate=collate)


def batch_to_device(batch: AudioBatch, device: torch.device) -> AudioBatch:
    return batch.to(device)


def loss_items(batch: AudioBatch, args: argparse.Namespace) -> int:
    """Pre-training's loss is a mean over masked frames; CTC's over utterances (the reference's sentence average)."""
    if args.mode == "pretrain":
        return int(batch.mask_indices.sum())
    return len(batch.ids)


# ---- the loss --------------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=8)
def _conv_layers(conv_feature_layers: str) -> tuple:
    return tuple(parse_conv_feature_layers(conv_feature_layers))


def transformer_frames(batch: AudioBatch, model_config_of: dict) -> int:
    """The throughput unit of the reference's tables: frames the transformer sees (padding excluded)."""
    lengths = (torch.full((batch.source.shape[0],), batch.source.shape[1]) if batch.padding_mask is None
               else (~batch.padding_mask).sum(-1).cpu())
    return int(conv_output_lengths(lengths, list(_conv_layers(model_config_of["conv_feature_layers"]))).sum())


def unwrapped(model: nn.Module) -> nn.Module:
    return model.module if isinstance(model, nn.parallel.DistributedDataParallel) else model


@contextmanager
def random_draws_seeded_by(batch: AudioBatch):
    """The model's random draws on this batch (dropout, LayerDrop, Gumbel noise) from the batch's own seed, then
    torch's generators as they were: so 2 ranks take the steps 1 process takes with accumulation, and a resumed run
    the steps of the uninterrupted one."""
    device = batch.source.device
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        torch.manual_seed(batch.noise_seed)
        yield


def compute_loss(model: nn.Module, batch: AudioBatch, args: argparse.Namespace) -> StepOutput:
    """The loss; in fine-tuning's validation also the word and character errors of greedy CTC decoding of the same
    forward pass (validation batches carry no masks), summed for a corpus WER and CER."""
    config = unwrapped(model).config
    items = transformer_frames(batch, config)
    with random_draws_seeded_by(batch):
        if args.mode == "pretrain":
            output = model(batch.source, padding_mask=batch.padding_mask, mask_indices=batch.mask_indices,
                           negative_indices=batch.negative_indices)
            loss, metrics = pretraining_loss(output, tuple(args.loss_weights))
            return StepOutput(loss=loss, items=items, metrics=metrics)
        output = model(batch.source, padding_mask=batch.padding_mask, mask_indices=batch.mask_indices,
                       channel_mask=batch.channel_mask)
    loss = ctc_loss(output["logits"], output["padding_mask"], batch.targets, batch.target_lengths)
    sums = {} if unwrapped(model).training else decoding_errors(output, batch, args)
    return StepOutput(loss=loss, items=items, sums=sums)


def decoding_errors(output: dict, batch: AudioBatch, args: argparse.Namespace) -> dict[str, float]:
    """Word and character errors of greedy CTC decoding of the model's output against the batch's labels."""
    dictionary = load_dictionary(args)
    hypotheses = transcripts(output["logits"], output["padding_mask"], dictionary)
    references = [dictionary.decode(row[:length].tolist())
                  for row, length in zip(batch.targets.cpu(), batch.target_lengths.tolist())]
    return error_counts(references, hypotheses)


def validation_metrics(sums: dict[str, float]) -> dict[str, float]:
    rates = error_rates(sums)
    return {"val_wer": rates["wer"], "val_cer": rates["cer"]}


def compile_model(model: nn.Module, args: argparse.Namespace) -> None:
    """--compile: the convolutional feature extractor and each transformer layer compiled in place (state-dict
    names unchanged). Layer by layer, so that LayerDrop's draw stays outside the compiled code; the layers share one
    compiled graph, and batch lengths that vary make it dynamic after the first recompile."""
    for module in model.modules():
        if isinstance(module, (ConvFeatureExtractor, TransformerLayer)):
            module.compile()


RECIPE = Recipe(
    name=MODEL_NAME,
    items_unit="frames",
    add_args=add_args,
    model_config=model_config,
    build_model=build_model,
    compile_model=compile_model,
    build_data=build_data,
    batch_to_device=batch_to_device,
    compute_loss=compute_loss,
    task="automatic-speech-recognition",
    description=("wav2vec 2.0: a self-supervised speech encoder; with a CTC head "
                 "(fine-tuned) it recognizes letters from 16 kHz audio."),
    init_weights=init_weights,
    find_unused_parameters=True,  # LayerDrop and a frozen encoder leave parameters without gradients
    build_optimizers=build_optimizers,
    lr_schedule=lr_schedule,
    set_num_updates=set_num_updates,
    text_processor=text_processor,
    batch_sampler=max_tokens_batches,
    loss_items=loss_items,
    validation_metrics=validation_metrics,
    best_checkpoint_metric="val_wer",
    translate_argv=arg_parser.translate_argv,
    read_for_export=checkpoints.read_for_export,
)
