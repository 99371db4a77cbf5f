"""Command-line flags every model shares, the flags of a family's config dataclass, `--config-file` presets, and
NVIDIA's spellings of the flags.

A family's model configuration is a dataclass of its model's constructor arguments whose fields carry their flag's
help and default (`flag(...)`); add_dataclass_args makes `--field-name` of each field, and the family's model_config
is config_dict of the dataclass built from the parsed flags (config_from_args).

A config file is JSON: flag names (with dashes or underscores) to values, optionally grouped in sections such as
{"audio": {...}, "training": {...}}. Its values become defaults; flags given on the command line win. Each value goes
through its flag's own type, range and choices checks, as the command line's tokens do, and the checks across flags
(check_after_parsing) run on the parsed values wherever they came from. Unknown keys and refused values are errors
naming the file and the key, as unknown flags and bad values are.

NVIDIA's launch scripts spell flags with underscores (`--max_tokens`), give some shared flags other names (`--lr`,
`--output_dir`) and pass flags that tune parts of their implementation this one does not have. Every parser reads
`--flag_name` as `--flag-name` (read_reference_spellings); a family whose reference names flags differently says
so in its Recipe.translate_argv, built on read_reference_spellings with its `renamed` table, and declares the flags
that have no counterpart here with add_compatibility_flags: they are accepted, and `--help` says that they are
accepted only for compatibility and why they change nothing. Any other unknown flag stays an error. The flag sets
of NVIDIA's scripts are in tests/data/nvidia_command_lines.json, each run through --dry-run.
"""
from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import types
import typing
from pathlib import Path
from typing import Callable

from common.audio import AudioParams
from common.errors import UserError, UserFileNotFoundError
from common.filelist import read_text_file

# Flag value checkers: argparse turns their ArgumentTypeError into an error naming the flag and the value.


def _at_least(value, minimum):
    if value < minimum:
        raise argparse.ArgumentTypeError(f"must be >= {minimum:g}, got {value}")
    return value


def _number(text: str, kind: type):
    """int(text) or float(text), refused in argparse's own words (not in the checker's name, which it would use)."""
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid {kind.__name__} value: {text!r}") from None


def non_negative_int(text: str) -> int:
    return _at_least(_number(text, int), 0)


def positive_int(text: str) -> int:
    return _at_least(_number(text, int), 1)


def odd_positive_int(text: str) -> int:
    value = positive_int(text)
    if value % 2 == 0:
        raise argparse.ArgumentTypeError(f"must be odd (\"same\" padding), got {value}")
    return value


def probability(text: str) -> float:
    value = _number(text, float)
    if not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(f"must be in [0, 1), got {value}")
    return value


def non_negative_float(text: str) -> float:
    return _at_least(_number(text, float), 0.0)


def positive_float(text: str) -> float:
    value = _number(text, float)
    if value <= 0.0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {value}")
    return value


def add_audio_args(parser: argparse.ArgumentParser) -> None:
    """The audio flags, each with its range check. What they must satisfy together (a window within the FFT, the
    mel filterbank below the Nyquist frequency) is AudioParams.check_flags, which a family that computes mels has
    parse_args run on the parsed values (check_audio_flags)."""
    group = parser.add_argument_group("audio parameters")
    defaults = AudioParams()
    group.add_argument("--sampling-rate", type=positive_int, default=defaults.sampling_rate)
    group.add_argument("--filter-length", type=positive_int, default=defaults.filter_length, help="FFT size")
    group.add_argument("--hop-length", type=positive_int, default=defaults.hop_length)
    group.add_argument("--win-length", type=positive_int, default=defaults.win_length)
    group.add_argument("--n-mel-channels", type=positive_int, default=defaults.n_mel_channels)
    group.add_argument("--mel-fmin", type=non_negative_float, default=defaults.mel_fmin)
    group.add_argument("--mel-fmax", type=positive_float, default=defaults.mel_fmax)


def audio_params_of(args: argparse.Namespace) -> AudioParams:
    """The AudioParams of the parsed audio flags."""
    return config_from_args(AudioParams, args)


def check_audio_flags(args: argparse.Namespace) -> None:
    """AudioParams.check_flags of the parsed audio flags (check_after_parsing runs it)."""
    audio_params_of(args).check_flags()


