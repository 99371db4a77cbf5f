"""Text as users give it, in pieces a text-to-speech decoder can say: sentences, and a sentence too long for the
decoder's step limit cut at its commas, then between words.

    split_sentences("Dr. Smith paid $3.50, e.g. for tea. Then he left!")  # ['Dr. Smith paid $3.50, e.g. for tea.',
                                                                         #  'Then he left!']
    split_long("one, two, three", max_length=9)                         # ['one, two,', 'three']

A sentence ends at `.`, `!` or `?` (closing quotes and brackets go with it) followed by white space, unless the word
before the full stop is a title or an abbreviation that is followed by more of the sentence (ABBREVIATIONS: "Dr.",
"e.g."), a single letter (an initial: "J. Smith"), or the next word begins in lower case ("etc. and so on"). A full
stop inside a number ("3.5") has no space after it. English rules: another language's abbreviations may cut a
sentence where its reader would not, which changes pauses, not words.
"""
from __future__ import annotations

import re
from typing import Callable

# Words whose full stop never ends a sentence: what follows them is a name, a number or the rest of the sentence.
ABBREVIATIONS = {"mr", "mrs", "ms", "dr", "prof", "st", "mt", "sr", "jr", "vs", "no", "fig", "approx", "cf", "e.g",
                 "i.e", "gen", "col", "capt", "lt", "sgt", "rev", "hon", "gov", "sen", "rep", "ft", "ave", "blvd"}
SENTENCE_END = re.compile(r"[.!?]+[\"'\u2019\u201d)\]]*(?=\s)")
CLAUSE_END = re.compile(r"[,;:]+[\"'\u2019\u201d)\]]*(?=\s)")


def _ends_a_sentence(text: str, end: re.Match) -> bool:
    if not end.group().startswith(".") or end.group().startswith("..."):
        return True  # ! and ? always end one, and so does an ellipsis before a new sentence
    word = re.search(r"[\w.]*$", text[:end.start()]).group().lower()
    if word in ABBREVIATIONS or (len(word) == 1 and word.isalpha()):
        return False
    following = text[end.end():].lstrip()
    return not following[:1].islower()


def split_sentences(text: str) -> list[str]:
    """The sentences of `text`, white space at their edges removed; text with no sentence end is one sentence."""
    sentences, start = [], 0
    for end in SENTENCE_END.finditer(text):
        if _ends_a_sentence(text, end):
            sentences.append(text[start:end.end()].strip())
            start = end.end()
    sentences.append(text[start:].strip())
    return [sentence for sentence in sentences if sentence]


def _pack(parts: list[str], max_length: int, length: Callable[[str], int]) -> list[str]:
    """Consecutive parts joined by a space while the piece stays within max_length."""
    pieces: list[str] = []
    for part in parts:
        if pieces and length(pieces[-1] + " " + part) <= max_length:
            pieces[-1] += " " + part
        else:
            pieces.append(part)
    return pieces


def split_long(sentence: str, max_length: int, length: Callable[[str], int] = len) -> list[str]:
    """A sentence longer than max_length as pieces of at most that length (`length`: characters, or e.g. the
    symbols a text front-end makes of it): cut after commas, semicolons and colons first, and a clause still too long
    between words (a single word longer than the limit stays whole). Pieces keep their punctuation."""
    if length(sentence) <= max_length:
        return [sentence]
    clauses, start = [], 0
    for end in CLAUSE_END.finditer(sentence):
        clauses.append(sentence[start:end.end()].strip())
        start = end.end()
    clauses.append(sentence[start:].strip())
    parts = []
    for clause in filter(None, clauses):
        parts += [clause] if length(clause) <= max_length else _pack(clause.split(), max_length, length)
    return _pack(parts, max_length, length)
