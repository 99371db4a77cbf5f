"""A synthetic speech-recognition corpus: several eSpeak NG voices and speaking rates, 16 kHz, in fairseq's layout.

    python -m scripts.data.asr_corpus --output-dir data/asr --num-utterances 2000 [--seed 1234]
        [--voices en-us en-us+f3 ...] [--test-voice en-gb-x-rp+m4] [--rates 140 160 ...] [--sampling-rate 16000]
        [--text templates|open [--open-utterances 4000] [--everyday-sentences 50]]

--text templates (the default): the sentences are the TTS corpus's (scripts/data/synthetic_corpus.py: numbers, dates,
money, names and titles, spelled out as they are spoken), each spoken by one of the training voices at one of the
rates. --num-utterances sentences are split into
    train            the rest
    valid            5 % (at least 2) held-out sentences, spoken by the training voices
    test_sentences   5 % (at least 2) other held-out sentences, spoken by the training voices
    test_voice       the test_sentences' sentences, at the same rates, spoken by --test-voice, never heard in training
so a recognizer's error on test_sentences measures generalisation to new sentences of the same generator, and
test_voice to a new voice.

--text open (make demo-asr) builds those same four splits, then widens the corpus so that a recognizer learns English,
not the generator's ~290 words (scripts/data/open_text.py):
    train            also --open-utterances runs of 4 to 12 words of a 20,000-word lexicon, each spoken by one of
                     OPEN_ACCENTS with one of OPEN_VARIANTS at one of OPEN_RATES and OPEN_PITCHES; and without the
                     sentences the TTS demo is judged on (the TTS corpus's validation and test sentences and
                     phrases/phrase.txt), which the template part otherwise holds
    valid            also 5 % held-out word runs, spoken as train's
    test_everyday         the hand-written everyday sentences (scripts/data/everyday_sentences.txt: no template,
                          never in training text), each by a training accent and variant
    test_everyday_voices  the same sentences at the same rates, each spoken by every one of HELD_OUT_VOICES: accents
                          and variants no training utterance has
--everyday-sentences takes the first N of them (all 50 by default).

It writes into --output-dir (train.py -m wav2vec2 --data <output-dir> --train-subset train --valid-subset valid):
    wavs/<split>-<NNNNN>.wav             16-bit mono PCM at --sampling-rate, edge silence trimmed to ~30 ms
    <split>.tsv                          the folder, then wavs/<ID>.wav<TAB>num_samples
    <split>.wrd, <split>.ltr             the spoken words as LibriSpeech writes them, and their letters
    dict.ltr.txt                         LibriSpeech's 28 symbols (| A-Z '), by their count in train.ltr
    utterances.csv                       ID|split|voice|words per minute|words, one line per utterance
                                         (--text open: a sixth field, eSpeak's pitch, 0-100, or - for the voice's own)
The same arguments give the same bytes in every file (eSpeak is deterministic here: scripts/data/espeak.py).
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from scripts.data.open_text import everyday_sentences, tts_held_out_words, word_sequences
from scripts.data.librispeech import (LIBRISPEECH_LETTERS, librispeech_words, write_labels, write_letter_dictionary,
                                      write_manifest)
from scripts.data.synthetic_corpus import make_sentences, spoken_lengths

# eSpeak NG voices (language + variant) that espeakng-loader ships: American, British, Scottish and New York English,
# male and female variants. The held-out voice is another accent (British Received Pronunciation) and variant.
TRAINING_VOICES = ("en-us", "en-us+f3", "en", "en+f2", "en-gb-scotland+m3", "en-us-nyc+f4")
TEST_VOICE = "en-gb-x-rp+m4"
RATES = (140, 160, 175, 190, 210)  # words per minute
SAMPLING_RATE = 16000
SPLITS = ("train", "valid", "test_sentences", "test_voice", "test_everyday", "test_everyday_voices")
HELD_OUT_FRACTION = 0.05  # of the sentences, for valid and again for test_sentences
TEXT_KINDS = ("templates", "open")

# --text open: training voices are every accent with every variant (none = the accent's own voice); the held-out
# voices pair accents and variants that no training utterance has: British Received Pronunciation, Welsh English and
# Caribbean English, and eSpeak's first Klatt voicing (klatt; training hears klatt2 and klatt3) on American English.
# The template part's voices (TRAINING_VOICES, TEST_VOICE) are among these accents and variants.
OPEN_ACCENTS = ("en-us", "en", "en-gb-scotland", "en-us-nyc", "en-gb-x-gbclan")
OPEN_VARIANTS = ("", "m1", "m2", "m3", "m5", "m6", "f1", "f2", "f3", "f4", "klatt2", "klatt3")
HELD_OUT_VOICES = ("en-gb-x-rp+m4", "en-gb-x-gbcwmd+m7", "en-029+f5", "en-us+klatt")
OPEN_RATES = (130, 150, 165, 180, 200, 220)  # words per minute: speed perturbation
OPEN_PITCHES = (30, 40, 50, 60, 70)  # eSpeak's base pitch (50 is the voice's own): pitch perturbation
DEFAULT_OPEN_UTTERANCES = 4000


@dataclass(frozen=True)
class Utterance:
    identifier: str
    split: str
    text: str  # what eSpeak is given: the spoken form, with its punctuation ("Doctor Smith paid twenty-one dollars.")
    words: str  # as LibriSpeech writes it: "DOCTOR SMITH PAID TWENTY ONE DOLLARS"
    voice: str
    rate: int
    pitch: int | None = None  # eSpeak's base pitch, 0-100; None: the voice's own


def held_out_size(num_utterances: int) -> int:
    return max(2, round(num_utterances * HELD_OUT_FRACTION))


def distinct_sentences(count: int, seed: int) -> list[tuple[str, str]]:
    """(spoken text, words) of `count` sentences of the TTS corpus's generator whose words all differ."""
    requested = count
    while True:
        sentences, seen = [], set()
        for sentence in make_sentences(requested, seed):
            words = librispeech_words(sentence.spoken)
            if words not in seen:
                seen.add(words)
                sentences.append((sentence.spoken, words))
        if len(sentences) >= count:
            return sentences[:count]
        requested = requested * 2 + 10


