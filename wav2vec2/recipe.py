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
from common.distributed import unwrapped
from common.errors import UserError, UserFileNotFoundError
from common.recipe import DataSplits, Recipe, StepOutput
from common.schedules import TriStageSchedule, schedule_of
from wav2vec2 import arg_parser, checkpoints
from wav2vec2.checkpoints import FINETUNING_KEYS, MODEL_NAME
from wav2vec2.arg_parser import FINETUNE_CONFIG_DEFAULTS, MODE_DEFAULTS, Wav2Vec2TrainingSettings
from wav2vec2.data_function import AudioBatch, AudioDataset, Collater, max_tokens_batches, read_manifest
from wav2vec2.decoding import error_counts, error_rates, transcripts
from wav2vec2.dictionary import Dictionary
from wav2vec2.loss_function import ctc_loss, pretraining_loss
from wav2vec2.masking import conv_output_lengths
from wav2vec2.model import (ConvFeatureExtractor, TransformerLayer, Wav2Vec2CTC, Wav2Vec2Model, model_config_from,
                            parse_conv_feature_layers)



# The reference's Adam epsilon of each mode, where --adam-eps is not given (the command line sets it by the mode).
ADAM_EPS = {mode: defaults["adam_eps"] for mode, defaults in MODE_DEFAULTS.items()}


# ---- the model -------------------------------------------------------------------------------------------------


def dictionary_path(settings: Wav2Vec2TrainingSettings) -> Path:
    return Path(settings.data) / f"dict.{settings.labels}.txt"


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
    dictionary = load_dictionary(config_from_args(Wav2Vec2TrainingSettings, args))
    ctc_head = config_from_args(arg_parser.CTCHeadConfig, args, vocab_size=len(dictionary))
    return {**config, **config_dict(ctc_head)}


def build_model(config: dict) -> nn.Module:
    if "vocab_size" in config:
        architecture = {key: value for key, value in config.items() if key not in FINETUNING_KEYS}
        return Wav2Vec2CTC(architecture, config["vocab_size"], final_dropout=config["final_dropout"],
                           freeze_finetune_updates=config["freeze_finetune_updates"])
    return Wav2Vec2Model(config)


def init_weights(model: nn.Module, settings: Wav2Vec2TrainingSettings) -> None:
    """Fine-tuning starts from --w2v-path's encoder (a resumed run then loads its own checkpoint over it)."""
    if settings.mode == "finetune" and settings.w2v_path:
        _, state = load_pretrained(settings.w2v_path)
        try:
            model.load_pretrained(state)
        except ValueError as error:
            raise UserError(f"--w2v-path {settings.w2v_path}: {error}") from error


def set_num_updates(model: nn.Module, num_updates: int) -> None:
    model.set_num_updates(num_updates)


def build_optimizers(model: nn.Module, settings: Wav2Vec2TrainingSettings) -> dict[str, torch.optim.Optimizer]:
    """Adam with decoupled weight decay on every parameter (biases, norms and the codebook too), as the reference."""
    eps = settings.adam_eps if settings.adam_eps is not None else ADAM_EPS[settings.mode]
    return {"model": torch.optim.AdamW(model.parameters(), lr=settings.learning_rate, betas=tuple(settings.adam_betas),
                                       eps=eps, weight_decay=settings.weight_decay,
                                       fused=settings.fused_optimizer)}


def lr_schedule(settings: Wav2Vec2TrainingSettings):
    """--lr-schedule as given; a tri-stage schedule without stage lengths takes the reference's fine-tuning split
    of --max-updates: 10 % warm-up, 40 % hold, 50 % decay."""
    stages_given = settings.warmup_updates or settings.hold_updates or settings.decay_updates
    if settings.lr_schedule == "tri-stage" and not stages_given and settings.max_updates:
        warmup, hold = int(0.1 * settings.max_updates), int(0.4 * settings.max_updates)
        return TriStageSchedule(warmup, hold, settings.max_updates - warmup - hold, settings.init_lr_scale,
                                settings.final_lr_scale)
    return schedule_of(settings)


# ---- the data --------------------------------------------------------------------------------------------------


def load_dictionary(settings: Wav2Vec2TrainingSettings) -> Dictionary:
    if settings.data is None:
        raise UserError("--data DIR is required: the folder of the .tsv manifests (and labels for fine-tuning)")
    return _dictionary_at(str(dictionary_path(settings)))


@functools.lru_cache(maxsize=4)
def _dictionary_at(path: str) -> Dictionary:
    return Dictionary.load(path)


def text_processor(settings: Wav2Vec2TrainingSettings) -> Dictionary | None:
    """Fine-tuning's letters travel in the checkpoint, so inference decodes with the model's own dictionary."""
    return load_dictionary(settings) if settings.mode == "finetune" else None