PRECISION_FLAGS = ("amp", "bf16", "fp32")
FLAG_OF_PRECISION = {"fp16": "amp", "bf16": "bf16", "fp32": "fp32"}  # the flag that asks for each


class ChoosePrecision(argparse.Action):
    """--amp, --bf16 and --fp32 each switch the other two off, so the last one named wins: over a preset's (whose
    values are defaults) and over an earlier flag (a script may put --fp32 before its user's arguments)."""

    def __init__(self, option_strings, dest, default=False, **keywords):
        super().__init__(option_strings, dest, nargs=0, default=default, **keywords)

    def __call__(self, parser, namespace, values, option_string=None):
        for precision in PRECISION_FLAGS:
            setattr(namespace, precision, precision == self.dest)


def add_device_args(group) -> None:
    """--cpu, and --amp (fp16 autocast; training adds dynamic loss scaling), --bf16 or --fp32 (the last one named
    wins): for training and inference."""
    group.add_argument("--cpu", action="store_true", help="run on the CPU even if a GPU is present")
    group.add_argument("--amp", action=ChoosePrecision, help="fp16 mixed precision")
    group.add_argument("--bf16", action=ChoosePrecision, help="bf16 mixed precision")
    group.add_argument("--fp32", action=ChoosePrecision,
                       help="full precision (the default, but at inference where a CPU computes bf16 natively "
                            "for the models docs/inference.md names; the last of --amp, --bf16 and --fp32 wins, over a "
                            "preset's too)")


def read_config_file(path: str | Path, parser: argparse.ArgumentParser) -> dict:
    """A JSON preset's settings as {dest: value}, each value checked and converted by the flag it names exactly as
    that flag on the command line would be (its type, range and choices checks, then its action): a preset cannot
    set what the command line could not. A key is a flag's name (dashes or underscores, or one of its other names)
    or its destination; an unknown key, or a value the flag refuses, is a UserError naming the file and the key."""
    path = Path(path)
    if not path.is_file():
        what = "is a folder, not a file" if path.is_dir() else "does not exist"
        raise UserFileNotFoundError(f"--config-file {path} {what}")
    text = read_text_file(path, "--config-file")
    try:
        content = json.loads(text)
    except json.JSONDecodeError as error:
        raise UserError(f"--config-file {path} is not valid JSON: {error}")
    if not isinstance(content, dict):
        raise UserError(f"--config-file {path}: expected a JSON object of flag names to values (optionally in "
                        f"sections), found {type(content).__name__}")
    settings = []
    for key, value in content.items():
        if isinstance(value, dict):  # a section such as "audio"
            settings += value.items()
        else:
            settings.append((key, value))
    values = argparse.Namespace()  # what the settings' actions set, in the file's order (the last one wins)
    for key, value in settings:
        action = preset_action(parser, key)
        if action is None:
            raise UserError(f"--config-file {path}: unknown setting '{key}'")
        try:
            apply_preset_value(parser, action, value, values)
        except argparse.ArgumentError as error:
            raise UserError(f"--config-file {path}: {key}: {error.message}") from None
    return vars(values)


def preset_action(parser: argparse.ArgumentParser, key: str) -> argparse.Action | None:
    """The flag a preset's key names: by a name of the flag, in either spelling, else by its destination."""
    options = parser._option_string_actions
    action = options.get("--" + key.replace("_", "-")) or options.get("--" + key)
    if action is None:
        action = next((action for action in parser._actions
                       if action.option_strings and action.dest == key.replace("-", "_")), None)
    if isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
        return None  # not a setting: they print and exit
    return action


