"""The seam between acoustic models and vocoders: anything that turns a batch of log mels into audio, and how
inference.py chooses one.

inference.py talks to every vocoder (Griffin-Lim, WaveGlow, WaveNet, HiFi-GAN) through the Vocoder interface.
Each vocoder carries the AudioParams its mels must have, and inference.py refuses a pairing whose parameters differ.
The vocoders with checkpoints are the families of common.registry.VOCODER_FAMILIES, each declaring
`VOCODER = VocoderSpec(...)` in its vocoder.py; one is chosen by `--vocoder NAME --vocoder-checkpoint CKPT` or by its
own checkpoint flag, `--<name in lower case> CKPT` (`--waveglow W.pt`). Griffin-Lim, which needs no checkpoint, is
the default.
"""
from __future__ import annotations

import argparse
import importlib
from dataclasses import dataclass
from typing import Callable, Protocol

import torch

from common.arguments import non_negative_int, positive_float, probability
from common.audio import (GRIFFIN_LIM_ITERS, GRIFFIN_LIM_MOMENTUM, GRIFFIN_LIM_POWER, AudioParams,
                          griffin_lim)
from common.checkpoint import describe_source, load_checkpoint
from common.denoise import add_denoiser_args
from common.errors import UserError
from common.registry import VOCODERS

GRIFFIN_LIM = "GriffinLim"
GRIFFIN_LIM_DEFAULTS = {"--griffin-lim-iters": GRIFFIN_LIM_ITERS, "--griffin-lim-power": GRIFFIN_LIM_POWER,
                        "--griffin-lim-momentum": GRIFFIN_LIM_MOMENTUM}


class Vocoder(Protocol):
    name: str
    audio_params: AudioParams

    def __call__(self, mel: torch.Tensor) -> torch.Tensor:
        """(B, n_mels, T) log mel -> (B, T * hop_length) audio in [-1, 1]."""
        ...


@dataclass(frozen=True)
class VocoderSpec:
    """What a vocoder family gives inference.py: its vocoder.py declares `VOCODER = VocoderSpec(...)`."""
    name: str  # the --vocoder value, and lower-cased its checkpoint flag (--waveglow CKPT): the family's Recipe.name
    # (checkpoint path, args, device, flag) -> the Vocoder, ready to run on device; flag: the option that gave the
    # checkpoint (--waveglow, --vocoder-checkpoint), for messages.
    load: Callable[..., Vocoder]
    add_args: Callable[[argparse.ArgumentParser], None] | None = None  # the vocoder's own flags (-s, --ema...)
    has_denoiser: bool = False  # True: its load reads -d/--denoising-strength and --denoiser-mode (common/denoise.py)
    # checkpoint (read by common.checkpoint.load_checkpoint) -> whether it is a file of another project this family
    # loads (NVIDIA's, jik876's), for vocoder_family; files of this project name their model and need none of this.
    recognizes: Callable[[dict], bool] | None = None
    # The Griffin-Lim flags its load reads (the mel inverter finds its magnitude's phase with Griffin-Lim); any other
    # given with it would change nothing, so they are refused.
    griffin_lim_flags: tuple[str, ...] = ()


class GriffinLimVocoder:
    name = "griffin_lim"

    def __init__(self, audio_params: AudioParams, n_iters: int = GRIFFIN_LIM_ITERS, power: float = GRIFFIN_LIM_POWER,
                 momentum: float = GRIFFIN_LIM_MOMENTUM):
        self.audio_params = audio_params
        self.n_iters, self.power, self.momentum = n_iters, power, momentum

    def __call__(self, mel: torch.Tensor) -> torch.Tensor:
        return griffin_lim(mel.float(), self.audio_params, n_iters=self.n_iters, power=self.power,
                           momentum=self.momentum)


def checkpoint_flag(vocoder_name: str) -> str:
    return f"--{vocoder_name.lower()}"


def vocoder_spec(name: str) -> VocoderSpec | None:
    """The vocoder's spec, or None where this installation lacks its module (a folder left out of a slim image): its
    flags are still offered, and choosing it is an error."""
    try:
        return importlib.import_module(VOCODERS[name]).VOCODER
    except ModuleNotFoundError as error:
        if not f"{VOCODERS[name]}.".startswith(f"{error.name}."):
            raise  # the module (or its folder) is there but something it imports is missing: a real error
        return None


def vocoder_name(text: str) -> str:
    """--vocoder's value, case and punctuation aside (waveglow, WaveGlow, griffin-lim)."""
    wanted = text.replace("-", "").replace("_", "").lower()
    for name in (GRIFFIN_LIM, *VOCODERS):
        if name.lower() == wanted:
            return name
    raise argparse.ArgumentTypeError(f"unknown vocoder '{text}'; choose one of {', '.join((GRIFFIN_LIM, *VOCODERS))}")


