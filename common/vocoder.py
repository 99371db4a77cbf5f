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
import dataclasses
import importlib
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

import torch

from common.arguments import (add_dataclass_args, check_values_as_flags, config_from_args, flag, non_negative_int,
                              positive_float, probability)
from common.audio import (GRIFFIN_LIM_ITERS, GRIFFIN_LIM_MOMENTUM, GRIFFIN_LIM_PHASE_INIT, GRIFFIN_LIM_POWER,
                          PHASE_INITS, AudioParams, griffin_lim)
from common.checkpoint import describe_source, load_checkpoint
from common.denoise import DenoiserSettings, add_denoiser_args
from common.errors import UserError
from common.registry import VOCODERS

GRIFFIN_LIM = "GriffinLim"


class Vocoder(Protocol):
    name: str
    audio_params: AudioParams

    def __call__(self, mel: torch.Tensor) -> torch.Tensor:
        """(B, n_mels, T) log mel -> (B, T * hop_length) audio in [-1, 1]."""
        ...


@dataclass
class GriffinLimSettings:
    """Griffin-Lim's flags: the vocoder of text to wav without a checkpoint, and the mel inverter's phase."""
    griffin_lim_iters: int = flag(GRIFFIN_LIM_ITERS, "Griffin-Lim's phase iterations (default: %(default)s)",
                                  type=non_negative_int)
    griffin_lim_power: float = flag(GRIFFIN_LIM_POWER, "the power the magnitude is raised to before Griffin-Lim; "
                                                       "above 1 sharpens it (default: %(default)s)",
                                    type=positive_float)
    griffin_lim_momentum: float = flag(GRIFFIN_LIM_MOMENTUM, "fast Griffin-Lim's momentum in [0, 1); 0 is the "
                                                             "original algorithm (default: %(default)s)",
                                       type=probability)
    griffin_lim_phase_init: str = flag(GRIFFIN_LIM_PHASE_INIT, "where Griffin-Lim's phase starts: random, or pghi "
                                                               "(estimated from the magnitude: closer to the "
                                                               "signal, twice the time at 32 iterations) "
                                                               "(default: %(default)s)", choices=PHASE_INITS)


@dataclass
class VocoderSettings:
    """Which vocoder turns the mels into audio, and how: what inference.py's vocoder flags resolve to
    (vocoder_settings_from_args), and what the Python API builds from its arguments."""
    name: str = GRIFFIN_LIM  # GRIFFIN_LIM or a VOCODERS name
    checkpoint: str | None = None
    checkpoint_flag: str = ""  # the option that gave the checkpoint (--waveglow, --vocoder-checkpoint), for messages
    options: Any = None  # the family's own settings: an instance of its VocoderSpec.settings (None: it has none)
    denoiser: DenoiserSettings = field(default_factory=DenoiserSettings)  # read by the vocoders with a denoiser
    griffin_lim: GriffinLimSettings = field(default_factory=GriffinLimSettings)
    compile: bool = False  # torch.compile the vocoder's hot loops
    seed: int = 1234  # the noise of the vocoders that draw it (WaveGlow, WaveNet)


@dataclass(frozen=True)
class VocoderSpec:
    """What a vocoder family gives inference.py: its vocoder.py declares `VOCODER = VocoderSpec(...)`."""
    name: str  # the --vocoder value, and lower-cased its checkpoint flag (--waveglow CKPT): the family's Recipe.name
    # (VocoderSettings, device, dtype) -> the Vocoder, ready to run on device in dtype (fp16/bf16: autocast, or a
    # whole-model cast where that is faster).
    load: Callable[[VocoderSettings, torch.device, torch.dtype], Vocoder]
    # The dataclass of the vocoder's own flags (-s, --ema...; made with common.arguments.flag), and their --help title.
    settings: type | None = None
    settings_title: str = ""
    has_denoiser: bool = False  # True: its load reads VocoderSettings.denoiser (common/denoise.py)
    # checkpoint (read by common.checkpoint.load_checkpoint) -> whether it is a file of another project this family
    # loads (NVIDIA's, jik876's), for vocoder_family; files of this project name their model and need none of this.
    recognizes: Callable[[dict], bool] | None = None
    # The Griffin-Lim settings its load reads (the mel inverter finds its magnitude's phase with Griffin-Lim); any
    # other given with it would change nothing, so they are refused.
    griffin_lim_settings: tuple[str, ...] = ()