def plan_utterances(num_utterances: int, seed: int, voices: tuple[str, ...] = TRAINING_VOICES,
                    test_voice: str = TEST_VOICE, rates: tuple[int, ...] = RATES) -> list[Utterance]:
    """Which sentence is spoken by which voice at which rate, in which split (a function of the arguments)."""
    held_out = held_out_size(num_utterances)
    if num_utterances < 2 * held_out + 1:
        raise ValueError(f"--num-utterances is {num_utterances}; train, valid and test_sentences need at least "
                         f"{2 * held_out + 1}")
    if test_voice in voices:
        raise ValueError(f"the test voice {test_voice} is also a training voice")
    if not voices or not rates:
        raise ValueError("at least one training voice and one rate are needed")
    sentences = distinct_sentences(num_utterances, seed)
    rng = random.Random(seed)
    # Every training voice speaks as many sentences as the others (to one), in a seeded order.
    voice_order = [voices[index % len(voices)] for index in range(num_utterances)]
    rng.shuffle(voice_order)
    rates_drawn = [rng.choice(rates) for _ in range(num_utterances)]
    split_of = (["test_sentences"] * held_out + ["valid"] * held_out
                + ["train"] * (num_utterances - 2 * held_out))
    counters = dict.fromkeys(SPLITS, 0)
    utterances = []

    def add(split: str, text: str, words: str, voice: str, rate: int) -> None:
        counters[split] += 1
        utterances.append(Utterance(f"{split}-{counters[split]:05d}", split, text, words, voice, rate))

    for (text, words), voice, rate, split in zip(sentences, voice_order, rates_drawn, split_of):
        add(split, text, words, voice, rate)
    for utterance in [u for u in utterances if u.split == "test_sentences"]:
        add("test_voice", utterance.text, utterance.words, test_voice, utterance.rate)
    return utterances


def open_voice(accent: str, variant: str) -> str:
    return f"{accent}+{variant}" if variant else accent