def apply_preset_value(parser: argparse.ArgumentParser, action: argparse.Action, value,
                       values: argparse.Namespace) -> None:
    """What `--flag VALUE` would set, with VALUE from JSON: the value becomes the flag's tokens, which go through
    the parser's own conversion (argparse's type and choices checks, the same path as the command line's tokens)
    and then the flag's action. A switch takes true or false (false: its --no- form, or off); null is only for a
    flag whose default is null; a list is for a flag that takes several values."""
    if action.nargs == 0:  # a switch: store_true, --x/--no-x, --amp/--bf16/--fp32
        if not isinstance(value, bool):
            raise argparse.ArgumentError(action, f"expected true or false, got {json.dumps(value)}")
        negative = next((name for name in action.option_strings if name.startswith("--no-")), None)
        if value or negative is not None:
            action(parser, values, None, action.option_strings[0] if value else negative)
        else:
            setattr(values, action.dest, False)
        return
    if value is None:
        if action.required:
            raise argparse.ArgumentError(action, "a value is required here, not null")
        if action.default is not None:
            raise argparse.ArgumentError(action, f"null is only for a setting whose default is null; give a value "
                                                 f"(the default is {json.dumps(action.default, default=str)})")
        setattr(values, action.dest, None)
        return
    several = action.nargs in ("+", "*") or isinstance(action.nargs, int)
    if isinstance(value, list) and not several:
        raise argparse.ArgumentError(action, f"expected one value, got a list: {json.dumps(value)}")
    items = value if isinstance(value, list) else [value]
    if isinstance(action.nargs, int) and len(items) != action.nargs:
        raise argparse.ArgumentError(action, f"expected a list of {action.nargs} values, got {json.dumps(value)}")
    if action.nargs == "+" and not items:
        raise argparse.ArgumentError(action, "expected at least one value, got an empty list")
    if any(isinstance(item, dict) for item in items):
        raise argparse.ArgumentError(action, f"expected a value or a list of values, got {json.dumps(value)}")
    # JSON's spelling of a value is its command-line token (true, 0.001, "text"), which argparse converts; a list of
    # lists is one token, its JSON text, as on the command line (HiFi-GAN's --resblock-dilation-sizes).
    if any(isinstance(item, list) for item in items):
        items = [json.dumps(items)]
    tokens = [item if isinstance(item, str) else json.dumps(item) for item in items]
    action(parser, values, parser._get_values(action, tokens if several else tokens[:1]), action.option_strings[0])


def check_after_parsing(parser: argparse.ArgumentParser, check: Callable[[argparse.Namespace], None]) -> None:
    """Have parse_args run check(args) on the parsed values: for what no one flag's type can check (values that
    must agree with each other, such as the audio flags), so that it holds whether the values came from the command
    line or a preset. check raises a UserError naming the flags."""
    vars(parser).setdefault("checks_after_parsing", []).append(check)