class GriffinLimVocoder:
    name = "griffin_lim"

    def __init__(self, audio_params: AudioParams, n_iters: int = GRIFFIN_LIM_ITERS, power: float = GRIFFIN_LIM_POWER,
                 momentum: float = GRIFFIN_LIM_MOMENTUM, phase_init: str = GRIFFIN_LIM_PHASE_INIT):
        self.audio_params = audio_params
        self.n_iters, self.power, self.momentum, self.phase_init = n_iters, power, momentum, phase_init

    def __call__(self, mel: torch.Tensor) -> torch.Tensor:
        return griffin_lim(mel.float(), self.audio_params, n_iters=self.n_iters, power=self.power,
                           momentum=self.momentum, phase_init=self.phase_init)


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


def _bare(text) -> str:
    """A vocoder's name, case and punctuation aside: griffin-lim, GriffinLim and griffin_lim are one."""
    return str(text).replace("-", "").replace("_", "").lower()


def is_griffin_lim(text) -> bool:
    """Whether a vocoder's name (or the Python API's vocoder argument) means Griffin-Lim."""
    return _bare(text) == GRIFFIN_LIM.lower()


def vocoder_name(text: str) -> str:
    """--vocoder's value, case and punctuation aside (waveglow, WaveGlow, griffin-lim)."""
    for name in (GRIFFIN_LIM, *VOCODERS):
        if name.lower() == _bare(text):
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
        add_dataclass_args(group, GriffinLimSettings)
    for name in names:
        group.add_argument(checkpoint_flag(name), default=None, metavar="CKPT", required=only is not None,
                           help=f"{name} checkpoint" + ("" if only else f": vocode with {name}"))
        spec = vocoder_spec(name)
        if spec is not None and spec.settings is not None:
            add_dataclass_args(parser.add_argument_group(spec.settings_title), spec.settings)
    if any(spec is not None and spec.has_denoiser for spec in map(vocoder_spec, names)):
        add_denoiser_args(group)  # one -d for every vocoder offered, each applying its own default


def vocoder_settings_from_args(args: argparse.Namespace, only: str | None = None) -> VocoderSettings:
    """The VocoderSettings of inference.py's parsed flags: the vocoder from --vocoder, --vocoder-checkpoint and the
    vocoders' own checkpoint flags (contradictions are user errors), or `only` (-m WaveGlow: its checkpoint flag is
    required), with its own settings."""
    given = vars(args)  # the vocoders' checkpoint flags are named after the registry's families
    if only is not None:
        name, checkpoint, option = only, given[checkpoint_flag(only)[2:]], checkpoint_flag(only)
    else:
        by_flag = {family: given.get(checkpoint_flag(family)[2:]) for family in VOCODERS}
        name, checkpoint, option = chosen_vocoder(given.get("vocoder"), given.get("vocoder_checkpoint"), by_flag)
    spec = vocoder_spec(name) if name != GRIFFIN_LIM else None
    return VocoderSettings(
        name=name, checkpoint=checkpoint, checkpoint_flag=option,
        options=config_from_args(spec.settings, args) if spec is not None and spec.settings is not None else None,
        denoiser=config_from_args(DenoiserSettings, args) if "denoiser_mode" in given else DenoiserSettings(),
        griffin_lim=(config_from_args(GriffinLimSettings, args) if "griffin_lim_iters" in given
                     else GriffinLimSettings()),
        compile=args.compile, seed=args.seed)