def build_data(settings: Wav2Vec2TrainingSettings, model_config: dict) -> DataSplits:
    audio = settings.audio
    if settings.data is None:
        raise UserError("--data DIR is required: the folder of the .tsv manifests (<DIR>/<subset>.tsv)")
    finetuning = settings.mode == "finetune"
    config = model_config
    dictionary = load_dictionary(settings) if finetuning else None

    def dataset(subset: str, training: bool) -> AudioDataset:
        manifest = read_manifest(Path(settings.data) / f"{subset}.tsv", audio.sampling_rate, resample=settings.resample)
        labels = Path(settings.data) / f"{subset}.{settings.labels}" if finetuning else None
        return AudioDataset(manifest, audio.sampling_rate, labels=labels, dictionary=dictionary,
                            min_sample_size=settings.min_sample_size if training else None,
                            max_sample_size=settings.max_sample_size, normalize=config["normalize"],
                            resample=settings.resample, seed=settings.seed, training=training)

    collate = Collater(config, mode=settings.mode, pad_index=dictionary.pad_index if dictionary is not None else 1,
                       random_phase_prob=settings.random_phase_prob)
    return DataSplits(train=dataset(settings.train_subset, True), validation=dataset(settings.valid_subset, False),
                      collate=collate)


def batch_to_device(batch: AudioBatch, device: torch.device) -> AudioBatch:
    return batch.to(device)


def loss_items(batch: AudioBatch, settings: Wav2Vec2TrainingSettings) -> int:
    """Pre-training's loss is a mean over masked frames; CTC's over utterances (the reference's sentence average)."""
    if settings.mode == "pretrain":
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


@contextmanager
def random_draws_seeded_by(batch: AudioBatch):
    """The model's random draws on this batch (dropout, LayerDrop, Gumbel noise) from the batch's own seed, then
    torch's generators as they were: so 2 ranks take the steps 1 process takes with accumulation, and a resumed run
    the steps of the uninterrupted one."""
    device = batch.source.device
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        torch.manual_seed(batch.noise_seed)
        yield


def compute_loss(model: nn.Module, batch: AudioBatch, settings: Wav2Vec2TrainingSettings) -> StepOutput:
    """The loss; in fine-tuning's validation also the word and character errors of greedy CTC decoding of the same
    forward pass (validation batches carry no masks), summed for a corpus WER and CER."""
    config = unwrapped(model).config
    items = transformer_frames(batch, config)
    with random_draws_seeded_by(batch):
        if settings.mode == "pretrain":
            output = model(batch.source, padding_mask=batch.padding_mask, mask_indices=batch.mask_indices,
                           negative_indices=batch.negative_indices)
            loss, metrics = pretraining_loss(output, tuple(settings.loss_weights))
            return StepOutput(loss=loss, items=items, metrics=metrics)
        output = model(batch.source, padding_mask=batch.padding_mask, mask_indices=batch.mask_indices,
                       channel_mask=batch.channel_mask)
    loss = ctc_loss(output["logits"], output["padding_mask"], batch.targets, batch.target_lengths)
    sums = {} if unwrapped(model).training else decoding_errors(output, batch, settings)
    return StepOutput(loss=loss, items=items, sums=sums)


def decoding_errors(output: dict, batch: AudioBatch, settings: Wav2Vec2TrainingSettings) -> dict[str, float]:
    """Word and character errors of greedy CTC decoding of the model's output against the batch's labels."""
    dictionary = load_dictionary(settings)
    hypotheses = transcripts(output["logits"], output["padding_mask"], dictionary)
    references = [dictionary.decode(row[:length].tolist())
                  for row, length in zip(batch.targets.cpu(), batch.target_lengths.tolist())]
    return error_counts(references, hypotheses)


def validation_metrics(sums: dict[str, float]) -> dict[str, float]:
    rates = error_rates(sums)
    return {"val_wer": rates["wer"], "val_cer": rates["cer"]}


def compile_model(model: nn.Module, settings: Wav2Vec2TrainingSettings) -> None:
    """--compile: the convolutional feature extractor and each transformer layer compiled in place (state-dict
    names unchanged). Layer by layer, so that LayerDrop's draw stays outside the compiled code; the layers share one
    compiled graph, and batch lengths that vary make it dynamic after the first recompile."""
    for module in model.modules():
        if isinstance(module, (ConvFeatureExtractor, TransformerLayer)):
            module.compile()


RECIPE = Recipe(
    name=MODEL_NAME,
    items_unit="frames",
    add_args=arg_parser.add_args,
    model_config=model_config,
    build_model=build_model,
    compile_model=compile_model,
    build_data=build_data,
    batch_to_device=batch_to_device,
    compute_loss=compute_loss,
    task="automatic-speech-recognition",
    description=("wav2vec 2.0: a self-supervised speech encoder; with a CTC head "
                 "(fine-tuned) it recognizes letters from 16 kHz audio."),
    settings=Wav2Vec2TrainingSettings,
    init_weights=init_weights,
    find_unused_parameters=True,  # LayerDrop and a frozen encoder leave parameters without gradients
    build_optimizers=build_optimizers,
    lr_schedule=lr_schedule,
    set_num_updates=set_num_updates,
    text_processor=text_processor,
    batch_sampler=max_tokens_batches,
    loss_items=loss_items,
    # bf16 on a CPU with native bf16, unless a flag says otherwise: pre-training 1.49x and fine-tuning 1.41x the fp32
    # step, their loss curves within 2.2 % and 0.6 % (experiments/cpu_bf16)
    bf16_on_native_cpu=True,
    validation_metrics=validation_metrics,
    best_checkpoint_metric="val_wer",
    translate_argv=arg_parser.translate_argv,
    read_for_export=checkpoints.read_for_export,
)