def plan_open_utterances(num_utterances: int, seed: int, num_open: int, num_everyday: int | None = None,
                         voices: tuple[str, ...] = TRAINING_VOICES, test_voice: str = TEST_VOICE,
                         rates: tuple[int, ...] = RATES) -> list[Utterance]:
    """--text open: plan_utterances' template splits without the TTS demo's sentences in train, then the word runs
    (train, valid) and the everyday test sentences (test_everyday, test_everyday_voices)."""
    if num_open < 0:
        raise ValueError(f"--open-utterances is {num_open}; it must be 0 or more")
    held_out_voices = set(HELD_OUT_VOICES) & (set(voices)
                                              | {open_voice(a, v) for a in OPEN_ACCENTS for v in OPEN_VARIANTS})
    if held_out_voices:
        raise ValueError(f"the held-out voices {sorted(held_out_voices)} are also training voices")
    everyday = everyday_sentences()
    if num_everyday is not None:
        if num_everyday < 1:
            raise ValueError(f"--everyday-sentences is {num_everyday}; it must be at least 1")
        everyday = everyday[:num_everyday]
    judged = tts_held_out_words()
    template_part = plan_utterances(num_utterances, seed, voices, test_voice, rates)
    utterances = [u for u in template_part if not (u.split == "train" and u.words in judged)]
    counters = dict.fromkeys(SPLITS, 0)
    for utterance in utterances:
        counters[utterance.split] += 1  # new IDs go on after the template part's (a dropped one leaves a gap)
    counters["train"] = sum(u.split == "train" for u in template_part)

    def add(split: str, text: str, words: str, voice: str, rate: int, pitch: int | None = None) -> None:
        counters[split] += 1
        utterances.append(Utterance(f"{split}-{counters[split]:05d}", split, text, words, voice, rate, pitch))

    rng = random.Random(seed + 1)  # its own stream: the template part stays what plan_utterances makes it
    exclude = judged | {words for _, words in everyday} | {u.words for u in template_part}
    held_out = held_out_size(num_open) if num_open else 0
    for index, (text, words) in enumerate(word_sequences(num_open + held_out, seed, exclude)):
        voice = open_voice(rng.choice(OPEN_ACCENTS), rng.choice(OPEN_VARIANTS))
        add("valid" if index < held_out else "train", text, words, voice, rng.choice(OPEN_RATES),
            rng.choice(OPEN_PITCHES))
    everyday_rates = []
    for text, words in everyday:
        everyday_rates.append(rng.choice(rates))
        add("test_everyday", text, words, open_voice(rng.choice(OPEN_ACCENTS), rng.choice(OPEN_VARIANTS)),
            everyday_rates[-1])
    for voice in HELD_OUT_VOICES:
        for (text, words), rate in zip(everyday, everyday_rates):
            add("test_everyday_voices", text, words, voice, rate)
    return utterances


@dataclass
class AsrCorpusSummary:
    output_dir: Path
    manifests: dict[str, Path]  # by split
    dictionary: Path
    num_utterances: dict[str, int]  # by split
    total_seconds: float


