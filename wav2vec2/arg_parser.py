"""wav2vec 2.0's flags, for pre-training and CTC fine-tuning (`python train.py -m wav2vec2 [pretrain|finetune] ...`).

Every flag has this project's hyphen spelling and the reference's underscore spelling, and NVIDIA's names of the
shared flags (`--lr`, `--update_freq`, `--max_update`, `--clip_norm`, `--output_dir`, `--fp16`...) are read as this
project's, so NVIDIA's command lines run (translate_argv; common/reference_flags.py). Flags of theirs that tune
what this implementation does not have are accepted for compatibility only (COMPATIBILITY_FLAGS, marked so in
--help). The mode (the reference's positional `pretrain` / `finetune`, or `--mode`) picks the defaults of the
reference's recipes (MODE_DEFAULTS): a preset (--config-file) and the command line override them.

Architecture flags default to None: pre-training fills them from wav2vec2.model.BASE_CONFIG, fine-tuning from the
pre-trained checkpoint (--w2v-path), and a flag given on the command line wins in both.
"""
from __future__ import annotations

import argparse

from common.reference_flags import add_compatibility_flags, translate_reference_argv
from wav2vec2.model import BASE_CONFIG

MODES = ("pretrain", "finetune")

# The reference's (NVIDIA's) names of this project's shared flags.
REFERENCE_FLAG_NAMES = {
    "--lr": "--learning-rate", "--update_freq": "--grad-accumulation", "--update-freq": "--grad-accumulation",
    "--max_update": "--max-updates", "--max-update": "--max-updates", "--clip_norm": "--grad-clip-thresh",
    "--clip-norm": "--grad-clip-thresh", "--output_dir": "--output", "--output-dir": "--output",
    "--fp16": "--amp", "--initial_lr_scale": "--init-lr-scale", "--lr_poly_power": "--lr-power",
    "--sample_rate": "--sampling-rate", "--sample-rate": "--sampling-rate", "--ckpt": "--checkpoint-path",
    "--resume": "--resume-from-last", "--layerdrop": "--encoder-layerdrop",
    "--save_frequency": "--epochs-per-checkpoint", "--save-frequency": "--epochs-per-checkpoint",
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

# Architecture flags (fairseq's names): config key -> (type, nargs, help).
ARCHITECTURE_FLAGS = {
    "extractor_mode": (str, None, "default: GroupNorm on the first conv layer (Base); layer_norm: on every layer"),
    "conv_feature_layers": (str, None, "the conv stack as fairseq writes it: [(dim, kernel, stride), ...]"),
    "conv_bias": ("bool", None, "biases in the conv stack (Large)"),
    "encoder_layers": (int, None, "transformer layers"),
    "encoder_embed_dim": (int, None, "transformer width"),
    "encoder_ffn_embed_dim": (int, None, "feed-forward width"),
    "encoder_attention_heads": (int, None, "attention heads"),
    "activation_fn": (str, None, "feed-forward activation (gelu)"),
    "layer_norm_first": ("bool", None, "pre-LN transformer (Large)"),
    "dropout": (float, None, "dropout in the transformer"),
    "attention_dropout": (float, None, "dropout of attention weights"),
    "activation_dropout": (float, None, "dropout after the feed-forward activation"),
    "dropout_input": (float, None, "dropout of the projected features"),
    "dropout_features": (float, None, "dropout of the features the quantizer sees"),
    "encoder_layerdrop": (float, None, "probability of skipping each transformer layer in training"),
    "feature_grad_mult": (float, None, "gradient multiplier of the conv feature extractor (0: frozen)"),
    "final_dim": (int, None, "dimension of the contrastive projections"),
    "logit_temp": (float, None, "temperature of the contrastive logits"),
    "conv_pos": (int, None, "positional convolution's kernel"),
    "conv_pos_groups": (int, None, "positional convolution's groups"),
    "quantize_targets": ("bool", None, "quantize the contrastive targets (every recipe does)"),
    "latent_vars": (int, None, "codebook entries per group"),
    "latent_groups": (int, None, "codebook groups"),
    "latent_dim": (int, None, "codebook vector dimension (0: --final-dim)"),
    "latent_temp": (float, 3, "Gumbel temperature: start, floor, decay per update"),
    "num_negatives": (int, None, "distractors per masked frame, from the same utterance"),
    "mask_prob": (float, None, "probability of each frame starting a time mask"),
    "mask_length": (int, None, "frames per time mask"),
    "mask_channel_prob": (float, None, "probability of each channel starting a channel mask (fine-tuning)"),
    "mask_channel_length": (int, None, "channels per channel mask"),
    "hourglass_transformer": (str, None, "e.g. \"[2,(8,4),2]\": 2 layers, 8 at a quarter of the frame rate, 2"),
    "hourglass_resample": (str, None, "naive (average / repeat) or linear"),
    "normalize": ("bool", None, "normalise each waveform to zero mean and unit variance (Large)"),
}


def flag_names(key: str) -> list[str]:
    hyphens, underscores = "--" + key.replace("_", "-"), "--" + key
    return [hyphens] if hyphens == underscores else [hyphens, underscores]


def add_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--mode", choices=MODES, default="pretrain",
                        help="pre-training (contrastive) or fine-tuning (CTC); also the reference's positional "
                             "`pretrain` / `finetune`")

    architecture = parser.add_argument_group("wav2vec 2.0 architecture (default: Base, or the --w2v-path model's)")
    for key, (kind, nargs, help_text) in ARCHITECTURE_FLAGS.items():
        default = BASE_CONFIG[key]
        help_text = f"{help_text} (Base: {default})"
        if kind == "bool":
            architecture.add_argument(*flag_names(key), dest=key, action=argparse.BooleanOptionalAction,
                                      default=None, help=help_text)
        else:
            architecture.add_argument(*flag_names(key), dest=key, type=kind, nargs=nargs, default=None,
                                      help=help_text)

    loss = parser.add_argument_group("wav2vec 2.0 pre-training loss")
    loss.add_argument("--loss-weights", "--loss_weights", dest="loss_weights", type=float, nargs=2,
                      default=[0.1, 10.0], metavar=("DIVERSITY", "FEATURE_PENALTY"),
                      help="weights of the codebook diversity loss and the feature penalty (Large: 0.1 0)")

    finetuning = parser.add_argument_group("wav2vec 2.0 fine-tuning (--mode finetune)")
    finetuning.add_argument("--w2v-path", "--w2v_path", dest="w2v_path", default=None,
                            help="pre-trained model to fine-tune: ours, NVIDIA's or fairseq's .pt, or one converted "
                                 "from Hugging Face by `python -m wav2vec2.convert --from-hf`")
    finetuning.add_argument("--final-dropout", "--final_dropout", dest="final_dropout", type=float, default=0.0,
                            help="dropout before the CTC projection")
    finetuning.add_argument("--freeze-finetune-updates", "--freeze_finetune_updates", dest="freeze_finetune_updates",
                            type=int, default=0, help="only the CTC projection learns for this many updates")
    finetuning.add_argument("--apply-mask", "--apply_mask", dest="apply_mask", action=argparse.BooleanOptionalAction,
                            default=True, help="time and channel masking while fine-tuning")

    optimizer = parser.add_argument_group("wav2vec 2.0 optimizer (Adam with decoupled weight decay)")
    optimizer.add_argument("--adam-betas", "--adam_betas", dest="adam_betas", type=float, nargs=2, default=[0.9, 0.98],
                           metavar=("BETA1", "BETA2"))
    optimizer.add_argument("--adam-eps", "--adam_eps", dest="adam_eps", type=float, default=None,
                           help="pre-training 1e-6, fine-tuning 1e-8")
    optimizer.add_argument("--lr-policy", "--lr_policy", dest="lr_policy", choices=list(LR_POLICIES),
                           action=ReferenceLrPolicy,
                           help="NVIDIA's name of --lr-schedule: poly (warmup-polynomial) or exp (tri-stage)")

    data = parser.add_argument_group("wav2vec 2.0 data (fairseq manifests: <data>/<subset>.tsv)")
    data.add_argument("--data", default=None, help="folder of the .tsv manifests (and .ltr labels, dict.ltr.txt)")
    data.add_argument("--train-subset", "--train_subset", dest="train_subset", default="train")
    data.add_argument("--valid-subset", "--valid_subset", dest="valid_subset", default="valid")
    data.add_argument("--labels", default="ltr", help="label file extension; the dictionary is dict.<labels>.txt")
    data.add_argument("--max-tokens", "--max_tokens", dest="max_tokens", type=int, default=1_400_000,
                      help="audio samples per batch (padded size: items x longest)")
    data.add_argument("--max-tokens-valid", "--max_tokens_valid", dest="max_tokens_valid", type=int, default=None,
                      help="the same for validation (default: --max-tokens)")
    data.add_argument("--max-sample-size", "--max_sample_size", dest="max_sample_size", type=int, default=None,
                      help="pre-training crops utterances to at most this many samples (Base: 250000)")
    data.add_argument("--min-sample-size", "--min_sample_size", dest="min_sample_size", type=int, default=None,
                      help="utterances shorter than this are left out (Base pre-training: 32000)")
    data.add_argument("--num-concat-batches", "--num_concat_batches", dest="num_concat_batches", type=int, default=1,
                      help="forward N max-tokens batches as one (masks, negatives and loss as N separate batches)")
    data.add_argument("--resample", action="store_true",
                      help="resample audio at another rate to --sampling-rate instead of refusing it")
    data.add_argument("--skip-invalid-size-inputs-valid-test", "--skip_invalid_size_inputs_valid_test",
                      dest="skip_invalid_size_inputs_valid_test", action="store_true",
                      help="leave out validation utterances longer than --max-tokens-valid, saying how many, "
                           "instead of stopping with an error (fairseq's meaning)")
    parser.set_defaults(sampling_rate=16000)
    add_compatibility_flags(parser, COMPATIBILITY_FLAGS)


def translate_argv(argv: list[str], parser: argparse.ArgumentParser) -> list[str]:
    """NVIDIA's command line -> this project's, and the mode's defaults set on `parser`.

    The positional `pretrain` / `finetune` becomes --mode; NVIDIA's names of shared flags become ours
    (REFERENCE_FLAG_NAMES); `--flag_name` becomes `--flag-name`.
    """
    translated = translate_reference_argv(argv, parser, REFERENCE_FLAG_NAMES,
                                          positional=lambda token: ["--mode", token] if token in MODES else None)
    mode = translated[translated.index("--mode") + 1] if "--mode" in translated else "pretrain"
    if mode in MODE_DEFAULTS:
        parser.set_defaults(**MODE_DEFAULTS[mode])
    return translated


def model_config_overrides(args: argparse.Namespace) -> dict:
    """The architecture flags given (not None), as config keys."""
    overrides = {key: getattr(args, key) for key in ARCHITECTURE_FLAGS if getattr(args, key) is not None}
    if "latent_temp" in overrides:
        overrides["latent_temp"] = list(overrides["latent_temp"])
    return overrides
