"""A small single-speaker English (or German) corpus spoken by eSpeak NG, in LJSpeech layout, built in seconds on a
CPU.

    python -m scripts.data.synthetic_corpus --output-dir data/synthetic [--filelists-dir filelists]
        [--num-utterances 500] [--seed 1234] [--voice en-us] [--rate 175] [--sampling-rate 16000 --manifest]

It writes
    <output-dir>/wavs/SYN001-0001.wav ...   22050 Hz, 16-bit mono PCM, edge silence trimmed to ~30 ms
    <output-dir>/metadata.csv               ID|written text|spoken text   (as LJSpeech: no header, '|'-separated)
    <filelists-dir>/synthetic_audio_text_{train,val,test}.txt   wavs/<ID>.wav|written text  (90/5/5 %)
    <filelists-dir>/synthetic_mel_text_{train,val,test}.txt     mels/<ID>.pt|written text   (mels: prepare_mels.sh)
and with --manifest, for speech recognition (wav2vec 2.0: train.py -m wav2vec2 --data <output-dir>), the same splits
in fairseq's layout (scripts/data/librispeech.py's writers):
    <output-dir>/{train,valid,test}.tsv   the corpus folder, then wavs/<ID>.wav<TAB>num_samples
    <output-dir>/{train,valid,test}.wrd   the spoken text as LibriSpeech writes it ("DOCTOR SMITH PAID TWENTY ONE")
    <output-dir>/{train,valid,test}.ltr   its letters ("D O C T O R | S M I T H | ... |")
    <output-dir>/dict.ltr.txt             LibriSpeech's 28 symbols, by their count in train.ltr
--sampling-rate resamples eSpeak's 22050 Hz (wav2vec 2.0 wants 16000).

The sentences come from a seeded generator and carry what the text front-end must normalise: numbers ("23",
"1995", "$4.50", "2.5", "3rd") and abbreviations ("Dr.", "Mr.", "St."). The filelists keep that written form so
training exercises the cleaners; eSpeak speaks the spelled-out form, worded as english_cleaners words it
("$4.50" -> "four dollars, fifty cents", "St." -> "saint"), so audio and cleaned text say the same thing.
The same seed gives the same bytes in every file.

A German voice (--voice de, or de-...) speaks German sentences instead (scripts/data/sentences_de.py), their numbers
left for eSpeak to read, for training with the phoneme front-end (`--text-cleaners espeak_ipa --language de`).
"""
from __future__ import annotations

import argparse
import math
import multiprocessing
import os
import random
import re
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import inflect
import numpy as np
import soundfile

from scripts.data import sentences_de
from scripts.data.espeak import SAMPLING_RATE as ESPEAK_SAMPLING_RATE, synthesize
from scripts.data.librispeech import (LIBRISPEECH_LETTERS, librispeech_words, write_labels, write_letter_dictionary,
                                      write_manifest)
from scripts.data.ljspeech import split_identifiers, write_filelists

UTTERANCES_PER_CHAPTER = 100  # IDs are SYN<chapter>-<index>, like LJSpeech's LJ001-0001
SPLIT_FRACTIONS = {"val": 0.05, "test": 0.05}  # the rest is train
EDGE_SILENCE_SECONDS = 0.03
SILENCE_THRESHOLD_DB = -40.0  # relative to the clip's peak

_inflect = inflect.engine()


# ---------------------------------------------------------------------------------------------------------------
# Sentences: each slot gives a (written, spoken) pair; the spoken side is what english_cleaners turns the written
# side into, so eSpeak says exactly what the model will read.


@dataclass(frozen=True)
class Sentence:
    written: str
    spoken: str


def _words(number: int | str) -> str:
    return _inflect.number_to_words(number, andword="")


def _count(rng: random.Random) -> tuple[str, str]:
    number = rng.choice([rng.randint(2, 19), rng.randint(20, 99), rng.randint(100, 999)])
    return str(number), _words(number)


