"""NVIDIA's command lines, read by this project's parsers.

NVIDIA's launch scripts spell flags with underscores (`--max_tokens`), give some shared flags other names (`--lr`,
`--output_dir`) and pass flags that tune parts of their implementation this one does not have. A family whose
reference command lines differ from ours says so in its Recipe.translate_argv, built on translate_reference_argv,
and declares the flags that have no counterpart here with add_compatibility_flags: they are accepted, and `--help`
says that they are accepted only for compatibility and why they change nothing. Any other unknown flag stays an
error. The flag sets of NVIDIA's scripts are in tests/data/nvidia_command_lines.json, each run through --dry-run.
"""
from __future__ import annotations

import argparse
from typing import Callable

COMPATIBILITY_GROUP = "accepted for compatibility with NVIDIA's command lines"


def translate_reference_argv(argv: list[str], parser: argparse.ArgumentParser, renamed: dict[str, str],
                             positional: Callable[[str], list[str] | None] | None = None) -> list[str]:
    """NVIDIA's spellings -> this project's: a flag in `renamed` becomes the flag it names, `--flag_name` becomes
    `--flag-name` when that is a flag of `parser` and `--flag_name` is not. A flag's values are copied with it as they
    are (so a value is never taken for something else); any other token goes through `positional` (e.g. wav2vec
    2.0's `pretrain` -> `--mode pretrain`), which returns its replacement or None to keep it."""
    options = parser._option_string_actions
    translated: list[str] = []
    index = 0
    while index < len(argv):
        token = argv[index]
        name, equals, value = token.partition("=")
        index += 1
        if name.startswith("--") and name not in options:
            name = renamed.get(name, name)
            if name not in options and name.replace("_", "-") in options:
                name = name.replace("_", "-")
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


def add_compatibility_flags(parser: argparse.ArgumentParser, flags: dict[str, dict]) -> None:
    """flags: NVIDIA's name (`--fp32_pos_conv`) -> add_argument's keywords, whose `help` says what the flag does there
    and why it changes nothing here (or what it must be). A flag with no `type`, `choices` or `metavar` is a switch.
    Each is accepted in both spellings and kept as `compat_<name>` (none of the run's code reads it)."""
    group = parser.add_argument_group(COMPATIBILITY_GROUP)
    for name, keywords in flags.items():
        keywords = dict(keywords)
        keywords["help"] = f"compatibility only: {keywords['help']}"
        if not {"type", "choices", "metavar", "action"} & set(keywords):
            keywords["action"] = "store_true"
        spellings = [name] + ([name.replace("_", "-")] if "_" in name else [])
        group.add_argument(*spellings, dest="compat_" + name.lstrip("-"), **keywords)
