"""Tacotron 2 command-line flags: NVIDIA's model flags with their names and defaults (Tacotron2Config), plus the
loss flags.

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


def add_args(parser: argparse.ArgumentParser) -> None:
    add_dataclass_args(parser.add_argument_group("Tacotron 2 model"), Tacotron2Config)
    check_after_parsing(parser, check_audio_flags)  # its targets are mels of these flags

    symbols = parser.add_argument_group(
        "Tacotron 2 symbols (default: NVIDIA's 148 English symbols; the table is saved in every checkpoint and "
        "inference reads it from there)").add_mutually_exclusive_group()
    symbols.add_argument("--symbols-file", default=None, metavar="PATH",
                         help="the symbol table in id order, the padding symbol '_' first: one symbol per line "
                              "(a line of one space is the space), or a JSON list of strings in a .json file")
    symbols.add_argument("--symbols-from-filelist", action="store_true",
                         help="the table of the training transcripts: '_' (padding), then every symbol of the "
                              "transcripts after --text-cleaners, sorted (for another language; pick cleaners that "
                              "keep its letters, e.g. basic_cleaners, or espeak_ipa with --language for its sounds; "
                              "the default with espeak_ipa)")

    loss = parser.add_argument_group("Tacotron 2 loss")
    loss.add_argument("--guided-attn-weight", type=non_negative_float, default=0.0,
                      help="weight of the guided-attention loss (0: off; ~1-10 helps attention align sooner)")
    loss.add_argument("--guided-attn-sigma", type=positive_float, default=0.2,
                      help="width of the guided-attention diagonal band, as a fraction of the utterance")
    loss.add_argument("--mel-loss", choices=["mse", "l1"], default="mse",
                      help="the error of both mel terms: squared (NVIDIA's) or absolute")
    loss.add_argument("--loss-over-padding", action="store_true",
                      help="average the loss over padded positions too, as NVIDIA's code does")


def model_config(args: argparse.Namespace, **values) -> dict:
    """Tacotron2Config of the flags, with `values` instead of the flags they name (the recipe's n_symbols)."""
    return config_dict(config_from_args(Tacotron2Config, args, **values))


def loss_config(args: argparse.Namespace) -> dict:
    """The Tacotron2Loss constructor keywords."""
    return {"guided_attn_weight": args.guided_attn_weight, "guided_attn_sigma": args.guided_attn_sigma,
            "n_frames_per_step": args.n_frames_per_step, "mask_padding_in_loss": not args.loss_over_padding,
            "mel_loss": args.mel_loss}