def _year(rng: random.Random) -> tuple[str, str]:
    # english_cleaners reads 1000..3000 as years: "nineteen ninety-five", "two thousand five", "twenty fifteen".
    year = rng.choice([rng.randint(1910, 1999), rng.randint(2001, 2009), rng.randint(2010, 2024)])
    if 2000 < year < 2010:
        return str(year), "two thousand " + _words(year % 100)
    return str(year), f"{_words(year // 100)} {_words(year % 100)}"


def _money(rng: random.Random) -> tuple[str, str]:
    dollars = rng.choice([1, rng.randint(2, 20), rng.randint(21, 99)])
    dollar_words = f"{_words(dollars)} {'dollar' if dollars == 1 else 'dollars'}"
    if rng.random() < 0.4:
        return f"${dollars}", dollar_words
    cents = rng.randint(1, 99)
    return f"${dollars}.{cents:02d}", f"{dollar_words}, {_words(cents)} {'cent' if cents == 1 else 'cents'}"


def _decimal(rng: random.Random) -> tuple[str, str]:
    whole, tenth = rng.randint(1, 20), rng.randint(1, 9)  # one decimal digit: "2.25" would read "two point twenty-five"
    return f"{whole}.{tenth}", f"{_words(whole)} point {_words(tenth)}"


def _ordinal(rng: random.Random) -> tuple[str, str]:
    day = rng.randint(1, 31)
    written = _inflect.ordinal(day)  # "3rd"
    return written, _words(written)  # "third"


# (written, spoken) for the abbreviations english_cleaners expands.
_TITLES = [("Dr.", "Doctor"), ("Mr.", "Mister"), ("Mrs.", "Misess"), ("Capt.", "Captain"), ("Gen.", "General"),
           ("Rev.", "Reverend"), ("Sgt.", "Sergeant"), ("Lt.", "Lieutenant")]
_SURNAMES = ["Smith", "Brown", "Taylor", "Walker", "Harris", "Clark", "Lewis", "Young", "Hill", "Green", "Baker",
             "Adams", "Nelson", "Carter", "Mitchell", "Turner", "Parker", "Collins", "Stewart", "Morris", "Bennett",
             "Foster", "Hughes", "Porter"]
_FIRST_NAMES = ["Alice", "Ben", "Clara", "David", "Emma", "Frank", "Grace", "Henry", "Irene", "Jack", "Karen", "Leo",
                "Maria", "Nathan", "Olivia", "Peter", "Rosa", "Samuel", "Tina", "Victor", "Walter", "Helen"]
_PLACES = [("St. Louis", "Saint Louis"), ("St. Paul", "Saint Paul"), ("St. Albans", "Saint Albans"),
           ("Ft. Worth", "Fort Worth"), ("Boston", "Boston"), ("Denver", "Denver"), ("Chicago", "Chicago"),
           ("the harbor", "the harbor"), ("the old mill", "the old mill"), ("the station", "the station"),
           ("the city hall", "the city hall"), ("the market", "the market"), ("the river", "the river"),
           ("the north gate", "the north gate")]
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December"]
_THINGS = ["books", "chairs", "letters", "boxes", "apples", "tickets", "lamps", "coats", "maps", "bottles", "stones",
           "candles", "baskets", "horses", "windows"]
_THING = ["book", "chair", "letter", "box", "lamp", "coat", "map", "bottle", "stone", "candle", "basket", "horse",
          "window", "bridge", "garden", "ship", "clock", "painting"]
# Consonant-initial, so "a {adj} {thing}" stays grammatical.
_ADJECTIVES = ["dusty", "small", "heavy", "bright", "quiet", "broken", "famous", "narrow", "green", "wooden",
               "strange", "tall", "hollow", "warm", "careful", "silent"]
_VERBS_PAST = ["found", "sold", "painted", "carried", "opened", "repaired", "counted", "moved", "described", "bought",
               "noticed", "cleaned"]
