"""wav2vec 2.0's flags, for pre-training and CTC fine-tuning (`python train.py -m wav2vec2 [pretrain|finetune] ...`).

NVIDIA's underscore spellings (`--max_tokens`) and its names of the shared flags (`--lr`, `--update_freq`,
`--max_update`, `--clip_norm`, `--output_dir`, `--fp16`...) are read as this project's, so NVIDIA's command lines run
(translate_argv; common/arguments.py: read_reference_spellings). Flags of theirs that tune
what this implementation does not have are accepted for compatibility only (COMPATIBILITY_FLAGS, marked so in
--help). The mode (the reference's positional `pretrain` / `finetune`, or `--mode`) picks the defaults of the
reference's recipes (MODE_DEFAULTS): a preset (--config-file) and the command line override them.

The architecture flags are wav2vec2.model.Wav2Vec2Config's fields and default to None: pre-training fills them from
its defaults (Base), fine-tuning from the pre-trained checkpoint (--w2v-path), and a flag given on the command line
wins in both.
"""
from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass

from common.arguments import (add_compatibility_flags, add_dataclass_args, add_reference_names, argument_group, flag,
                              not_a_flag, read_reference_spellings)
from common.training_settings import TrainingSettings
from wav2vec2.model import Wav2Vec2Config

MODES = ("pretrain", "finetune")

# The reference's (NVIDIA's) names of this project's shared flags (each also read in its dashed spelling).
REFERENCE_FLAG_NAMES = {
    "--lr": "--learning-rate", "--update_freq": "--grad-accumulation", "--max_update": "--max-updates",
    "--clip_norm": "--grad-clip-thresh", "--output_dir": "--output", "--fp16": "--amp",
    "--initial_lr_scale": "--init-lr-scale", "--lr_poly_power": "--lr-power", "--sample_rate": "--sampling-rate",
    "--ckpt": "--checkpoint-path", "--resume": "--resume-from-last", "--layerdrop": "--encoder-layerdrop",
    "--save_frequency": "--epochs-per-checkpoint",
}
LR_POLICIES = {"poly": "warmup-polynomial", "exp": "tri-stage"}  # --lr_policy: the reference's schedule names


class ReferenceLrPolicy(argparse.Action):
    """NVIDIA's --lr_policy sets --lr-schedule by its own names for the schedules."""

    def __call__(self, parser, namespace, value, option_string=None):
        namespace.lr_schedule = LR_POLICIES[value]


def no_ema(text: str) -> float:
    value = float(text)
    if value != 0.0:
        raise argparse.ArgumentTypeError(f"an EMA of the weights is not implemented for wav2vec 2.0 (NVIDIA's raises "
                                         f"NotImplementedError too); give 0, got {value}")
    return value


# Flags of NVIDIA's scripts that tune its hand-made mixed precision, its attention implementation or its batching
# internals. Autocast keeps these computations in fp32 and attention is PyTorch's SDPA here, so they change nothing.
COMPATIBILITY_FLAGS = {
    "--infonce": dict(help="NVIDIA's scripts always pass it; the contrastive loss here is InfoNCE"),
    "--fp32_pos_conv": dict(help="autocast already runs the positional convolution's weight norm in fp32"),
    "--fp32_conv_norms": dict(help="autocast already runs the feature extractor's norms in fp32"),
    "--fp32_cosine_sim": dict(help="the contrastive logits are computed in fp32 here"),
    "--fp32_transformer_layernorm": dict(help="autocast already runs LayerNorm in fp32"),
    "--fp32_mha_softmax": dict(help="the attention softmax (PyTorch's SDPA) accumulates in fp32"),
    "--mha": dict(metavar="IMPL", help="NVIDIA's choice of attention implementation (fairseq or pyt); attention "
                                       "here is PyTorch's SDPA"),
    "--log_frequency": dict(metavar="N", type=int, help="every step is logged here"),
    "--required_batch_size_multiple": dict(metavar="N", type=int, help="max-token batches here are not rounded"),
    "--required_seq_len_multiple": dict(metavar="N", type=int, help="unused by NVIDIA's code as well"),
    "--enable_padding": dict(help="fine-tuning batches are always padded here"),
    "--optimizer": dict(choices=["adam"], help="Adam with decoupled weight decay, NVIDIA's only choice as well"),
    "--ema": dict(type=no_ema, metavar="DECAY", help="0 only: an EMA of the weights is not implemented (NVIDIA's "
                                                     "raises NotImplementedError for more than 0)"),
}

MODE_DEFAULTS = {
    # NVIDIA's Base pre-training: Adam (0.9, 0.98, eps 1e-6), decoupled weight decay 0.01, polynomial decay with
    # warm-up, clipping at 25.
    "pretrain": dict(weight_decay=0.01, grad_clip_thresh=25.0, adam_eps=1e-6, lr_schedule="warmup-polynomial"),
    # NVIDIA's Base fine-tuning: eps 1e-8, no weight decay, no clipping (its scripts pass no --clip_norm), tri-stage
    # (10 % / 40 % / 50 % of --max-updates unless given), mask 0.5 / channel mask off, LayerDrop 0.1, dropouts as
    # fairseq's base_960h.
    "finetune": dict(weight_decay=0.0, grad_clip_thresh=0.0, adam_eps=1e-8, lr_schedule="tri-stage",
                     init_lr_scale=0.01, final_lr_scale=0.05),
}
FINETUNE_CONFIG_DEFAULTS = dict(feature_grad_mult=0.0, mask_prob=0.5, mask_length=10, mask_channel_prob=0.0,
                                mask_channel_length=64, encoder_layerdrop=0.1, dropout=0.0, attention_dropout=0.0,
                                activation_dropout=0.1, dropout_input=0.0, dropout_features=0.0)


