"""The letter dictionary of CTC fine-tuning: fairseq's `dict.ltr.txt` with its four special symbols.

A `dict.ltr.txt` holds one `<symbol> <count>` line per letter (counts only sort the file; they change nothing here).
As fairseq's Dictionary does, four special symbols come first, so the indices of a checkpoint's output layer mean
the same letters as in fairseq's and NVIDIA's models:

    0 <s>    the CTC blank
    1 <pad>  what targets are padded with
    2 </s>
    3 <unk>
    4...     the file's symbols in file order (LibriSpeech: | E T A O N ... : 28 symbols, 32 outputs)

Labels (`.ltr` lines) are letters separated by spaces, words by `|`, with a trailing ` |`: "H I | T H E R E |".
The word boundary is the symbol named `|` wherever it sits in the file (NVIDIA's inference takes the most frequent
symbol instead, which is only `|` by luck of the corpus).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable, Sequence

from common.errors import UserError, UserFileNotFoundError

BLANK, PAD, EOS, UNK = "<s>", "<pad>", "</s>", "<unk>"
SPECIAL_SYMBOLS = (BLANK, PAD, EOS, UNK)
WORD_BOUNDARY = "|"


class UnknownSymbolError(ValueError):
    """A label holds a symbol the dictionary does not have; `symbol` says which."""

    def __init__(self, symbol: str):
        super().__init__(f"symbol {symbol!r} is not in the dictionary")
        self.symbol = symbol


def words_to_letters(words: str) -> str:
    """A `.wrd` line to its `.ltr` line, as fairseq's LibriSpeech labels are made: "HI THERE" -> "H I | T H E R E |"."""
    return " ".join(WORD_BOUNDARY.join(words.split())) + " " + WORD_BOUNDARY


class Dictionary:
    """Symbols <-> indices; `symbols` are the file's symbols, in order, without the special ones."""

    blank_index = 0
    pad_index = 1
    eos_index = 2
    unk_index = 3

    def __init__(self, symbols: Sequence[str], source: str = "the dictionary"):
        self.source = source  # names the dictionary in error messages (its file, or "the checkpoint's dictionary")
        all_symbols = list(SPECIAL_SYMBOLS) + list(symbols)
        self._index: dict[str, int] = {}
        for index, symbol in enumerate(all_symbols):
            if not symbol or any(character.isspace() for character in symbol):
                raise ValueError(f"{source}: symbol {symbol!r} is empty or holds white space")
            if symbol in self._index:
                raise ValueError(f"{source}: symbol {symbol!r} appears twice")
            self._index[symbol] = index
        self.symbols_with_specials = all_symbols

    # ---- reading and saving ---------------------------------------------------------------------------------------

    @classmethod
    def load(cls, path: str | Path) -> "Dictionary":
        """Read a fairseq `<symbol> <count>` file; every mistake names the file and line."""
        path = Path(path)
        if not path.is_file():
            raise UserFileNotFoundError(f"dictionary not found: {path}")
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise UserError(f"cannot read the dictionary {path}: {error}") from error
        symbols, first_line_of = [], {}
        for line_number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            fields = line.split()
            # fairseq lets a line end in "#fairseq:overwrite" (a symbol may then repeat); we refuse repeats anyway.
            if fields[-1] == "#fairseq:overwrite":
                fields = fields[:-1]
            if len(fields) != 2 or not re.fullmatch(r"-?\d+", fields[1]):
                raise UserError(f"{path}:{line_number}: expected '<symbol> <count>', found {line!r}")
            symbol = fields[0]
            if symbol in SPECIAL_SYMBOLS:
                raise UserError(f"{path}:{line_number}: {symbol} is one of the special symbols the dictionary "
                                f"adds itself ({', '.join(SPECIAL_SYMBOLS)}); remove the line")
            if symbol in first_line_of:
                raise UserError(f"{path}:{line_number}: symbol {symbol!r} already appears on line "
                                f"{first_line_of[symbol]}")
            first_line_of[symbol] = line_number
            symbols.append(symbol)
        if not symbols:
            raise UserError(f"{path}: the dictionary lists no symbols")
        return cls(symbols, source=str(path))

    def to_dict(self) -> dict:
        """What a checkpoint carries: the symbols in index order, special ones included."""
        return {"symbols": list(self.symbols_with_specials)}

    @classmethod
    def from_dict(cls, values: dict, source: str = "the checkpoint's dictionary") -> "Dictionary":
        symbols = list(values["symbols"])
        if tuple(symbols[:len(SPECIAL_SYMBOLS)]) != SPECIAL_SYMBOLS:
            raise ValueError(f"{source} does not start with the special symbols {SPECIAL_SYMBOLS}: {symbols[:4]}")
        return cls(symbols[len(SPECIAL_SYMBOLS):], source=source)

    def save(self, path: str | Path) -> None:
        """Write a dict.ltr.txt (counts are written as 0: they carry no meaning once the order is fixed)."""
        Path(path).write_text("".join(f"{symbol} 0\n" for symbol in self.symbols), encoding="utf-8")

    # ---- lookups --------------------------------------------------------------------------------------------------

    @property
    def symbols(self) -> list[str]:
        return self.symbols_with_specials[len(SPECIAL_SYMBOLS):]

    def __len__(self) -> int:
        return len(self.symbols_with_specials)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Dictionary) and self.symbols_with_specials == other.symbols_with_specials

    def __repr__(self) -> str:
        return f"Dictionary({len(self)} symbols: {' '.join(self.symbols)})"

    def __contains__(self, symbol: str) -> bool:
        return symbol in self._index

    def index(self, symbol: str) -> int:
        try:
            return self._index[symbol]
        except KeyError:
            raise UnknownSymbolError(symbol) from None

    def symbol(self, index: int) -> str:
        return self.symbols_with_specials[index]

    @property
    def word_boundary_index(self) -> int:
        if WORD_BOUNDARY not in self._index:
            raise UserError(f"{self.source} has no word boundary symbol '{WORD_BOUNDARY}': letters cannot be "
                            "joined into words")
        return self._index[WORD_BOUNDARY]

    # ---- labels ---------------------------------------------------------------------------------------------------

    def encode_letters(self, ltr_line: str) -> list[int]:
        """A `.ltr` line ("H I | T H E R E |") to indices; an unknown symbol raises UnknownSymbolError (no <unk>:
        a letter the model cannot output is a mistake in the data, better caught than trained on)."""
        return [self.index(symbol) for symbol in ltr_line.split()]

    def encode_words(self, words: str) -> list[int]:
        """A `.wrd` line ("HI THERE") to the indices of its letters and word boundaries."""
        return self.encode_letters(words_to_letters(words))

    def decode_letters(self, indices: Iterable[int]) -> str:
        """Indices to a `.ltr`-style line of symbols, special symbols left out."""
        return " ".join(self.symbols_with_specials[int(i)] for i in indices if int(i) >= len(SPECIAL_SYMBOLS))

    def decode(self, indices: Iterable[int]) -> str:
        """Indices (no CTC collapsing here: give it a collapsed sequence) to words: letters joined, `|` between
        words, special symbols left out, runs of boundaries and the ends' boundaries dropped: "HI THERE"."""
        boundary = self.word_boundary_index
        pieces = []
        for index in indices:
            index = int(index)
            if index == boundary:
                pieces.append(" ")
            elif index >= len(SPECIAL_SYMBOLS):
                pieces.append(self.symbols_with_specials[index])
        return " ".join("".join(pieces).split())