def add_vocoder_args(parser: argparse.ArgumentParser, only: str | None = None) -> None:
    """The vocoder choice and every vocoder's own flags; `only` (for `inference.py -m WaveGlow`): that vocoder's
    checkpoint flag and flags alone, with no choice to make."""
    names = [only] if only is not None else list(VOCODERS)
    group = parser.add_argument_group("vocoder")
    if only is None:
        group.add_argument("--vocoder", type=vocoder_name, default=None,
                           help=f"{', '.join((GRIFFIN_LIM, *VOCODERS))} (default: the one whose checkpoint flag is "
                                f"given, else {GRIFFIN_LIM})")
        group.add_argument("--vocoder-checkpoint", default=None, metavar="CKPT",
                           help="checkpoint of the --vocoder (or use its own flag, e.g. --waveglow CKPT)")
        group.add_argument("--griffin-lim-iters", type=non_negative_int, default=GRIFFIN_LIM_ITERS,
                           help="Griffin-Lim's phase iterations (default: %(default)s)")
        group.add_argument("--griffin-lim-power", type=positive_float, default=GRIFFIN_LIM_POWER,
                           help="the power the magnitude is raised to before Griffin-Lim; above 1 sharpens it "
                                "(default: %(default)s)")
        group.add_argument("--griffin-lim-momentum", type=probability, default=GRIFFIN_LIM_MOMENTUM,
                           help="fast Griffin-Lim's momentum in [0, 1); 0 is the original algorithm "
                                "(default: %(default)s)")
    for name in names:
        group.add_argument(checkpoint_flag(name), default=None, metavar="CKPT", required=only is not None,
                           help=f"{name} checkpoint" + ("" if only else f": vocode with {name}"))
        spec = vocoder_spec(name)
        if spec is not None and spec.add_args is not None:
            spec.add_args(parser)
    if any(spec is not None and spec.has_denoiser for spec in map(vocoder_spec, names)):
        add_denoiser_args(group)  # one -d for every vocoder offered, each applying its own default


def chosen_vocoder(args: argparse.Namespace) -> tuple[str, str | None, str]:
    """(vocoder name, its checkpoint, the flag that gave the checkpoint) from --vocoder, --vocoder-checkpoint and
    the vocoders' own checkpoint flags; contradictions are user errors."""
    by_flag = [name for name in VOCODERS if getattr(args, checkpoint_flag(name)[2:], None)]
    if len(by_flag) > 1:
        raise UserError(f"give one vocoder checkpoint, got {' and '.join(checkpoint_flag(name) for name in by_flag)}")
    named = getattr(args, "vocoder", None)
    general_checkpoint = getattr(args, "vocoder_checkpoint", None)
    if by_flag:
        name = by_flag[0]
        flag = checkpoint_flag(name)
        if named is not None and named != name:
            raise UserError(f"--vocoder {named} contradicts {flag}; drop one of them")
        if general_checkpoint:
            raise UserError(f"--vocoder-checkpoint and {flag} both give a vocoder checkpoint; drop one of them")
        return name, getattr(args, flag[2:]), flag
    if named is None:
        if general_checkpoint:
            raise UserError(f"--vocoder-checkpoint needs --vocoder NAME ({', '.join(VOCODERS)})")
        return GRIFFIN_LIM, None, ""
    if named == GRIFFIN_LIM:
        if general_checkpoint:
            raise UserError(f"--vocoder {GRIFFIN_LIM} takes no checkpoint; drop --vocoder-checkpoint")
        return GRIFFIN_LIM, None, ""
    if not general_checkpoint:
        raise UserError(f"--vocoder {named} needs its checkpoint: --vocoder-checkpoint CKPT or "
                        f"{checkpoint_flag(named)} CKPT")
    return named, general_checkpoint, "--vocoder-checkpoint"


def load_vocoder(args: argparse.Namespace, device: torch.device, mel_audio_params: AudioParams):
    """The chosen vocoder, ready to run on device. Griffin-Lim takes the audio parameters of the mels it is given
    (mel_audio_params); the others carry theirs, which the caller checks against the mels'."""
    name, checkpoint, flag = chosen_vocoder(args)
    if name == GRIFFIN_LIM:
        return GriffinLimVocoder(mel_audio_params, args.griffin_lim_iters, args.griffin_lim_power,
                                 args.griffin_lim_momentum)
    spec = vocoder_spec(name)
    if spec is None:
        raise UserError(f"{flag}: the {name} vocoder is not available in this installation")
    for griffin_lim_flag, default in GRIFFIN_LIM_DEFAULTS.items():
        given = getattr(args, griffin_lim_flag[2:].replace("-", "_"), default)
        if griffin_lim_flag not in spec.griffin_lim_flags and given != default:
            raise UserError(f"{griffin_lim_flag} {given} sets Griffin-Lim, which the {name} vocoder of {flag} does "
                            f"not use{' for its magnitude' if spec.griffin_lim_flags else ''}: drop "
                            f"{griffin_lim_flag}")
    return spec.load(checkpoint, args, device, flag=flag)


def vocoder_family(path: str, flag: str | None = None) -> str:
    """The vocoder family (a VOCODERS name) whose checkpoint `path` is: the model a file of this project names, else
    the family that recognizes the file (NVIDIA's WaveGlow, NVIDIA's or jik876's HiFi-GAN). A folder written by
    scripts.export_weights names its model in its metadata."""
    from common.exported_weights import is_exported_folder, read_exported_metadata

    checkpoint = read_exported_metadata(path) if is_exported_folder(path) else load_checkpoint(path, flag=flag)
    source = describe_source(path, flag)
    named = checkpoint.get("model_name")
    if named is not None:
        if named not in VOCODERS:
            raise UserError(f"{source} is a {named} checkpoint, not a vocoder's ({', '.join(VOCODERS)})")
        return named
    for name in VOCODERS:
        spec = vocoder_spec(name)
        if spec is not None and spec.recognizes is not None and spec.recognizes(checkpoint):
            return name
    raise UserError(f"{source} is no vocoder checkpoint this project reads (ours, NVIDIA's WaveGlow, NVIDIA's or "
                    f"jik876's HiFi-GAN generator; keys: {sorted(checkpoint)[:10]})")