@dataclass
class CTCHeadConfig:
    """What a fine-tuned model's config adds to Wav2Vec2Config: Wav2Vec2CTC's other constructor arguments."""
    vocab_size: int = not_a_flag("the dictionary (dict.<labels>.txt in --data)")
    final_dropout: float = flag(0.0, "dropout before the CTC projection")
    freeze_finetune_updates: int = flag(0, "only the CTC projection learns for this many updates")


LOSS = "wav2vec 2.0 pre-training loss"
FINETUNING = "wav2vec 2.0 fine-tuning (--mode finetune)"
OPTIMIZER = "wav2vec 2.0 optimizer (Adam with decoupled weight decay)"
DATA = "wav2vec 2.0 data (fairseq manifests: <data>/<subset>.tsv)"


@dataclass(kw_only=True)
class Wav2Vec2TrainingSettings(TrainingSettings):
    """train.py -m wav2vec2's own flags, beside the shared ones. On the command line the mode also picks the
    reference's defaults of some shared flags (MODE_DEFAULTS)."""
    mode: str = flag("pretrain", "pre-training (contrastive) or fine-tuning (CTC); also the reference's positional "
                                 "`pretrain` / `finetune`", choices=MODES)
    loss_weights: list[float] = flag([0.1, 10.0], "weights of the codebook diversity loss and the feature penalty "
                                                  "(Large: 0.1 0)", nargs=2,
                                     metavar=("DIVERSITY", "FEATURE_PENALTY"), group=LOSS)
    w2v_path: str | None = flag(None, "pre-trained model to fine-tune: ours, NVIDIA's or fairseq's .pt, or one "
                                      "converted from Hugging Face by `python -m wav2vec2.convert --from-hf`",
                                group=FINETUNING)
    apply_mask: bool = flag(True, "time and channel masking while fine-tuning", group=FINETUNING)
    adam_betas: list[float] = flag([0.9, 0.98], None, nargs=2, metavar=("BETA1", "BETA2"), group=OPTIMIZER)
    adam_eps: float | None = flag(None, "pre-training 1e-6, fine-tuning 1e-8", group=OPTIMIZER)
    data: str | None = flag(None, "folder of the .tsv manifests (and .ltr labels, dict.ltr.txt)", group=DATA)
    train_subset: str = flag("train", None, group=DATA)
    valid_subset: str = flag("valid", None, group=DATA)
    labels: str = flag("ltr", "label file extension; the dictionary is dict.<labels>.txt", group=DATA)
    max_tokens: int = flag(1_400_000, "audio samples per batch (padded size: items x longest)", group=DATA)
    max_tokens_valid: int | None = flag(None, "the same for validation (default: --max-tokens)", group=DATA)
    max_sample_size: int | None = flag(None, "pre-training crops utterances to at most this many samples (Base: "
                                             "250000)", group=DATA)
    min_sample_size: int | None = flag(None, "utterances shorter than this are left out (Base pre-training: 32000)",
                                       group=DATA)
    num_concat_batches: int = flag(1, "forward N max-tokens batches as one (masks, negatives and loss as N separate "
                                      "batches)", group=DATA)
    random_phase_prob: float = flag(0.0, "fine-tuning: the share of training utterances given a random phase "
                                         "(all-pass filters and polarity; the magnitude spectrum kept), so the "
                                         "recognizer hears spectra, not one voice's waveform shape", group=DATA)
    resample: bool = flag(False, "resample audio at another rate to --sampling-rate instead of refusing it",
                          group=DATA)
    skip_invalid_size_inputs_valid_test: bool = flag(False, "leave out validation utterances longer than "
                                                            "--max-tokens-valid, saying how many, instead of stopping "
                                                            "with an error (fairseq's meaning)", group=DATA)


def add_args(parser: argparse.ArgumentParser) -> None:
    """The architecture flags (Wav2Vec2Config, CTCHeadConfig) and NVIDIA's spellings; the others are
    Wav2Vec2TrainingSettings'."""
    architecture = parser.add_argument_group("wav2vec 2.0 architecture (default: Base, or the --w2v-path model's)")
    add_dataclass_args(architecture, Wav2Vec2Config, defaults_named="Base")
    add_dataclass_args(argument_group(parser, FINETUNING), CTCHeadConfig)
    argument_group(parser, OPTIMIZER).add_argument(
        "--lr-policy", choices=list(LR_POLICIES), action=ReferenceLrPolicy,
        help="NVIDIA's name of --lr-schedule: poly (warmup-polynomial) or exp (tri-stage)")
    parser.set_defaults(sampling_rate=16000)
    add_compatibility_flags(parser, COMPATIBILITY_FLAGS)
    add_reference_names(parser, REFERENCE_FLAG_NAMES)


def translate_argv(argv: list[str], parser: argparse.ArgumentParser) -> list[str]:
    """NVIDIA's command line -> this project's, and the mode's defaults set on `parser`.

    The positional `pretrain` / `finetune` becomes --mode; NVIDIA's names of shared flags become ours
    (REFERENCE_FLAG_NAMES); `--flag_name` becomes `--flag-name`.
    """
    translated = read_reference_spellings(argv, parser, REFERENCE_FLAG_NAMES,
                                          positional=lambda token: ["--mode", token] if token in MODES else None)
    mode = translated[translated.index("--mode") + 1] if "--mode" in translated else "pretrain"
    if mode in MODE_DEFAULTS:
        parser.set_defaults(**MODE_DEFAULTS[mode])
    return translated


def model_config_overrides(args: argparse.Namespace) -> dict:
    """The architecture flags given (not None), as Wav2Vec2Config's keys."""
    return {field.name: getattr(args, field.name) for field in dataclasses.fields(Wav2Vec2Config)
            if getattr(args, field.name) is not None}
