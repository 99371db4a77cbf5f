"""NVIDIA's published Tacotron 2 symbol table: 148 symbols, in the order their checkpoints were trained with.

The order is part of the checkpoint format (row i of the text embedding belongs to SYMBOLS[i]), so it must not
change. Ids: '_' 0 (padding), '-' 1, '!' 2, ' ' 11, 'A' 12, 'a' 38, '@AA' 64, '@ZH' 147.
"""
from __future__ import annotations

import string

PAD = "_"
PUNCTUATION = "!'(),.:;? "
LETTERS = string.ascii_uppercase + string.ascii_lowercase

# ARPAbet as used by the CMU Pronouncing Dictionary: 15 vowels, each bare or marked with lexical stress
# (0 none, 1 primary, 2 secondary), and 24 consonants: 15 * 4 + 24 = 84 phonemes.
ARPABET_VOWELS = ("AA", "AE", "AH", "AO", "AW", "AY", "EH", "ER", "EY", "IH", "IY", "OW", "OY", "UH", "UW")
ARPABET_CONSONANTS = (
    "B", "CH", "D", "DH", "F", "G", "HH", "JH", "K", "L", "M", "N",
    "NG", "P", "R", "S", "SH", "T", "TH", "V", "W", "Y", "Z", "ZH",
)
ARPABET = tuple(sorted([vowel + stress for vowel in ARPABET_VOWELS for stress in ("", "0", "1", "2")]
                       + list(ARPABET_CONSONANTS)))

# Phonemes get a prefix so that, say, the phoneme "B" and the letter "B" are different symbols.
ARPABET_PREFIX = "@"

SYMBOLS: tuple[str, ...] = (PAD, "-", *PUNCTUATION, *LETTERS, *(ARPABET_PREFIX + phoneme for phoneme in ARPABET))
