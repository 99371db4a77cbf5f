"""Tacotron 2 command-line flags: NVIDIA's model flags with their names and defaults (Tacotron2Config), and the
training run's own (Tacotron2TrainingSettings: data, symbol table, loss).

Tacotron2Config's n_mel_channels has no flag of its own: it is the audio flag --n-mel-channels (common/audio.py) that
every parser already has, with the same name and default (80). --n-symbols is replaced by the text front-end's
symbol count when training (recipe.py), whose symbol table is NVIDIA's unless --symbols-file or
--symbols-from-filelist gives another (another language).
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass

from common.arguments import (add_dataclass_args, audio_flag, check_after_parsing, check_audio_flags, config_dict,
                              config_from_args, flag, non_negative_float, non_negative_int, odd_positive_int,
                              positive_float, positive_int, probability)
from common.text import TextSettings
from common.training_settings import TrainingSettings
from tacotron2.model import MAX_FRAMES_AFTER_TEXT_END


@dataclass
class Tacotron2Config:
    """The Tacotron2 constructor keywords (tacotron2/model.py), saved in every checkpoint as model_config."""
    mask_padding: bool = flag(False, "set the outputs at padded frames to 0 (mel) and 1e3 (gate logit)")
    n_mel_channels: int = audio_flag("n_mel_channels")
    n_symbols: int = flag(148, "embedding rows; training takes it from the text front-end", type=positive_int)
    symbols_embedding_dim: int = flag(512, type=positive_int)
    encoder_kernel_size: int = flag(5, type=odd_positive_int)
    encoder_n_convolutions: int = flag(3, type=positive_int)
    encoder_embedding_dim: int = flag(512, type=positive_int)
    attention_rnn_dim: int = flag(1024, type=positive_int)
    attention_dim: int = flag(128, type=positive_int)
    attention_location_n_filters: int = flag(32, type=positive_int)
    attention_location_kernel_size: int = flag(31, type=odd_positive_int)
    n_frames_per_step: int = flag(1, "reduction factor r: mel frames emitted per decoder step", type=positive_int)
    decoder_rnn_dim: int = flag(1024, type=positive_int)
    prenet_dim: int = flag(256, type=positive_int)
    max_decoder_steps: int = flag(2000, "inference stops here if the gate has not fired", type=positive_int)
    gate_threshold: float = flag(0.5, "inference stops at the first step whose stop probability exceeds this",
                                 type=probability)
    p_attention_dropout: float = flag(0.1, type=probability)
    p_decoder_dropout: float = flag(0.1, type=probability)
    postnet_embedding_dim: int = flag(512, type=positive_int)
    postnet_kernel_size: int = flag(5, type=odd_positive_int)
    postnet_n_convolutions: int = flag(5, type=positive_int)
    decoder_no_early_stopping: bool = flag(False, "at inference always run max-decoder-steps (for benchmarks)")
    # Not NVIDIA's flags (their model fixes both at 0.5): saved only when changed, so configs keep NVIDIA's keys.
    p_encoder_dropout: float = flag(0.5, "dropout after each encoder convolution", type=probability,
                                    saved_if_changed=True)
    p_postnet_dropout: float = flag(0.5, "dropout after each postnet convolution", type=probability,
                                    saved_if_changed=True)
    max_frames_after_text_end: int = flag(
        MAX_FRAMES_AFTER_TEXT_END, "inference also stops an utterance this many mel frames after its attention first "
        "peaked on the text's last symbol, if its gate has not stopped it before (a gate that never fires on some "
        "text would run to --max-decoder-steps); 0: the gate alone, NVIDIA's rule", type=non_negative_int,
        saved_if_changed=True)


DATA = "Tacotron 2 data"
SYMBOLS = ("Tacotron 2 symbols (default: NVIDIA's 148 English symbols; the table is saved in every checkpoint and "
           "inference reads it from there)")
LOSS = "Tacotron 2 loss"


@dataclass(kw_only=True)
class Tacotron2TrainingSettings(TextSettings, TrainingSettings):
    """train.py -m Tacotron2's own flags, beside the shared ones (TrainingSettings) and the text's (TextSettings)."""
    # ---- the data; how training reads its transcripts is not saved in the model config (inference never reads it)
    final_punctuation_dropout: float = flag(
        0.0, "the share of training items read without the marks that end their transcript (\"the end.\" as \"the "
        "end\"), drawn anew each epoch, so that the stop gate learns where a text ends rather than to stop after a "
        "full stop (0: off; not yet measured to help, so off by default)", type=probability, group=DATA)
    load_mel_from_disk: bool = flag(False, "filelists name .pt mels made by scripts/prepare_mels.sh instead of wavs",
                                    group=DATA)
    bucket_by_length: bool = flag(False, "batch utterances of similar text length together (less padding, faster "
                                         "epochs)", group=DATA)
    keep_in_memory: bool = flag(False, "keep each training mel in memory once computed, instead of computing it every "
                                       "epoch: for a corpus that fits (make demo's: about 80 MB); with --num-workers 0",
                                action=argparse.BooleanOptionalAction, group=DATA)

    # ---- the symbol table: one of the two, or NVIDIA's
    symbols_file: str | None = flag(None, "the symbol table in id order, the padding symbol '_' first: one symbol per "
                                          "line (a line of one space is the space), or a JSON list of strings in a "
                                          ".json file", metavar="PATH", group=SYMBOLS, exclusive="table")
    symbols_from_filelist: bool = flag(False, "the table of the training transcripts: '_' (padding), then every symbol "
                                              "of the transcripts after --text-cleaners, sorted (for another language; "
                                              "pick cleaners that keep its letters, e.g. basic_cleaners, or espeak_ipa "
                                              "with --language for its sounds; the default with espeak_ipa)",
                                       group=SYMBOLS, exclusive="table")

    # ---- the loss (Tacotron2Loss)
    guided_attn_weight: float = flag(0.0, "weight of the guided-attention loss (0: off; ~1-10 helps attention align "
                                          "sooner)", type=non_negative_float, group=LOSS)
    guided_attn_sigma: float = flag(0.2, "width of the guided-attention diagonal band, as a fraction of the "
                                         "utterance", type=positive_float, group=LOSS)
    mel_loss: str = flag("mse", "the error of both mel terms: squared (NVIDIA's) or absolute", choices=["mse", "l1"],
                         group=LOSS)
    loss_over_padding: bool = flag(False, "average the loss over padded positions too, as NVIDIA's code does",
                                   group=LOSS)

    # ---- the model's training-time choices, which its config does not record
    disable_uniform_initialize_bn_weight: bool = flag(False, "keep PyTorch's BatchNorm weight init instead of "
                                                             "NVIDIA's U(0, 1)")
    fast_decoder: bool = flag(True, "the decoder loop rearranged for speed (tacotron2/README.md), equal to rounding "
                                    "(tacotron2/model.py: Decoder.forward_fast); --no-fast-decoder: NVIDIA's loop as "
                                    "it is written; --compile implies it")


def add_args(parser: argparse.ArgumentParser) -> None:
    """The model's flags (Tacotron2Config); the others are Tacotron2TrainingSettings'."""
    add_dataclass_args(parser.add_argument_group("Tacotron 2 model"), Tacotron2Config)
    check_after_parsing(parser, check_audio_flags)  # its targets are mels of these flags


def model_config(args: argparse.Namespace, **values) -> dict:
    """Tacotron2Config of the flags, with `values` instead of the flags they name (the recipe's n_symbols)."""
    return config_dict(config_from_args(Tacotron2Config, args, **values))


def loss_config(settings: Tacotron2TrainingSettings, n_frames_per_step: int) -> dict:
    """The Tacotron2Loss constructor keywords, for a model that emits n_frames_per_step frames a step."""
    return {"guided_attn_weight": settings.guided_attn_weight, "guided_attn_sigma": settings.guided_attn_sigma,
            "n_frames_per_step": n_frames_per_step, "mask_padding_in_loss": not settings.loss_over_padding,
            "mel_loss": settings.mel_loss}
