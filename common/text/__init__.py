"""The text front-end every model shares: cleaners, then symbols, then ids.

    processor = TextProcessor(["english_cleaners"])
    ids = processor.encode("Turn left on {HH AW1 S} street.", source="filelists/train.txt:12")

Text in curly braces is ARPAbet and becomes '@'-prefixed phoneme symbols. The symbol table and cleaner names travel
in every checkpoint (`to_dict`/`from_dict`), so a model always decodes with the table it was trained with.
Characters that are not in the table, or that a transliterating cleaner drops for want of an ASCII spelling (an
emoji), are never dropped silently: each is logged once, with the place it came from, and counted in
`unknown_counts`; `strict=True` makes them an error instead (for checking a data set).

The table is NVIDIA's 148 English symbols (symbols.py) unless a language needs others: `read_symbols_file` reads one
the user wrote, `symbols_of_transcripts` makes one of the symbols a corpus uses (Tacotron 2's --symbols-file and
--symbols-from-filelist).

Another language can also be read as sounds: `TextProcessor(["espeak_ipa"], table, language="de")` turns text into
eSpeak NG's IPA (common/text/phonemes.py), one symbol per IPA character; the language travels in the checkpoint too.

Every line ends as a sentence: whatever the cleaners, one whose last symbol (closing quotes and brackets aside) is not
a mark of FINAL_MARKS gets a full stop, in training and at inference alike. Corpora end their sentences with one, and
a Tacotron 2 trained on them learns to stop after it: without it, text typed as people type it ("turn the light
off") may never stop. A table without a full stop (one made of transcripts that never hold one) is left as it was.
"""
from __future__ import annotations

import json
import logging
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Container, Iterable, Iterator, Sequence

from common.arguments import flag
from common.errors import UserError, UserFileNotFoundError
from common.filelist import read_text_file
from common.text.cleaners import (CLEANER_NAMES, LANGUAGE_CLEANERS, get_cleaner, transliterates,
                                   untransliterable_characters)
from common.text.symbols import ARPABET_PREFIX, PAD, SYMBOLS

FULL_STOP = "."
# The marks a line may end with as it is: a sentence's ends, and a clause's (a line cut mid-sentence, as LJSpeech has).
FINAL_MARKS = frozenset(".!?,;:\u2026\u3002\uff01\uff1f")  # also the ellipsis and the CJK full stop, ! and ?
# What may follow the final mark: "he said 'go.'" ends with one.
CLOSING_QUOTES_AND_BRACKETS = frozenset("'\")]\u00bb\u201d\u2019")

logger = logging.getLogger(__name__)

# re.split with one capture group gives [text, arpabet, text, arpabet, ..., text].
_ARPABET_IN_BRACES = re.compile(r"\{([^{}]*)\}")


def _braces_split(text: str) -> Iterator[tuple[bool, str]]:
    """(False, text outside braces) and (True, what is inside a pair of braces), in order."""
    for index, part in enumerate(_ARPABET_IN_BRACES.split(text)):
        yield index % 2 == 1, part