_DISTANCES = ["miles", "kilometers", "meters", "feet"]
_ADVERBS = ["slowly", "quietly", "quickly", "carefully", "early", "late", "again", "twice"]


def _same(word: str) -> tuple[str, str]:
    return word, word


def _person(rng: random.Random) -> tuple[str, str]:
    surname = rng.choice(_SURNAMES)
    if rng.random() < 0.6:
        title, spoken_title = rng.choice(_TITLES)
        return f"{title} {surname}", f"{spoken_title} {surname}"
    name = f"{rng.choice(_FIRST_NAMES)} {surname}"
    return name, name


# Slot kinds: each returns (written, spoken).
_SLOTS = {
    "person": _person,
    "name": lambda rng: _same(rng.choice(_FIRST_NAMES)),
    "place": lambda rng: rng.choice(_PLACES),
    "month": lambda rng: _same(rng.choice(_MONTHS)),
    "things": lambda rng: _same(rng.choice(_THINGS)),
    "thing": lambda rng: _same(rng.choice(_THING)),
    "adj": lambda rng: _same(rng.choice(_ADJECTIVES)),
    "verbed": lambda rng: _same(rng.choice(_VERBS_PAST)),
    "distance": lambda rng: _same(rng.choice(_DISTANCES)),
    "adverb": lambda rng: _same(rng.choice(_ADVERBS)),
    "count": _count,
    "year": _year,
    "money": _money,
    "decimal": _decimal,
    "ordinal": _ordinal,
}


# Statements, questions and exclamations of roughly 4 to 14 written words.
_TEMPLATES = [
    "{person} {verbed} {count} {things} in {place}.",
    "{person} paid {money} for the {adj} {thing}.",
    "The {adj} {thing} was built in {year}.",
    "We left {place} on the {ordinal} of {month}.",
    "Did {person} really pay {money} for that {thing}?",
    "How many {things} did {name} find near {place}?",
    "What a {adj} {thing}!",
    "It rained for {count} days in {year}.",
    "{name} walked {decimal} {distance} to {place}, then rested.",
    "Is the {thing} really {decimal} {distance} long?",
    "The meeting is on {month} {ordinal}, at {place}.",
    "{person} was born in {place} in {year}.",
    "Please bring {count} {things} and a {adj} {thing}.",
    "Why did {person} sell the {thing} for {money}?",
    "Look at that {adj} {thing}!",
    "The {thing} costs {money}, sadly.",
    "In {year}, {person} {verbed} the {adj} {thing}.",
    "She {verbed} the {thing} {adverb}.",
    "They counted {count} {things} before noon.",
    "Meet me at {place} on the {ordinal}.",
    "Where did you put the {adj} {things}?",
    "{name} said the {thing} was {adj}, but nobody listened.",
    "The train from {place} was {count} minutes late.",
    "That is the {ordinal} {thing} this week!",
    "The road is {decimal} {distance} long; we walked it {adverb}.",
    "Who {verbed} the {thing} in {year}?",
    "{person} didn't expect {count} {things}.",
    "It's only {money}, so buy the {thing}.",
    "The {adj} {things} arrived {adverb} from {place}.",
    "Tell {person} the {thing} is ready.",
    "Wow, {count} {things} in one day!",
    "The {ordinal} {thing} was {adj}, and the rest were fine.",
]
_SLOT_PATTERN = re.compile(r"\{(\w+)\}")


def _capitalise_first(text: str) -> str:
    return text[:1].upper() + text[1:]


# Sentence language -> (templates, slots); the English ones unless the voice's language has its own.
_SENTENCE_SETS = {"en": (_TEMPLATES, _SLOTS), "de": (sentences_de.TEMPLATES, sentences_de.SLOTS)}


