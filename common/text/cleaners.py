"""Text cleaners: functions str -> str run on a transcript before it is split into symbols.

Pick them by name (`--text-cleaners english_cleaners`); `CLEANERS` maps the names to the functions.
"""
from __future__ import annotations

import re
from typing import Callable

from unidecode import unidecode

from common.text.numbers import normalize_numbers

_WHITESPACE = re.compile(r"\s+")

# Expanded only with their full stop, so "dr." becomes "doctor" but the word "dr" is left alone.
_ABBREVIATIONS = [
    (re.compile(rf"\b{abbreviation}\.", re.IGNORECASE), expansion)
    for abbreviation, expansion in [
        ("mrs", "misess"), ("mr", "mister"), ("dr", "doctor"), ("st", "saint"), ("co", "company"),
        ("jr", "junior"), ("maj", "major"), ("gen", "general"), ("drs", "doctors"), ("rev", "reverend"),
        ("lt", "lieutenant"), ("hon", "honorable"), ("sgt", "sergeant"), ("capt", "captain"), ("esq", "esquire"),
        ("ltd", "limited"), ("col", "colonel"), ("ft", "fort"),
    ]
]


def to_ascii(text: str) -> str:
    """Transliterate to ASCII ("Café" -> "Cafe"). A character with no transliteration is kept, not dropped, so
    that the encoder reports it."""
    return unidecode(text, errors="preserve")


def expand_abbreviations(text: str) -> str:
    for pattern, expansion in _ABBREVIATIONS:
        text = pattern.sub(expansion, text)
    return text


def collapse_whitespace(text: str) -> str:
    return _WHITESPACE.sub(" ", text)


def basic_cleaners(text: str) -> str:
    """Lowercase and one space between words, nothing else: for text the English rules would damage."""
    return collapse_whitespace(text.lower())


def transliteration_cleaners(text: str) -> str:
    """For non-English text written in an alphabet that transliterates to ASCII."""
    return collapse_whitespace(to_ascii(text).lower())


def english_cleaners(text: str) -> str:
    """For English: ASCII, lowercase, numbers and abbreviations spelled out (what NVIDIA's models were trained on)."""
    # Numbers before transliteration, which would turn "£" into "PS" before the pounds could be read.
    text = to_ascii(normalize_numbers(text)).lower()
    text = expand_abbreviations(text)
    return collapse_whitespace(text)


CLEANERS: dict[str, Callable[[str], str]] = {
    cleaner.__name__: cleaner for cleaner in (english_cleaners, basic_cleaners, transliteration_cleaners)
}


def get_cleaner(name: str) -> Callable[[str], str]:
    if name not in CLEANERS:
        raise ValueError(f"unknown text cleaner {name!r}; valid names are: {', '.join(sorted(CLEANERS))}")
    return CLEANERS[name]