class TextProcessor:
    """Turns transcripts into symbol ids and back. symbols[0] is padding: encode() never produces it. `language` is
    for the cleaners that need one (espeak_ipa), and only for them."""

    def __init__(self, cleaner_names: Sequence[str] = ("english_cleaners",), symbols: Sequence[str] = SYMBOLS,
                 strict: bool = False, language: str | None = None):
        if isinstance(cleaner_names, str):
            cleaner_names = [cleaner_names]
        self.cleaner_names = list(cleaner_names)
        self.language = language
        if language is not None and not set(self.cleaner_names) & set(LANGUAGE_CLEANERS):
            raise ValueError(f"a language ({language}) is only for the text cleaners {', '.join(LANGUAGE_CLEANERS)}, "
                             f"not {', '.join(self.cleaner_names)}")
        self.cleaners = [get_cleaner(name, language) for name in self.cleaner_names]
        self._cleaners_transliterate = transliterates(self.cleaner_names)
        self.symbols = list(symbols)
        if not self.symbols or not all(isinstance(symbol, str) and symbol for symbol in self.symbols):
            raise ValueError("the symbol table must be a non-empty list of non-empty strings")
        duplicates = sorted(symbol for symbol, count in Counter(self.symbols).items() if count > 1)
        if duplicates:
            raise ValueError(f"the symbol table lists these symbols more than once: {duplicates}")
        # Id 0 pads batches, so no text may produce it: a "_" in a transcript is reported like any unknown character.
        self.pad_id = 0
        self._id_of = {symbol: i for i, symbol in enumerate(self.symbols) if i != self.pad_id}
        self.strict = strict
        self.unknown_counts: Counter[str] = Counter()

    @property
    def n_symbols(self) -> int:
        return len(self.symbols)

    def clean(self, text: str) -> str:
        """The text encode() reads: cleaned, with ARPAbet in braces kept as it is (uppercased), and the full stop
        that encode() adds to a line without a final mark."""
        parts = [part if not is_arpabet else "{" + " ".join(part) + "}" for is_arpabet, part in self._parts(text)]
        cleaned = "".join(parts).strip()
        return cleaned + FULL_STOP if self._lacks_final_mark(self._to_symbols(text)) else cleaned

    def encode(self, text: str, source: str = "") -> list[int]:
        """Ids of the cleaned text. `source` (say "filelists/x.txt:12") names the text in warnings and errors."""
        where = source or f"text {text[:80]!r}"
        if not text.strip():
            raise ValueError(f"{where}: empty transcript")
        symbols = self._to_symbols(text)
        unknown = Counter(symbol for symbol in symbols if symbol not in self._id_of)
        if self._cleaners_transliterate:  # what the cleaners dropped never reaches the symbols: count it here
            text_outside_braces = "".join(part for is_arpabet, part in _braces_split(text) if not is_arpabet)
            unknown.update(untransliterable_characters(text_outside_braces))
        symbols = [symbol for symbol in symbols if symbol in self._id_of]
        # Leading and trailing spaces carry no sound, and a trailing space is known to keep Tacotron 2 from stopping.
        while symbols and symbols[-1].isspace():
            symbols.pop()
        while symbols and symbols[0].isspace():
            symbols.pop(0)
        if self._lacks_final_mark(symbols):
            symbols.append(FULL_STOP)
        ids = [self._id_of[symbol] for symbol in symbols]
        if unknown and (ids or self.strict):  # without a symbol left, the error below says it all, in one line
            self._report_unknown(unknown, where)
        if not ids:
            raise ValueError(f"{where}: transcript {text[:80]!r} encodes to no symbols")
        return ids

    def without_final_mark(self, ids: Sequence[int]) -> list[int]:
        """encode()'s ids with the marks that end the line left out (closing quotes and brackets after them kept):
        "(an aside.)" as "(an aside)". Ids of a line that ends in no mark, or that is nothing but marks, are returned
        as they are. Training reads some lines so (Tacotron 2's --final-punctuation-dropout), so that a model learns
        where a text ends, not that it ends after a full stop."""
        ids = [int(symbol_id) for symbol_id in ids]
        end = len(ids)
        while end and self.symbols[ids[end - 1]] in CLOSING_QUOTES_AND_BRACKETS:
            end -= 1
        start = end
        while start and (self.symbols[ids[start - 1]] in FINAL_MARKS or self.symbols[ids[start - 1]].isspace()):
            start -= 1
        if start == 0 or not any(self.symbols[symbol_id] in FINAL_MARKS for symbol_id in ids[start:end]):
            return ids
        return ids[:start] + ids[end:]

    def decode(self, ids: Iterable[int]) -> str:
        """Text of the ids, padding skipped, runs of phonemes in braces: the inverse of encode() after cleaning."""
        pieces, phonemes = [], []
        for symbol_id in ids:
            symbol_id = int(symbol_id)  # also takes tensors and numpy arrays
            if not 0 <= symbol_id < self.n_symbols:
                raise ValueError(f"symbol id {symbol_id} is outside this table of {self.n_symbols} symbols")
            if symbol_id == self.pad_id:
                continue
            symbol = self.symbols[symbol_id]
            if _is_phoneme(symbol):
                phonemes.append(symbol[len(ARPABET_PREFIX):])
                continue
            if phonemes:
                pieces.append("{" + " ".join(phonemes) + "}")
                phonemes = []
            pieces.append(symbol)
        if phonemes:
            pieces.append("{" + " ".join(phonemes) + "}")
        return "".join(pieces)

    def to_dict(self) -> dict:
        """Cleaners and symbols, and the language where there is one (so a table without one reads as it always
        did)."""
        values = {"cleaners": list(self.cleaner_names), "symbols": list(self.symbols)}
        if self.language is not None:
            values["language"] = self.language
        return values

    @classmethod
    def from_dict(cls, values: dict, strict: bool = False) -> "TextProcessor":
        if set(values) not in ({"cleaners", "symbols"}, {"cleaners", "symbols", "language"}):
            raise ValueError("a text processor dict has the keys ['cleaners', 'symbols'] and maybe 'language', not "
                             f"{sorted(values)}")
        return cls(values["cleaners"], values["symbols"], strict=strict, language=values.get("language"))

    def cache_phonemes(self, filelist: str | Path, transcripts: Iterable[str]) -> None:
        """With a phoneme cleaner (espeak_ipa): the phonemes of a filelist's transcripts, read from the cache beside
        it or made and written there (common/text/phonemes.py), so that encoding them costs no phonemizing. Without
        one, nothing."""
        first = next((index for index, name in enumerate(self.cleaner_names) if name in LANGUAGE_CLEANERS), None)
        if first is None:
            return
        from common.text.phonemes import cache_filelist_phonemes

        def phonemizer_input(text: str) -> str:  # what the cleaners before it make of the text
            for cleaner in self.cleaners[:first]:
                text = cleaner(text)
            return text

        inputs = [phonemizer_input(part) for transcript in transcripts
                  for is_arpabet, part in _braces_split(transcript) if not is_arpabet]
        cache_filelist_phonemes(filelist, inputs, self.language)

    def _parts(self, text: str) -> Iterator[tuple[bool, str | list[str]]]:
        """(False, cleaned text) and (True, [ARPAbet phonemes]) in the order they come. The braces of the input are
        kept away from the cleaners; those a cleaner writes (english_cleaners_arpabet) are read like them."""
        cleaned = "".join("{" + part + "}" if is_arpabet else self._clean_text(part)
                          for is_arpabet, part in _braces_split(text))
        for is_arpabet, part in _braces_split(cleaned):
            if is_arpabet:
                yield True, [phoneme.upper() for phoneme in part.split()]
            elif part:
                yield False, part

    def _clean_text(self, text: str) -> str:
        for cleaner in self.cleaners:
            text = cleaner(text)
        return text

    def _to_symbols(self, text: str) -> list[str]:
        symbols = []
        for is_arpabet, part in self._parts(text):
            symbols += [ARPABET_PREFIX + phoneme for phoneme in part] if is_arpabet else list(part)
        return symbols

    def _lacks_final_mark(self, symbols: list[str]) -> bool:
        """Whether encode() ends these symbols with a full stop: they hold a symbol of the table, and the last such
        one (closing quotes and brackets aside) is no final mark, and the table has a full stop."""
        return FULL_STOP in self._id_of and lacks_final_mark(symbols, self._id_of)

    def _report_unknown(self, unknown: Counter, where: str) -> None:
        if self.strict:
            listing = ", ".join(f"{_describe(symbol)} x{count}" for symbol, count in unknown.items())
            raise ValueError(f"{where}: symbols not in the symbol table or without an ASCII transliteration: "
                             f"{listing}")
        for symbol in unknown:
            if symbol not in self.unknown_counts:
                logger.warning("%s: dropping %s, which is not in the symbol table or has no ASCII transliteration "
                               "(later ones are only counted, in TextProcessor.unknown_counts)", where,
                               _describe(symbol))
        self.unknown_counts.update(unknown)