def parse_args(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """parse_args that first applies --config-file as defaults (so the file may supply required flags), each value
    checked as the flag it names (read_config_file), then runs the checks across flags (check_after_parsing)."""
    config_path = None
    for index, token in enumerate(argv):
        if token == "--config-file" and index + 1 < len(argv):
            config_path = argv[index + 1]
        elif token.startswith("--config-file="):
            config_path = token.split("=", 1)[1]
    if config_path is not None:
        values = read_config_file(config_path, parser)
        for action in parser._actions:
            if action.dest in values:
                action.required = False
        parser.set_defaults(**values)
    args = parser.parse_args(argv)
    for check in vars(parser).get("checks_after_parsing", []):
        check(args)
    return args


# ---- a family's config dataclass and its flags -------------------------------------------------------------------


def flag(default, help: str | None = None, **keywords) -> dataclasses.Field:
    """A config field that is a command-line flag, `--field-name`, with this default and help. keywords go to
    add_argument (`type=positive_int`, `choices`, `action`, `nargs`, `metavar`) and may be `aliases=[...]` (other
    names of the flag), `group="title"` (its --help group), `exclusive="name"` (flags of one group that exclude each
    other share a name) or `saved_if_changed=True` (left out of config_dict at its default, so configs saved before
    the field existed keep their keys)."""
    default_keyword = ({"default_factory": lambda: copy.deepcopy(default)} if isinstance(default, (list, dict))
                       else {"default": default})
    return dataclasses.field(**default_keyword, metadata={"help": help, **keywords})


def check_values_as_flags(settings) -> None:
    """Refuse a settings dataclass's value that its flag would refuse (the flag's `type` check, e.g. positive_int, and
    its `choices`), in a UserError naming the setting as the Python API takes it: values given in Python are checked as
    the command line's and a preset's are. None (a flag's "not given") and lists are left to the code that reads
    them."""
    for field in dataclasses.fields(settings):
        value = getattr(settings, field.name)
        if value is None or isinstance(value, (bool, list, tuple, dict)):
            continue
        check, choices = field.metadata.get("type"), field.metadata.get("choices")
        try:
            converted = check(str(value)) if check is not None else value
        except (argparse.ArgumentTypeError, ValueError) as error:
            raise UserError(f"{field.name}={value!r}: {error}") from None
        if choices is not None and converted not in choices:
            raise UserError(f"{field.name}={value!r}: choose one of {', '.join(map(str, choices))}")


def required_flag(help: str | None = None, **keywords) -> dataclasses.Field:
    """A field without a default whose flag the command line (or a preset) must give, as flag() takes it."""
    return dataclasses.field(metadata={"help": help, "required": True, **keywords})


def argument_group(parser: argparse.ArgumentParser, title: str):
    """The parser's --help group of this title, made the first time it is asked for."""
    groups = vars(parser).setdefault("groups_by_title", {})
    if title not in groups:
        groups[title] = parser.add_argument_group(title)
    return groups[title]


def not_a_flag(set_by: str, default=dataclasses.MISSING) -> dataclasses.Field:
    """A config field that has no flag of its own: `set_by` says where its value comes from (a shared flag such as
    --n-mel-channels, whose value has the field's name in the parsed args, or the family's code)."""
    return dataclasses.field(default=default, metadata={"set_by": set_by})


def audio_flag(name: str) -> dataclasses.Field:
    """A config field set by the shared audio flag of the same name (common/audio.py: --n-mel-channels,
    --hop-length...), so it is saved in the model_config as well as in the checkpoint's audio_params."""
    return not_a_flag(f"--{name.replace('_', '-')} (audio flags)", getattr(AudioParams(), name))


def _flag_type(annotation) -> tuple[type, bool]:
    """(the type of one value, whether the flag takes a list) of a field's annotation: int | None -> (int, False),
    list[float] -> (float, True)."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        annotation = next(arg for arg in typing.get_args(annotation) if arg is not type(None))
    if typing.get_origin(annotation) is list:
        return typing.get_args(annotation)[0], True
    return annotation, False


def add_dataclass_args(group, config_class: type, defaults_named: str | None = None) -> None:
    """`--field-name` for every field of config_class made by flag() or required_flag(), its value in
    args.field_name. The type comes from the annotation (a bool is a switch: `--name`, and `--no-name` unless it is
    off by default; a list takes one or more values) unless the field's keywords say otherwise. A field whose
    keywords name a group goes in the parser's group of that title (`group` is then the parser), else in `group`.
    defaults_named: every flag defaults to None (the caller fills in the dataclass's defaults, or another model's
    values) and its help ends in "(<defaults_named>: <the dataclass's default>)"."""
    annotations = typing.get_type_hints(config_class)
    exclusive_groups = {}
    for field in dataclasses.fields(config_class):
        if "set_by" in field.metadata:
            continue
        keywords = dict(field.metadata)
        aliases = keywords.pop("aliases", ())  # a short one (-o) first, as messages name the flag by its names
        names = [*(alias for alias in aliases if not alias.startswith("--")), "--" + field.name.replace("_", "-"),
                 *(alias for alias in aliases if alias.startswith("--"))]
        keywords.pop("saved_if_changed", None)
        title, exclusive = keywords.pop("group", None), keywords.pop("exclusive", None)
        target = argument_group(group, title) if title is not None else group
        if exclusive is not None:
            if (title, exclusive) not in exclusive_groups:
                exclusive_groups[title, exclusive] = target.add_mutually_exclusive_group()
            target = exclusive_groups[title, exclusive]
        if field.default is not dataclasses.MISSING:
            default = field.default
        elif field.default_factory is not dataclasses.MISSING:
            default = field.default_factory()
        else:
            default = None  # a required flag
        if defaults_named is not None:
            keywords["help"] = f"{keywords['help']} ({defaults_named}: {default})"
            default = None
        if "action" not in keywords:
            value_type, is_list = _flag_type(annotations[field.name])
            if value_type is bool:
                keywords["action"] = "store_true" if default is False else argparse.BooleanOptionalAction
            else:
                if value_type is not str:
                    keywords.setdefault("type", value_type)
                if is_list:
                    keywords.setdefault("nargs", "+")
        target.add_argument(*names, dest=field.name, default=default, **keywords)


def config_from_args(config_class: type, args: argparse.Namespace, **values):
    """config_class with each field from `values` if there, else from the parsed flag of the same name; a field
    set_by another part's flag (not_a_flag) with a default keeps it where the parser has no such flag."""
    parsed = vars(args)
    for field in dataclasses.fields(config_class):
        if field.name in values:
            continue
        if field.name in parsed:
            values[field.name] = parsed[field.name]
        elif "set_by" not in field.metadata or field.default is dataclasses.MISSING:
            raise KeyError(f"{config_class.__name__}.{field.name}: the parsed flags have no {field.name}")
    return config_class(**values)


def config_dict(config) -> dict:
    """The plain dict that checkpoints save as model_config: asdict(config), less the fields marked
    saved_if_changed that are at their default."""
    values = dataclasses.asdict(config)
    for field in dataclasses.fields(config):
        if field.metadata.get("saved_if_changed") and values[field.name] == field.default:
            del values[field.name]
    return values


# ---- NVIDIA's command lines ----------------------------------------------------------------------------------

COMPATIBILITY_GROUP = "accepted for compatibility with NVIDIA's command lines"
UNDERSCORE_SPELLING = "Every --flag-name is also read as --flag_name, NVIDIA's spelling."


def read_reference_spellings(argv: list[str], parser: argparse.ArgumentParser, renamed: dict[str, str] | None = None,
                             positional: Callable[[str], list[str] | None] | None = None) -> list[str]:
    """NVIDIA's spellings -> this project's: `--flag_name` becomes `--flag-name` when that is a flag of `parser` and
    `--flag_name` is not; otherwise a flag in `renamed` (NVIDIA's name, in either spelling) becomes the flag it
    names. A flag's values are copied with it as they are (so a value is never taken for something else); any other
    token goes through `positional` (e.g. wav2vec 2.0's `pretrain` -> `--mode pretrain`), which returns its
    replacement or None to keep it. A misspelt flag is left as it is, for the parser to refuse."""
    options = parser._option_string_actions
    renamed = {name.replace("_", "-"): ours for name, ours in (renamed or {}).items()}
    translated: list[str] = []
    index = 0
    while index < len(argv):
        token = argv[index]
        name, equals, value = token.partition("=")
        index += 1
        dashed = name.replace("_", "-")
        if name.startswith("--") and name not in options and (dashed in options or dashed in renamed):
            name = dashed if dashed in options else renamed[dashed]
        replacement = positional(token) if positional is not None and not token.startswith("-") else None
        if replacement is not None:
            translated += replacement
            continue
        translated.append(name + equals + value if equals else name)
        action = options.get(name)
        if action is not None and not equals and action.nargs != 0:  # copy the flag's values as they are
            while index < len(argv) and not (argv[index].startswith("-") and len(argv[index]) > 1
                                             and not argv[index][1].isdigit()):
                translated.append(argv[index])
                index += 1
                if action.nargs in (None, "?"):
                    break
    return translated


def path_from_current_folder(text: str) -> str:
    """The type of NVIDIA's `--log_file`, a path from the current folder (this project's --log-file is relative to
    --output): made absolute, which --output then leaves as it is."""
    return str(Path(text).resolve())


def compatibility_group(parser: argparse.ArgumentParser):
    """The --help section of what a parser accepts only for NVIDIA's command lines (made on first use)."""
    for group in parser._action_groups:
        if group.title == COMPATIBILITY_GROUP:
            return group
    return parser.add_argument_group(COMPATIBILITY_GROUP, UNDERSCORE_SPELLING)


def add_reference_names(parser: argparse.ArgumentParser, renamed: dict[str, str]) -> None:
    """Says in --help which other names of NVIDIA's (read_reference_spellings' `renamed`) mean which flag."""
    group = compatibility_group(parser)
    group.description += " NVIDIA's other names: " + ", ".join(
        f"{theirs} for {ours}" for theirs, ours in renamed.items()) + "."


def add_compatibility_flags(parser: argparse.ArgumentParser, flags: dict[str, dict]) -> None:
    """flags: NVIDIA's name (`--fp32_pos_conv`) -> add_argument's keywords, whose `help` says what the flag does there
    and why it changes nothing here (or what it must be). A flag with no `type`, `choices` or `metavar` is a switch.
    Each is accepted in both spellings and kept as `compat_<name>` (none of the run's code reads it)."""
    group = compatibility_group(parser)
    for name, keywords in flags.items():
        keywords = dict(keywords)
        keywords["help"] = f"compatibility only: {keywords['help']}"
        if not {"type", "choices", "metavar", "action"} & set(keywords):
            keywords["action"] = "store_true"
        spellings = [name] + ([name.replace("_", "-")] if "_" in name else [])
        group.add_argument(*spellings, dest="compat_" + name.lstrip("-"), **keywords)