def sentence_language(voice: str) -> str:
    """The language of the sentences a voice speaks: "de" for German voices (de, de-...), else "en"."""
    language = voice.split("-")[0].lower()
    return language if language in _SENTENCE_SETS else "en"


def make_sentence(rng: random.Random, language: str = "en") -> Sentence:
    templates, slots = _SENTENCE_SETS[language]
    template = rng.choice(templates)
    written, spoken = [], []
    position = 0
    for match in _SLOT_PATTERN.finditer(template):
        literal = template[position:match.start()]
        written.append(literal)
        spoken.append(literal)
        slot_written, slot_spoken = slots[match.group(1)](rng)
        written.append(slot_written)
        spoken.append(slot_spoken)
        position = match.end()
    written.append(template[position:])
    spoken.append(template[position:])
    return Sentence(_capitalise_first("".join(written)), _capitalise_first("".join(spoken)))


def make_sentences(count: int, seed: int, language: str = "en") -> list[Sentence]:
    """`count` sentences from the seeded generator of `language` (sentence_language), without repeats."""
    rng = random.Random(seed)
    sentences, seen = [], set()
    attempts = 0
    while len(sentences) < count:
        attempts += 1
        if attempts > 100 * count + 1000:
            raise RuntimeError(f"could not generate {count} distinct sentences")
        sentence = make_sentence(rng, language)
        if sentence.written not in seen:
            seen.add(sentence.written)
            sentences.append(sentence)
    return sentences


def utterance_id(index: int) -> str:
    """0 -> SYN001-0001, 100 -> SYN002-0001."""
    chapter, number = divmod(index, UTTERANCES_PER_CHAPTER)
    return f"SYN{chapter + 1:03d}-{number + 1:04d}"


# ---------------------------------------------------------------------------------------------------------------
# Audio


def trim_silence(audio: np.ndarray, sampling_rate: int, keep_seconds: float = EDGE_SILENCE_SECONDS,
                 threshold_db: float = SILENCE_THRESHOLD_DB) -> np.ndarray:
    """Leave exactly `keep_seconds` of silence before the first and after the last sound.

    Long silent edges teach Tacotron 2's stop gate to fire late (or never) and waste attention steps; eSpeak
    sometimes stops mid-waveform, so a short silence is added where the clip has less.
    """
    peak = float(np.max(np.abs(audio))) if audio.size else 0.0
    if peak == 0.0:
        raise ValueError("the audio is silent")
    loud = np.flatnonzero(np.abs(audio) > peak * 10.0 ** (threshold_db / 20.0))
    keep = int(round(keep_seconds * sampling_rate))
    start, end = loud[0] - keep, loud[-1] + 1 + keep
    padding_before, padding_after = max(0, -start), max(0, end - len(audio))
    return np.pad(audio[max(0, start):min(len(audio), end)], (padding_before, padding_after))