def lacks_final_mark(symbols: Sequence[str], known: Container[str]) -> bool:
    """Whether a line of these symbols ends without a mark of FINAL_MARKS, reading back from its end over spaces,
    closing quotes and brackets and the symbols not in `known` (those encode() drops). False for a line with no
    other symbol: there is no sentence to end."""
    for symbol in reversed(symbols):
        if symbol not in known or symbol.isspace() or symbol in CLOSING_QUOTES_AND_BRACKETS:
            continue
        return symbol not in FINAL_MARKS
    return False


def _is_phoneme(symbol: str) -> bool:
    return symbol.startswith(ARPABET_PREFIX) and len(symbol) > len(ARPABET_PREFIX)


def _describe(symbol: str) -> str:
    if len(symbol) == 1:
        return f"character {symbol} ({symbol!r}, U+{ord(symbol):04X})"
    return f"phoneme {symbol!r}" if _is_phoneme(symbol) else f"symbol {symbol!r}"


def symbols_of_transcripts(transcripts: Iterable[str], cleaner_names: Sequence[str],
                           language: str | None = None) -> list[str]:
    """A symbol table for a corpus: the padding symbol (id 0, as in NVIDIA's table), then every symbol the cleaned
    transcripts hold (their characters, and '@'-prefixed phonemes for ARPAbet in braces), sorted. The padding symbol
    itself is left out of the sorted part: no text may produce id 0."""
    reader = TextProcessor(cleaner_names, language=language)
    used: set[str] = set()
    for transcript in transcripts:
        symbols = reader._to_symbols(transcript.strip())
        used.update(symbols)
        if lacks_final_mark(symbols, _AnySymbolBut(PAD)):
            used.add(FULL_STOP)  # encode() ends the line with one
    used.discard(PAD)
    return [PAD, *sorted(used)]


