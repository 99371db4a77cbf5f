"""HiFi-GAN's architecture flags (training flags such as --segment-length and --ema-decay are the recipe's), and how
NVIDIA's training command line (its scripts/train_lj22khz.sh) is read (translate_argv).

NVIDIA's underscore spellings (`--upsample_rates`) are read as this project's (`--upsample-rates`), so NVIDIA's
command lines run (common/arguments.py: read_reference_spellings). List values are read as the reference reads them,
a Python literal (`--upsample-rates [8,8,2,2]`), or as plain numbers (`--upsample-rates 8 8 2 2`; dilation groups as
`--resblock-dilation-sizes 1,3,5 1,3,5 1,3,5`).

The generator is resolved as: `--hifigan-preset` (default v1), then the size flags (GeneratorSizes) given over it,
then `--hifigan-config FILE` (jik876's config_v*.json), whose 6 generator keys decide, as in the reference; a size
flag that contradicts the file is an error rather than silently ignored. HiFiGANConfig is the model's constructor
arguments.
"""
from __future__ import annotations

import argparse
import ast
import dataclasses
import json
import math
from dataclasses import dataclass
from pathlib import Path

import torch

from common import mel_audio_data
from common.arguments import (add_compatibility_flags, add_dataclass_args, add_reference_names, config_dict,
                              config_from_args, flag, not_a_flag, path_from_current_folder, positive_float,
                              read_reference_spellings)
from common.errors import UserError, UserFileNotFoundError
from common.mel_audio_data import MelAudioDataSettings
from common.training_settings import default_of
from hifigan.model import MPD_PERIODS, PRESETS, Generator

# Every key of jik876's config_v1/v2/v3.json: the generator's, and training/audio settings this file does not use
# (the audio ones are checked against the audio flags). Anything else in a --hifigan-config file is a mistake.
JIK876_AUDIO_KEYS = {"num_mels": "n_mel_channels", "n_fft": "filter_length", "hop_size": "hop_length",
                     "win_size": "win_length", "sampling_rate": "sampling_rate", "fmin": "mel_fmin",
                     "fmax": "mel_fmax"}
JIK876_OTHER_KEYS = {"num_gpus", "batch_size", "learning_rate", "adam_b1", "adam_b2", "lr_decay", "seed",
                     "segment_size", "num_freq", "fmax_for_loss", "num_workers", "dist_config"}


def parse_int_list(tokens: list[str], nested: bool = False) -> list:
    """['[8,8,2,2]'] or ['8', '8', '2', '2'] -> [8, 8, 2, 2]; nested: ['[[1,3,5],[1,3,5]]'] or ['1,3,5', '1,3,5']
    -> [[1, 3, 5], [1, 3, 5]]. Raises ValueError with what was wrong."""
    text = " ".join(tokens).strip()
    if text.startswith(("[", "(")):
        value = ast.literal_eval(text)
    elif nested:
        value = [[int(number) for number in group.split(",") if number] for group in text.split()]
    else:
        value = [int(number) for number in text.replace(",", " ").split()]
    if not isinstance(value, (list, tuple)):
        value = [value]
    value = [list(item) if isinstance(item, (list, tuple)) else item for item in value]

    def positive_int(number) -> bool:
        return isinstance(number, int) and not isinstance(number, bool) and number > 0

    valid = bool(value) and all(
        (isinstance(item, list) and item and all(positive_int(number) for number in item)) if nested
        else positive_int(item) for item in value)
    if not valid:
        shape = "a list of lists of positive integers" if nested else "a list of positive integers"
        raise ValueError(f"expected {shape}, got {text!r}")
    return value


