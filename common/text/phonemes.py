"""The phoneme front-end: text to IPA with eSpeak NG (`--text-cleaners espeak_ipa --language de`).

    phonemize("Guten Morgen, wie geht es dir?", "de")   # "ɡˈuːtən mˈɔɾɡən, viː ɡˈeːt ɛs dˈiːɾ?"

eSpeak reads the text in its language, numbers included ("23" -> "dɾˈaɪ ʊnttsvˈantsɪç"), and gives IPA with stress
marks; each character of that IPA is one symbol, so the table comes from the phonemized training transcripts
(Tacotron 2: --symbols-from-filelist, the default with this cleaner). eSpeak drops the punctuation that ends a clause,
which carries the pauses and the intonation of a question, so the text is cut at it first and the marks are kept.

Phonemizing a corpus takes a while, so the phonemes of a filelist's transcripts are cached in a file beside it
(`cache_filelist_phonemes`), keyed by the filelist's content, the language, eSpeak NG's version and this front-end's
version: a cache whose key differs is rebuilt (and says so), never used.

Which eSpeak NG binding: the library that `espeakng-loader` ships (common/espeak.py), already used for the synthetic
corpora, rather than the `phonemizer` package: phonemizer would add a dependency that looks for a system-wide
libespeak-ng, while this one is pip-installed and the same library speaks the corpus.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from pathlib import Path
from typing import Iterable

from common import espeak
from common.errors import UserError

logger = logging.getLogger(__name__)

# Changes when what phonemize() returns for the same eSpeak output changes, so that older caches are rebuilt.
FRONT_END_VERSION = 1

# Marks that end a clause when a space or the end of the text follows them ("4,50" and "1.000" stay eSpeak's), or
# that open one after a space or at the start (Spanish "¿", "¡").
_CLOSING_MARKS = ".,;:!?"
_OPENING_MARKS = "¡¿"
_CLAUSE_MARK = re.compile(rf"[{re.escape(_CLOSING_MARKS)}]+(?=\s|$)|(?:(?<=\s)|^)[{_OPENING_MARKS}]+")
_WHITESPACE = re.compile(r"\s+")

# (language, text) -> IPA of the transcripts of the filelists cached in this process (cache_filelist_phonemes): a
# training run reads each one more than once (the symbol table, then the data sets). Other text (inference) is
# phonemized each time, so that a long-lived process does not grow.
_phonemes: dict[tuple[str, str], str] = {}


def phonemize(text: str, language: str) -> str:
    """IPA of `text` in `language` (an eSpeak NG voice: en-us, de, es, ...), with its clause punctuation kept: one
    space between words, a mark right after the word it follows. An unknown language is a ValueError."""
    cached = _phonemes.get((language, text))
    if cached is not None:
        return cached
    pieces, position = [], 0
    for mark in _CLAUSE_MARK.finditer(text):
        pieces += [_espeak_words(text[position:mark.start()], language), mark.group(0)]
        position = mark.end()
    pieces.append(_espeak_words(text[position:], language))
    joined = " ".join(piece for piece in pieces if piece)
    joined = re.sub(rf" (?=[{re.escape(_CLOSING_MARKS)}])", "", joined)  # "a , b" -> "a, b"
    return re.sub(rf"(?<=[{_OPENING_MARKS}]) ", "", joined)  # "¿ a" -> "¿a"


def _espeak_words(text: str, language: str) -> str:
    if not text.strip():
        espeak.check_voice(language)  # still reject an unknown language
        return ""
    return _WHITESPACE.sub(" ", espeak.text_to_phonemes(text, language)).strip()


def check_language(language: str, flag: str = "--language") -> None:
    """A UserError naming `flag` if eSpeak NG has no such language or voice."""
    try:
        espeak.check_voice(language)
    except espeak.UnknownVoiceError as error:
        raise UserError(f"{flag} {language}: {error}") from error
    except RuntimeError as error:  # the library is missing or does not start
        raise UserError(f"{flag} {language}: the phoneme front-end cannot start eSpeak NG: {error}") from error


class EspeakIPA:
    """The espeak_ipa cleaner of one language: text -> IPA (phonemize)."""

    __name__ = "espeak_ipa"

    def __init__(self, language: str):
        check_language(language, flag=f"the text cleaner {self.__name__}'s language")
        self.language = language

    def __call__(self, text: str) -> str:
        return phonemize(text, self.language)


def cache_key(filelist: Path, language: str) -> dict:
    """What the cache of `filelist` is valid for: the filelist's bytes, the language, eSpeak NG and this front-end."""
    return {"filelist_sha256": hashlib.sha256(filelist.read_bytes()).hexdigest(), "language": language,
            "espeak_ng": espeak.version(), "front_end": FRONT_END_VERSION}


def cache_path(filelist: Path, language: str) -> Path:
    """Beside the filelist: train.txt -> train.txt.espeak_ipa-de.json."""
    return filelist.with_name(f"{filelist.name}.espeak_ipa-{language}.json")


def cache_filelist_phonemes(filelist: str | Path, texts: Iterable[str], language: str) -> Path:
    """Make the phonemes of `texts` (the texts a filelist's transcripts give the phonemizer) known to phonemize():
    read from the filelist's cache when its key matches, else phonemized and written there (a stale cache is rebuilt,
    and the log says why). A cache that cannot be written is only a warning: the phonemes are still right."""
    filelist = Path(filelist)
    path, key = cache_path(filelist, language), cache_key(filelist, language)
    texts = list(dict.fromkeys(texts))
    saved = _read_cache(path)
    if saved is not None and saved.get("key") == key and set(texts) <= set(saved.get("phonemes", {})):
        for text, phonemes in saved["phonemes"].items():
            _phonemes[(language, text)] = phonemes
        return path
    if saved is not None:
        differing = sorted(name for name in key if (saved.get("key") or {}).get(name) != key[name])
        logger.warning("%s: rebuilding the phoneme cache: its %s differ(s) from this run's", path,
                       ", ".join(differing) or "transcripts")
    phonemes = {text: phonemize(text, language) for text in texts}
    _phonemes.update({(language, text): ipa for text, ipa in phonemes.items()})
    try:
        temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        temporary.write_text(json.dumps({"key": key, "phonemes": phonemes}, ensure_ascii=False, indent=0),
                             encoding="utf-8")
        os.replace(temporary, path)  # whole or not at all, also with several ranks writing it
    except OSError as error:
        logger.warning("%s: cannot write the phoneme cache (%s); phonemizing again on the next run", path, error)
    return path


def _read_cache(path: Path) -> dict | None:
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {}  # unreadable: rebuilt
    return saved if isinstance(saved, dict) else {}