class _AnySymbolBut:
    """Every symbol but one: what a table made of the transcripts will hold."""

    def __init__(self, excluded: str):
        self.excluded = excluded

    def __contains__(self, symbol: object) -> bool:
        return symbol != self.excluded


def read_symbols_file(path: str | Path, flag: str = "--symbols-file") -> list[str]:
    """A symbol table the user wrote, in id order, its first symbol the padding one (NVIDIA's '_'), as UTF-8:
    a JSON list of strings if the file name ends in .json, else one symbol per line (the whole line but its line
    break, so a line holding one space is the space symbol). An empty file, an empty line or entry, a symbol listed
    twice, or a first symbol other than '_' is a UserError naming the file and the line (entry) number."""
    path = Path(path)
    if not path.is_file():
        raise UserFileNotFoundError(f"{flag} {path}: no such file")
    content = read_text_file(path, flag)
    if path.suffix == ".json":
        try:
            symbols = json.loads(content)
        except json.JSONDecodeError as error:
            raise UserError(f"{flag} {path}:{error.lineno}: not valid JSON ({error.msg})") from error
        if not isinstance(symbols, list):
            raise UserError(f"{flag} {path}: expected a JSON list of symbols, found a {type(symbols).__name__}")
        def place(number: int) -> str:
            return f"{flag} {path} entry {number}"
    else:
        # Only line breaks end a line: a symbol may be any other character (str.splitlines also splits at \x0c...).
        symbols = [line.removesuffix("\r") for line in content.split("\n")]
        if symbols[-1] == "":  # the last line's line break
            symbols.pop()

        def place(number: int) -> str:
            return f"{flag} {path}:{number}"
    if not symbols:
        raise UserError(f"{flag} {path} is empty: list the symbols, one per line, the padding symbol '{PAD}' first")
    first_seen: dict[str, int] = {}
    for number, symbol in enumerate(symbols, start=1):
        if not isinstance(symbol, str) or not symbol:
            raise UserError(f"{place(number)}: an empty symbol ({symbol!r}); each names one symbol (a line of "
                            "one space is the space symbol)")
        if symbol in first_seen:
            raise UserError(f"{place(number)}: the symbol {symbol!r} is listed twice, first at "
                            f"{first_seen[symbol]}; list each symbol once")
        first_seen[symbol] = number
    if symbols[0] != PAD:
        raise UserError(f"{place(1)}: the first symbol is the padding one (id 0), '{PAD}', not {symbols[0]!r}")
    return symbols


@dataclass(kw_only=True)
class TextSettings:
    """How a text model reads its transcripts: the flags --text-cleaners and --language."""
    text_cleaners: list[str] = flag(["english_cleaners"], "cleaners applied in order before encoding; espeak_ipa "
                                    "reads the text as eSpeak NG does in --language and writes its IPA (another "
                                    "language, as sounds)", choices=CLEANER_NAMES, group="text")
    language: str | None = flag(None, "the eSpeak NG language (voice) of espeak_ipa: en-us, en-gb, de, es, fr, ...; "
                                      "saved in the checkpoint with the symbol table", metavar="VOICE", group="text")


def text_language(settings: TextSettings) -> str | None:
    """--language, checked against --text-cleaners: a cleaner that needs a language gets one eSpeak NG knows, and a
    language is given only for such a cleaner (each mistake a UserError naming the flags)."""
    needs_language = [name for name in settings.text_cleaners if name in LANGUAGE_CLEANERS]
    if needs_language and settings.language is None:
        raise UserError(f"--text-cleaners {needs_language[0]} needs --language, the eSpeak NG language to read the "
                        "text in (en-us, en-gb, de, es, fr, ...)")
    if settings.language is not None and not needs_language:
        raise UserError(f"--language {settings.language} is for --text-cleaners {' '.join(LANGUAGE_CLEANERS)}; "
                        f"the cleaners {' '.join(settings.text_cleaners)} read no language: drop --language or add "
                        "a cleaner")
    if settings.language is not None:
        from common.text.phonemes import check_language

        check_language(settings.language)
    return settings.language


def reads_phonemes(cleaner_names: Sequence[str]) -> bool:
    """Whether these cleaners write eSpeak NG's IPA, whose symbols NVIDIA's English table lacks."""
    return any(name in LANGUAGE_CLEANERS for name in cleaner_names)