class IntListAction(argparse.Action):
    """Stores parse_int_list of the flag's tokens; a bad value is argparse's own error (exit 2, naming the flag)."""

    def __init__(self, option_strings, dest, nested: bool = False, **kwargs):
        self.nested = nested
        super().__init__(option_strings, dest, nargs="+", **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        try:
            setattr(namespace, self.dest, parse_int_list(values, self.nested))
        except (ValueError, SyntaxError) as error:
            raise argparse.ArgumentError(self, str(error))


@dataclass
class GeneratorSizes:
    """The generator's size flags; None: the --hifigan-preset's (see the module docstring for the order)."""
    resblock: str | None = flag(None, "residual block type: 1 (two convs per dilation, v1/v2) or 2 (one, v3)",
                                choices=["1", "2"])
    upsample_rates: list[int] | None = flag(None, "upsampling factor of each stage; their product is the hop length",
                                            action=IntListAction)
    upsample_kernel_sizes: list[int] | None = flag(None, "transposed-conv kernel of each stage", action=IntListAction)
    upsample_initial_channel: int | None = flag(None, "channels after conv_pre; halved at every stage")
    resblock_kernel_sizes: list[int] | None = flag(None, "kernel of each residual block of the fusion (v1: 3 7 11)",
                                                   action=IntListAction)
    resblock_dilation_sizes: list[list[int]] | None = flag(
        None, "dilations of each residual block, e.g. [[1,3,5],[1,3,5],[1,3,5]]", action=IntListAction, nested=True)


GENERATOR_KEYS = tuple(field.name for field in dataclasses.fields(GeneratorSizes))


@dataclass
class HiFiGANConfig:
    """HiFiGAN's constructor arguments (hifigan/model.py), saved in every checkpoint as model_config."""
    generator: dict = not_a_flag("generator_config: --hifigan-preset, GeneratorSizes' flags, --hifigan-config")
    ema: bool = not_a_flag("--ema-decay above 0", False)
    mpd_periods: list[int] = flag(list(MPD_PERIODS), "periods of the multi-period discriminator",
                                  action=IntListAction)
    discriminator_width_divisor: int = flag(
        1, "divide the discriminators' channels (small experiments, tests; published: 1)", choices=[1, 2, 4, 8],
        saved_if_changed=True)  # so full-size configs keep the keys they had before it existed


TRAINING = "HiFi-GAN training"


@dataclass(kw_only=True)
class HiFiGANTrainingSettings(MelAudioDataSettings):
    """train.py -m HiFiGAN's own flags, beside the shared ones and the data's."""
    # The reference's optimizer: AdamW's own weight decay (0.01), and no gradient clipping.
    weight_decay: float = default_of(MelAudioDataSettings, "weight_decay", 0.01)
    grad_clip_thresh: float = default_of(MelAudioDataSettings, "grad_clip_thresh", 0.0)
    mel_fmax_loss: float | None = flag(None, "top of the mel filterbank of the loss's mel (default: sampling rate "
                                             "/ 2)", type=positive_float, group=mel_audio_data.DATA)
    lr_decay: float = flag(0.9998, "both learning rates are multiplied by this every epoch (ExponentialLR)",
                           group=TRAINING)
    adam_betas: list[float] = flag([0.8, 0.99], "AdamW's betas for both optimizers", nargs=2,
                                   metavar=("BETA1", "BETA2"), group=TRAINING)
    ema_decay: float = flag(0.0, "keep an exponential moving average of the generator with this decay (0: none); "
                                 "saved in checkpoints, validated, and used by inference with --ema", group=TRAINING)
    real_features_without_grad: bool = flag(
        True, "in the generator's phase the discriminators judge the real audio without autograd: its feature maps "
              "are targets, so the gradients are the same with less backward work (--no-real-features-without-grad: "
              "one pass over real and generated audio with autograd, as the reference implementations run it)",
        group=TRAINING)
    fine_tune_from: str | None = flag(None, "start from this generator (a checkpoint of ours, NVIDIA's "
                                            "hifigan_gen_checkpoint or jik876's g_XXXXXXXX with --hifigan-config); "
                                            "our checkpoints bring their discriminators too", metavar="CKPT",
                                      group=TRAINING)
    fine_tune_discriminator_from: str | None = flag(None, "discriminators to start from with --fine-tune-from: "
                                                          "NVIDIA's hifigan_discrim_checkpoint or jik876's "
                                                          "do_XXXXXXXX", metavar="CKPT", group=TRAINING)
    fine_tune_lr_factor: float = flag(1.0, "multiplies -lr for both optimizers (NVIDIA fine-tunes with 3)",
                                      group=TRAINING)
    fine_tuning: bool = flag(False, "NVIDIA's fine-tuning in place: the base run's command line and -o/--output, plus "
                                    "this and --input-mels-dir. The first time, training goes on from the folder's "
                                    "last checkpoint (weights, optimizer states, epoch) with both learning rates x "
                                    "--fine-tune-lr-factor; later, the fine-tuning run resumes. --epochs counts the "
                                    "base epochs too (NVIDIA: 10000 after 6500); the base checkpoints are never "
                                    "deleted", group=TRAINING)
    # jik876's config, which decides the architecture (an architecture flag): reading jik876's generator files needs it
    hifigan_config: str | None = not_a_flag("--hifigan-config (architecture flags)", None)


def add_args(parser: argparse.ArgumentParser) -> None:
    """The architecture flags (GeneratorSizes, HiFiGANConfig, --hifigan-preset, --hifigan-config)."""
    architecture = parser.add_argument_group(
        "HiFi-GAN architecture (--hifigan-preset, then the size flags, then --hifigan-config)")
    architecture.add_argument("--hifigan-preset", choices=sorted(PRESETS), default="v1",
                              help="the paper's generator v1 (default), v2 (small) or v3 (ResBlock2, fastest)")
    architecture.add_argument("--hifigan-config", default=None, metavar="FILE",
                              help="jik876's config_v*.json: its generator keys decide the architecture")
    add_dataclass_args(architecture, GeneratorSizes)
    add_dataclass_args(architecture, HiFiGANConfig)


def read_hifigan_config(path: str | Path, args: argparse.Namespace | None = None) -> dict:
    """The 6 generator keys of a jik876-style JSON config (plus n_mel_channels from num_mels when present).
    Audio keys that disagree with the audio flags in `args` are errors naming both."""
    path = Path(path)
    source = f"--hifigan-config {path}"
    try:
        content = json.loads(path.read_text())
    except FileNotFoundError:
        raise UserFileNotFoundError(f"{source} does not exist") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise UserError(f"{source} is not a readable JSON file: {error}") from error
    if not isinstance(content, dict):
        raise UserError(f"{source} holds a JSON {type(content).__name__}, expected an object like jik876's "
                        "config_v1.json")
    unknown = sorted(set(content) - set(GENERATOR_KEYS) - set(JIK876_AUDIO_KEYS) - JIK876_OTHER_KEYS)
    if unknown:
        raise UserError(f"{source}: unknown keys {unknown}; it takes jik876's config keys, of which the generator's "
                        f"are {list(GENERATOR_KEYS)}")
    missing = [key for key in GENERATOR_KEYS if key not in content]
    if missing:
        raise UserError(f"{source}: missing generator keys {missing}")
    generator = {key: content[key] for key in GENERATOR_KEYS}
    generator["resblock"] = str(generator["resblock"])
    if "num_mels" in content:
        generator["n_mel_channels"] = content["num_mels"]
    if args is not None:
        differences = [f"{key} {content[key]} vs --{flag.replace('_', '-')} {getattr(args, flag)}"
                       for key, flag in JIK876_AUDIO_KEYS.items()
                       if key in content and content[key] is not None and hasattr(args, flag)
                       and float(content[key]) != float(getattr(args, flag))]
        if differences:
            raise UserError(f"{source}: its audio settings differ from the audio flags: {'; '.join(differences)}; "
                            "give the audio flags that match the file")
    return generator


def generator_config(args: argparse.Namespace) -> dict:
    """Generator kwargs from the flags (see the module docstring for the order); checked by building it on the meta
    device, so an impossible size is a UserError naming the flags instead of a traceback later."""
    generator = dict(PRESETS[args.hifigan_preset])
    given = {key: getattr(args, key) for key in GENERATOR_KEYS if getattr(args, key, None) is not None}
    generator.update(given)
    if getattr(args, "hifigan_config", None):
        from_file = read_hifigan_config(args.hifigan_config, args)
        contradicting = [f"--{key.replace('_', '-')} {value} (file: {from_file[key]})"
                         for key, value in given.items() if value != from_file[key]]
        if contradicting:
            raise UserError(f"--hifigan-config {args.hifigan_config} decides the generator, but flags contradict it: "
                            f"{', '.join(contradicting)}; drop them or edit the file")
        generator.update(from_file)
    generator.setdefault("n_mel_channels", getattr(args, "n_mel_channels", 80))
    if generator["n_mel_channels"] != getattr(args, "n_mel_channels", generator["n_mel_channels"]):
        raise UserError(f"the generator takes {generator['n_mel_channels']} mel channels (--hifigan-config), "
                        f"but --n-mel-channels is {args.n_mel_channels}")
    try:
        with torch.device("meta"):
            Generator(**generator)
    except ValueError as error:
        raise UserError(f"HiFi-GAN architecture flags: {error}") from error
    hop_length = getattr(args, "hop_length", None)
    if hop_length is not None and math.prod(generator["upsample_rates"]) != hop_length:
        raise UserError(f"the generator upsamples by {math.prod(generator['upsample_rates'])} "
                        f"(--upsample-rates {generator['upsample_rates']}), but --hop-length is {hop_length}: "
                        "the product of the upsampling rates must be the hop length")
    return generator


def model_config(args: argparse.Namespace) -> dict:
    return config_dict(config_from_args(HiFiGANConfig, args, generator=generator_config(args),
                                        ema=getattr(args, "ema_decay", 0.0) > 0))


def config_from_reference(config: dict) -> dict:
    """The `config` of NVIDIA's hifigan_gen_checkpoint_*.pt (the 6 generator keys, or a whole jik876 JSON when it
    was trained with --hifigan-config) -> model_config. Their files name no mel channels: 80, hard-coded there."""
    generator = {key: config[key] for key in GENERATOR_KEYS}
    generator["resblock"] = str(generator["resblock"])
    generator["n_mel_channels"] = config.get("num_mels", 80)
    return {"generator": generator, "mpd_periods": list(MPD_PERIODS), "ema": False}


# ---- NVIDIA's command line -------------------------------------------------------------------------------------

# NVIDIA's names of shared flags whose underscore spelling is not simply ours (`--batch_size` is `--batch-size`).
REFERENCE_FLAG_NAMES = {"--checkpoint_interval": "--epochs-per-checkpoint",
                        "--validation_interval": "--val-interval-epochs", "--resume": "--resume-from-last"}
COMPATIBILITY_FLAGS = {
    "--cuda": dict(help="a GPU is used whenever there is one (--cpu refuses it)"),
    "--samples_interval": dict(metavar="EPOCHS", type=int, help="audio samples go to TensorBoard at every "
                                                                 "validation here"),
}


def add_reference_args(parser: argparse.ArgumentParser) -> None:
    """The flags of NVIDIA's command line that are not ours under another spelling."""
    reference = parser.add_argument_group("NVIDIA's HiFi-GAN command line")
    reference.add_argument("--log_file", dest="log_file", type=path_from_current_folder, default=argparse.SUPPRESS,
                           help="NVIDIA's spelling of --log-file, a path from the current folder (--log-file's is "
                                "relative to --output)")
    add_compatibility_flags(parser, COMPATIBILITY_FLAGS)
    add_reference_names(parser, REFERENCE_FLAG_NAMES)


def translate_argv(argv: list[str], parser: argparse.ArgumentParser) -> list[str]:
    """NVIDIA's command line -> this project's: REFERENCE_FLAG_NAMES, and `--flag_name` to `--flag-name`."""
    return read_reference_spellings(argv, parser, REFERENCE_FLAG_NAMES)