def resample(audio: np.ndarray, from_rate: int, to_rate: int) -> np.ndarray:
    """Polyphase resampling (scipy's resample_poly): ceil(len * to_rate / from_rate) samples."""
    from scipy.signal import resample_poly

    if from_rate == to_rate:
        return audio
    divisor = math.gcd(from_rate, to_rate)
    return resample_poly(audio, to_rate // divisor, from_rate // divisor).astype(np.float32)


def write_wav_int16(path: Path, audio: np.ndarray, sampling_rate: int) -> None:
    # eSpeak's samples are int16 / 32768, so this is exact (no rescaling by 32767 as a float write would do).
    samples = np.round(audio * 32768.0).clip(-32768, 32767).astype(np.int16)
    soundfile.write(str(path), samples, sampling_rate, subtype="PCM_16", format="WAV")


def speak_to_wav(text: str, path: Path, voice: str = "en-us", words_per_minute: int = 175,
                 sampling_rate: int = ESPEAK_SAMPLING_RATE, pitch: int | None = None,
                 phoneme_input: bool = False) -> int:
    """eSpeak NG speaks `text` into `path` (edge silence trimmed, at `sampling_rate`); returns its length in samples.
    phoneme_input: see scripts.data.espeak.synthesize."""
    audio, espeak_rate = synthesize(text, voice=voice, words_per_minute=words_per_minute, pitch=pitch,
                                    phoneme_input=phoneme_input)
    audio = resample(trim_silence(audio, espeak_rate), espeak_rate, sampling_rate)
    write_wav_int16(path, audio, sampling_rate)
    return len(audio)


def _speak_or_none(job: tuple) -> int | None:
    try:
        return speak_to_wav(*job)
    except RuntimeError:  # eSpeak NG's child process died on this text
        return None


def speak_all(jobs: list[tuple], processes: int | None = None) -> Iterator[int | None]:
    """speak_to_wav(*job) for every job, `processes` at a time (default: one per CPU core): each wav's length in
    samples, in the jobs' order, or None where eSpeak NG's child process died. However many processes speak them, the
    files are the same. Forked workers: they run eSpeak NG and scipy, never torch, whose thread pools a fork would
    break."""
    processes = processes or os.cpu_count() or 1
    if processes == 1 or len(jobs) < 2:
        yield from map(_speak_or_none, jobs)
        return
    with ProcessPoolExecutor(processes, mp_context=multiprocessing.get_context("fork")) as pool:
        yield from pool.map(_speak_or_none, jobs, chunksize=8)


def spoken_lengths(jobs: list[tuple], progress_every: int = 0) -> list[int]:
    """speak_all(jobs), where a text (each job's first argument) eSpeak NG could not speak is an error."""
    lengths = []
    for done, (job, length) in enumerate(zip(jobs, speak_all(jobs)), start=1):
        if length is None:
            raise RuntimeError(f"the eSpeak NG child process died while speaking {job[0]!r}")
        lengths.append(length)
        if progress_every and done % progress_every == 0:
            print(f"  {done}/{len(jobs)} utterances", flush=True)
    return lengths


# ---------------------------------------------------------------------------------------------------------------
# The corpus


@dataclass
class CorpusSummary:
    num_utterances: int
    total_seconds: float
    min_seconds: float
    max_seconds: float
    filelists: dict[str, Path]
    manifests: dict[str, Path] = field(default_factory=dict)  # with manifest=True: "train", "valid", "test", "dict"


def split_sizes(count: int) -> dict[str, int]:
    """90/5/5 % train/val/test, at least one utterance in each."""
    if count < 3:
        raise ValueError(f"--num-utterances is {count}; train, val and test need at least 3 utterances")
    sizes = {split: max(1, round(count * fraction)) for split, fraction in SPLIT_FRACTIONS.items()}
    sizes["train"] = count - sum(sizes.values())
    return sizes


def build_corpus(output_dir: str | Path, filelists_dir: str | Path, num_utterances: int = 500, seed: int = 1234,
                 voice: str = "en-us", words_per_minute: int = 175, progress: bool = False,
                 sampling_rate: int = ESPEAK_SAMPLING_RATE, manifest: bool = False) -> CorpusSummary:
    """The corpus at `sampling_rate` (eSpeak's 22050 Hz by default); with `manifest`, also its fairseq manifests,
    labels and letter dictionary for speech recognition (the same train/val/test split as the filelists)."""
    output_dir, filelists_dir = Path(output_dir), Path(filelists_dir)
    if sampling_rate < 1:
        raise ValueError(f"--sampling-rate must be a positive number of Hz, got {sampling_rate}")
    sizes = split_sizes(num_utterances)
    wav_dir = output_dir / "wavs"
    wav_dir.mkdir(parents=True, exist_ok=True)

    sentences = make_sentences(num_utterances, seed, sentence_language(voice))
    identifiers = [utterance_id(index) for index in range(len(sentences))]
    lengths = spoken_lengths([(sentence.spoken, wav_dir / f"{identifier}.wav", voice, words_per_minute, sampling_rate)
                              for identifier, sentence in zip(identifiers, sentences)], 100 if progress else 0)
    num_samples = dict(zip(identifiers, lengths))
    durations = [length / sampling_rate for length in lengths]
    (output_dir / "metadata.csv").write_text(
        "".join(f"{identifier}|{sentence.written}|{sentence.spoken}\n"
                for identifier, sentence in zip(identifiers, sentences)), encoding="utf-8")

    filelists = write_filelists(output_dir, filelists_dir, name_format="synthetic_{kind}_text_{split}.txt",
                                split_sizes=sizes, seed=seed, text_column="raw")
    manifests = write_manifests(output_dir, sentences, num_samples, sizes, seed) if manifest else {}
    return CorpusSummary(num_utterances, float(sum(durations)), min(durations), max(durations), filelists,
                         manifests)


MANIFEST_SPLIT_NAMES = {"train": "train", "val": "valid", "test": "test"}  # fairseq's subset names


def write_manifests(output_dir: Path, sentences: list[Sentence], num_samples: dict[str, int],
                    sizes: dict[str, int], seed: int) -> dict[str, Path]:
    """{train,valid,test}.{tsv,wrd,ltr} and dict.ltr.txt in output_dir, split as the filelists are."""
    words = {utterance_id(index): librispeech_words(sentence.spoken) for index, sentence in enumerate(sentences)}
    written = {}
    for split, identifiers in split_identifiers(list(words), sizes, seed).items():
        name = MANIFEST_SPLIT_NAMES[split]
        rows = [(f"wavs/{identifier}.wav", num_samples[identifier]) for identifier in identifiers]
        written[name] = write_manifest(output_dir / f"{name}.tsv", output_dir, rows)
        write_labels(written[name], [words[identifier] for identifier in identifiers])
    train_letters = written["train"].with_suffix(".ltr").read_text(encoding="utf-8").splitlines()
    written["dict"] = write_letter_dictionary(output_dir / "dict.ltr.txt", train_letters, always=LIBRISPEECH_LETTERS)
    return written


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output-dir", default="data/synthetic", help="corpus folder (wavs/, metadata.csv)")
    parser.add_argument("--filelists-dir", default="filelists", help="where the train/val/test filelists go")
    parser.add_argument("--num-utterances", type=int, default=500)
    parser.add_argument("--seed", type=int, default=1234, help="same seed, same corpus (byte for byte)")
    parser.add_argument("--voice", default="en-us",
                        help="eSpeak NG voice name; a German one (de) speaks German sentences, any other English ones")
    parser.add_argument("--rate", type=int, default=175, help="speaking rate in words per minute (80 to 450)")
    parser.add_argument("--sampling-rate", type=int, default=ESPEAK_SAMPLING_RATE,
                        help="write the wavs at this rate (eSpeak speaks at 22050 Hz; wav2vec 2.0 wants 16000)")
    parser.add_argument("--manifest", action="store_true",
                        help="also write fairseq manifests, .wrd/.ltr labels and dict.ltr.txt for speech recognition")
    args = parser.parse_args(argv)

    started = time.perf_counter()
    try:
        summary = build_corpus(args.output_dir, args.filelists_dir, args.num_utterances, args.seed, args.voice,
                               args.rate, progress=True, sampling_rate=args.sampling_rate, manifest=args.manifest)
    except ValueError as error:
        sys.exit(f"error: {error}")
    elapsed = time.perf_counter() - started
    print(f"synthetic corpus: {summary.num_utterances} utterances, {summary.total_seconds / 60:.1f} min of audio "
          f"({summary.min_seconds:.2f}-{summary.max_seconds:.2f} s each) in {args.output_dir}, "
          f"built in {elapsed:.1f} s")
    for name, path in {**summary.filelists, **summary.manifests}.items():
        print(f"  {name}: {path}")


if __name__ == "__main__":
    main()
