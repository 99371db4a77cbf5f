"""Tacotron 2 command-line flags: NVIDIA's model flags with their names and defaults, plus the loss flags.

--n-mel-channels is not here: it is an audio flag (common/audio.py) that every parser already has, with the same
name and default (80). --n-symbols is replaced by the text front-end's symbol count when training (recipe.py).
"""
from __future__ import annotations

import argparse

from common.arguments import non_negative_float, odd_positive_int, positive_float, positive_int, probability


def add_args(parser: argparse.ArgumentParser) -> None:
    model = parser.add_argument_group("Tacotron 2 model")
    model.add_argument("--mask-padding", action="store_true",
                       help="set the outputs at padded frames to 0 (mel) and 1e3 (gate logit)")
    model.add_argument("--n-symbols", type=positive_int, default=148,
                       help="embedding rows; training takes it from the text front-end")
    model.add_argument("--symbols-embedding-dim", type=positive_int, default=512)

    encoder = parser.add_argument_group("Tacotron 2 encoder")
    encoder.add_argument("--encoder-kernel-size", type=odd_positive_int, default=5)
    encoder.add_argument("--encoder-n-convolutions", type=positive_int, default=3)
    encoder.add_argument("--encoder-embedding-dim", type=positive_int, default=512)

    decoder = parser.add_argument_group("Tacotron 2 decoder")
    decoder.add_argument("--n-frames-per-step", type=positive_int, default=1,
                         help="reduction factor r: mel frames emitted per decoder step")
    decoder.add_argument("--decoder-rnn-dim", type=positive_int, default=1024)
    decoder.add_argument("--prenet-dim", type=positive_int, default=256)
    decoder.add_argument("--max-decoder-steps", type=positive_int, default=2000,
                         help="inference stops here if the gate has not fired")
    decoder.add_argument("--gate-threshold", type=probability, default=0.5,
                         help="inference stops at the first step whose stop probability exceeds this")
    decoder.add_argument("--p-attention-dropout", type=probability, default=0.1)
    decoder.add_argument("--p-decoder-dropout", type=probability, default=0.1)
    decoder.add_argument("--decoder-no-early-stopping", action="store_true",
                         help="at inference always run max-decoder-steps (for benchmarks)")

    attention = parser.add_argument_group("Tacotron 2 attention")
    attention.add_argument("--attention-rnn-dim", type=positive_int, default=1024)
    attention.add_argument("--attention-dim", type=positive_int, default=128)
    attention.add_argument("--attention-location-n-filters", type=positive_int, default=32)
    attention.add_argument("--attention-location-kernel-size", type=odd_positive_int, default=31)

    postnet = parser.add_argument_group("Tacotron 2 postnet")
    postnet.add_argument("--postnet-embedding-dim", type=positive_int, default=512)
    postnet.add_argument("--postnet-kernel-size", type=odd_positive_int, default=5)
    postnet.add_argument("--postnet-n-convolutions", type=positive_int, default=5)

    loss = parser.add_argument_group("Tacotron 2 loss")
    loss.add_argument("--guided-attn-weight", type=non_negative_float, default=0.0,
                      help="weight of the guided-attention loss (0: off; ~1-10 helps attention align sooner)")
    loss.add_argument("--guided-attn-sigma", type=positive_float, default=0.2,
                      help="width of the guided-attention diagonal band, as a fraction of the utterance")
    loss.add_argument("--loss-over-padding", action="store_true",
                      help="average the loss over padded positions too, as NVIDIA's code does")


def model_config(args: argparse.Namespace) -> dict:
    """The Tacotron2 constructor keywords (saved in checkpoints; tacotron2.model.build_model takes them)."""
    names = ["mask_padding", "n_mel_channels", "n_symbols", "symbols_embedding_dim", "encoder_kernel_size",
             "encoder_n_convolutions", "encoder_embedding_dim", "attention_rnn_dim", "attention_dim",
             "attention_location_n_filters", "attention_location_kernel_size", "n_frames_per_step",
             "decoder_rnn_dim", "prenet_dim", "max_decoder_steps", "gate_threshold", "p_attention_dropout",
             "p_decoder_dropout", "postnet_embedding_dim", "postnet_kernel_size", "postnet_n_convolutions",
             "decoder_no_early_stopping"]
    return {name: getattr(args, name) for name in names}


def loss_config(args: argparse.Namespace) -> dict:
    """The Tacotron2Loss constructor keywords."""
    return {"guided_attn_weight": args.guided_attn_weight, "guided_attn_sigma": args.guided_attn_sigma,
            "n_frames_per_step": args.n_frames_per_step, "mask_padding_in_loss": not args.loss_over_padding}