def chosen_vocoder(named: str | None, general_checkpoint: str | None, checkpoints_by_flag: dict[str, str | None]
                   ) -> tuple[str, str | None, str]:
    """(vocoder name, its checkpoint, the flag that gave the checkpoint) from --vocoder, --vocoder-checkpoint and
    the vocoders' own checkpoint flags (name -> the path given to it); contradictions are user errors."""
    by_flag = [name for name, path in checkpoints_by_flag.items() if path]
    if len(by_flag) > 1:
        raise UserError(f"give one vocoder checkpoint, got {' and '.join(checkpoint_flag(name) for name in by_flag)}")
    if by_flag:
        name = by_flag[0]
        option = checkpoint_flag(name)
        if named is not None and named != name:
            raise UserError(f"--vocoder {named} contradicts {option}; drop one of them")
        if general_checkpoint:
            raise UserError(f"--vocoder-checkpoint and {option} both give a vocoder checkpoint; drop one of them")
        return name, checkpoints_by_flag[name], option
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


def load_vocoder(settings: VocoderSettings, device: torch.device, dtype: torch.dtype,
                 mel_audio_params: AudioParams | None):
    """The chosen vocoder, ready to run on device. Griffin-Lim takes the audio parameters of the mels it is given
    (mel_audio_params); the others carry theirs, which the caller checks against the mels'."""
    name, option = settings.name, settings.checkpoint_flag
    griffin_lim = settings.griffin_lim
    if name == GRIFFIN_LIM:
        return GriffinLimVocoder(mel_audio_params, griffin_lim.griffin_lim_iters, griffin_lim.griffin_lim_power,
                                 griffin_lim.griffin_lim_momentum, griffin_lim.griffin_lim_phase_init)
    spec = vocoder_spec(name)
    if spec is None:
        raise UserError(f"{option}: the {name} vocoder is not available in this installation")
    for setting in dataclasses.fields(GriffinLimSettings):
        given = getattr(griffin_lim, setting.name)
        if setting.name not in spec.griffin_lim_settings and given != setting.default:
            griffin_lim_flag = "--" + setting.name.replace("_", "-")
            raise UserError(f"{griffin_lim_flag} {given} sets Griffin-Lim, which the {name} vocoder of {option} does "
                            f"not use{' for its magnitude' if spec.griffin_lim_settings else ''}: drop "
                            f"{griffin_lim_flag}")
    return spec.load(settings, device, dtype)


def vocoder_settings_of_options(vocoder: str, options: dict, compile: bool = False) -> VocoderSettings:
    """The Python API's VocoderSettings: vocoder is a local checkpoint path (its family read from the file) or
    "griffin-lim"; the options that are settings of a vocoder (Griffin-Lim's, the denoiser's, the chosen family's)
    are taken out of `options` (keyword arguments by their flag's Python name). An option of another vocoder is a
    TypeError, as an unknown keyword is."""
    if is_griffin_lim(vocoder):
        name, checkpoint, option = GRIFFIN_LIM, None, ""
    else:
        name, checkpoint = vocoder_family(str(vocoder)), str(vocoder)
        option = checkpoint_flag(name)
    spec = vocoder_spec(name) if name != GRIFFIN_LIM else None
    family_options = spec.settings if spec is not None else None

    def take(settings_class: type | None):
        if settings_class is None:
            return None
        names = {setting.name for setting in dataclasses.fields(settings_class) if "set_by" not in setting.metadata}
        settings = settings_class(**{key: options.pop(key) for key in sorted(names & set(options))})
        check_values_as_flags(settings)
        return settings

    settings = VocoderSettings(name=name, checkpoint=checkpoint, checkpoint_flag=option, options=take(family_options),
                               denoiser=take(DenoiserSettings), griffin_lim=take(GriffinLimSettings), compile=compile)
    for other in VOCODERS:
        other_spec = vocoder_spec(other)
        for setting in dataclasses.fields(other_spec.settings) if other_spec and other_spec.settings else ():
            if setting.name in options:
                raise TypeError(f"{setting.name} is an option of the {other} vocoder, and the vocoder is {name}")
    return settings


def vocoder_option_names() -> list[str]:
    """Every vocoder setting the Python API takes by name (vocoder_settings_of_options)."""
    classes = [GriffinLimSettings, DenoiserSettings] + [spec.settings for spec in map(vocoder_spec, VOCODERS)
                                                        if spec is not None and spec.settings is not None]
    return sorted(setting.name for settings_class in classes for setting in dataclasses.fields(settings_class)
                  if "set_by" not in setting.metadata)


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