def build_asr_corpus(output_dir: str | Path, num_utterances: int = 2000, seed: int = 1234,
                     voices: tuple[str, ...] = TRAINING_VOICES, test_voice: str = TEST_VOICE,
                     rates: tuple[int, ...] = RATES, sampling_rate: int = SAMPLING_RATE,
                     progress: bool = False, text: str = "templates", num_open: int = DEFAULT_OPEN_UTTERANCES,
                     num_everyday: int | None = None) -> AsrCorpusSummary:
    output_dir = Path(output_dir)
    if sampling_rate < 1:
        raise ValueError(f"--sampling-rate must be a positive number of Hz, got {sampling_rate}")
    if text not in TEXT_KINDS:
        raise ValueError(f"--text is {text!r}; it must be one of {', '.join(TEXT_KINDS)}")
    if text == "open":
        utterances = plan_open_utterances(num_utterances, seed, num_open, num_everyday, tuple(voices), test_voice,
                                          tuple(rates))
    else:
        utterances = plan_utterances(num_utterances, seed, tuple(voices), test_voice, tuple(rates))
    wav_dir = output_dir / "wavs"
    wav_dir.mkdir(parents=True, exist_ok=True)
    lengths = spoken_lengths([(u.text, wav_dir / f"{u.identifier}.wav", u.voice, u.rate, sampling_rate, u.pitch)
                              for u in utterances], 200 if progress else 0)
    num_samples = {u.identifier: length for u, length in zip(utterances, lengths)}

    manifests = {}
    present = [split for split in SPLITS if any(u.split == split for u in utterances)]
    for split in present:
        chosen = [u for u in utterances if u.split == split]
        rows = [(f"wavs/{u.identifier}.wav", num_samples[u.identifier]) for u in chosen]
        manifests[split] = write_manifest(output_dir / f"{split}.tsv", output_dir, rows)
        write_labels(manifests[split], [u.words for u in chosen])
    train_letters = manifests["train"].with_suffix(".ltr").read_text(encoding="utf-8").splitlines()
    dictionary = write_letter_dictionary(output_dir / "dict.ltr.txt", train_letters, always=LIBRISPEECH_LETTERS)
    pitch_field = (lambda u: f"|{'-' if u.pitch is None else u.pitch}") if text == "open" else (lambda u: "")
    (output_dir / "utterances.csv").write_text(
        "".join(f"{u.identifier}|{u.split}|{u.voice}|{u.rate}|{u.words}{pitch_field(u)}\n" for u in utterances),
        encoding="utf-8")
    return AsrCorpusSummary(output_dir, manifests, dictionary,
                            {split: sum(u.split == split for u in utterances) for split in present},
                            sum(num_samples.values()) / sampling_rate)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output-dir", default="data/asr", help="corpus folder (the --data of train.py)")
    parser.add_argument("--num-utterances", type=int, default=2000,
                        help="sentences spoken by the training voices (train + valid + test_sentences)")
    parser.add_argument("--seed", type=int, default=1234, help="same seed, same corpus (byte for byte)")
    parser.add_argument("--voices", nargs="+", default=list(TRAINING_VOICES), help="eSpeak NG training voices")
    parser.add_argument("--test-voice", default=TEST_VOICE, help="the held-out voice of the test_voice split")
    parser.add_argument("--rates", nargs="+", type=int, default=list(RATES), help="speaking rates, words per minute")
    parser.add_argument("--sampling-rate", type=int, default=SAMPLING_RATE)
    parser.add_argument("--text", choices=TEXT_KINDS, default="templates",
                        help="templates: the TTS corpus's sentences only; open: also word runs of a large lexicon "
                             "and the everyday test splits")
    parser.add_argument("--open-utterances", type=int, default=None,
                        help="--text open: word runs spoken by the open voices in train (and 5 %% more in valid; 4000)")
    parser.add_argument("--everyday-sentences", type=int, default=None,
                        help="--text open: test on the first N everyday sentences (default: all)")
    args = parser.parse_args(argv)
    if args.text != "open" and (args.open_utterances is not None or args.everyday_sentences is not None):
        parser.error("--open-utterances and --everyday-sentences only apply with --text open")

    started = time.perf_counter()
    try:
        summary = build_asr_corpus(args.output_dir, args.num_utterances, args.seed, tuple(args.voices),
                                   args.test_voice, tuple(args.rates), args.sampling_rate, progress=True,
                                   text=args.text,
                                   num_open=DEFAULT_OPEN_UTTERANCES if args.open_utterances is None
                                   else args.open_utterances,
                                   num_everyday=args.everyday_sentences)
    except ValueError as error:
        sys.exit(f"error: {error}")
    counts = ", ".join(f"{split} {count}" for split, count in summary.num_utterances.items())
    print(f"speech-recognition corpus: {counts} utterances, {summary.total_seconds / 60:.1f} min of audio in "
          f"{summary.output_dir}, built in {time.perf_counter() - started:.1f} s")
    for split, path in summary.manifests.items():
        print(f"  {split}: {path}")
    print(f"  dictionary: {summary.dictionary}")


if __name__ == "__main__":
    main()
