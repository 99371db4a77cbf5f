"""wav2vec 2.0's flags, for pre-training and CTC fine-tuning (`python train.py -m wav2vec2 [pretrain|finetune] ...`).

Every flag has this project's hyphen spelling and the reference's underscore spelling, and NVIDIA's names of the
shared flags (`--lr`, `--update_freq`, `--max_update`, `--clip_norm`, `--output_dir`, `--fp16`...) are read as this
project's, so NVIDIA's command lines run (translate_argv). The mode (the reference's positional `pretrain` /
`finetune`, or `--mode`) picks the defaults of the reference's recipes (MODE_DEFAULTS): a preset (--config-file)
and the command line override them.

Architecture flags default to None: pre-training fills them from wav2vec2.model.BASE_CONFIG, fine-tuning from the
pre-trained checkpoint (--w2v-path), and a flag given on the command line wins in both.
"""
from __future__ import annotations

import argparse

from common.errors import UserError
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
}
LR_POLICIES = {"poly": "warmup-polynomial", "exp": "tri-stage"}  # --lr_policy: the reference's schedule names
# Reference flags that tune its hand-made mixed precision or its attention implementation; autocast keeps these
# computations in fp32 and attention is PyTorch's SDPA here, so they change nothing. Accepted so that NVIDIA's
# command lines run; any other unknown flag is an error.
REFERENCE_NO_OP_FLAGS = {"--infonce", "--fp32_pos_conv", "--fp32_conv_norms", "--fp32_cosine_sim",
                         "--fp32_transformer_layernorm", "--mha", "--log_frequency", "--required_batch_size_multiple",
                         "--enable_padding"}
NO_OP_FLAGS_WITH_VALUE = {"--mha", "--log_frequency", "--required_batch_size_multiple"}

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
    parser.set_defaults(sampling_rate=16000)


def translate_argv(argv: list[str], parser: argparse.ArgumentParser) -> list[str]:
    """NVIDIA's command line -> this project's, and the mode's defaults set on `parser`.

    The positional `pretrain` / `finetune` becomes --mode; NVIDIA's names of shared flags become ours
    (REFERENCE_FLAG_NAMES); `--lr_policy poly|exp` becomes --lr-schedule; `--flag_name` becomes `--flag-name` when
    that is a flag; the reference's precision and attention tuning flags are dropped (REFERENCE_NO_OP_FLAGS).
    """
    options = parser._option_string_actions
    translated: list[str] = []
    index = 0
    while index < len(argv):
        token = argv[index]
        name, equals, value = token.partition("=")
        index += 1
        if name.startswith("--") and name not in options:
            if name in REFERENCE_NO_OP_FLAGS:
                if name in NO_OP_FLAGS_WITH_VALUE and not equals:
                    index += 1  # its value goes too
                continue
            if name in ("--lr_policy", "--lr-policy"):
                if not equals:
                    value, index = (argv[index] if index < len(argv) else ""), index + 1
                if value not in LR_POLICIES:
                    raise UserError(f"--lr_policy must be one of {', '.join(LR_POLICIES)}, got '{value}'")
                translated += ["--lr-schedule", LR_POLICIES[value]]
                continue
            name = REFERENCE_FLAG_NAMES.get(name, name)
            if name not in options and name.replace("_", "-") in options:
                name = name.replace("_", "-")
        action = options.get(name)
        if token in MODES:  # a flag's value never reaches here: values are copied with their flag below
            translated += ["--mode", token]
            continue
        translated.append(name + equals + value if equals else name)
        if action is not None and not equals and action.nargs != 0:  # copy the flag's values as they are
            while index < len(argv) and not (argv[index].startswith("-") and len(argv[index]) > 1
                                             and not argv[index][1].isdigit()):
                translated.append(argv[index])
                index += 1
                if action.nargs in (None, "?"):
                    break
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
