"""A synthetic speech-recognition corpus: several eSpeak NG voices and speaking rates, 16 kHz, in fairseq's layout.

    python -m scripts.data.asr_corpus --output-dir data/asr --num-utterances 2000 [--seed 1234]
        [--voices en-us en-us+f3 ...] [--test-voice en-gb-x-rp+m4] [--rates 140 160 ...] [--sampling-rate 16000]

The sentences are the TTS corpus's (scripts/data/synthetic_corpus.py: numbers, dates, money, names and titles, spelled
out as they are spoken), each spoken by one of the training voices at one of the rates. --num-utterances sentences
are split into
    train            the rest
    valid            5 % (at least 2) held-out sentences, spoken by the training voices
    test_sentences   5 % (at least 2) other held-out sentences, spoken by the training voices
    test_voice       the test_sentences' sentences, at the same rates, spoken by --test-voice, never heard in training
so a recognizer's error on test_sentences measures generalisation to new sentences, and test_voice to a new voice.

It writes into --output-dir (train.py -m wav2vec2 --data <output-dir> --train-subset train --valid-subset valid):
    wavs/<split>-<NNNNN>.wav             16-bit mono PCM at --sampling-rate, edge silence trimmed to ~30 ms
    <split>.tsv                          the folder, then wavs/<ID>.wav<TAB>num_samples
    <split>.wrd, <split>.ltr             the spoken words as LibriSpeech writes them, and their letters
    dict.ltr.txt                         LibriSpeech's 28 symbols (| A-Z '), by their count in train.ltr
    utterances.csv                       ID|split|voice|words per minute|words, one line per utterance
The same arguments give the same bytes in every file (eSpeak is deterministic here: scripts/data/espeak.py).
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from scripts.data.espeak import synthesize
from scripts.data.librispeech import (LIBRISPEECH_LETTERS, librispeech_words, write_labels, write_letter_dictionary,
                                      write_manifest)
from scripts.data.synthetic_corpus import make_sentences, resample, trim_silence, write_wav_int16

# eSpeak NG voices (language + variant) that espeakng-loader ships: American, British, Scottish and New York English,
# male and female variants. The held-out voice is another accent (British Received Pronunciation) and variant.
TRAINING_VOICES = ("en-us", "en-us+f3", "en", "en+f2", "en-gb-scotland+m3", "en-us-nyc+f4")
TEST_VOICE = "en-gb-x-rp+m4"
RATES = (140, 160, 175, 190, 210)  # words per minute
SAMPLING_RATE = 16000
SPLITS = ("train", "valid", "test_sentences", "test_voice")
HELD_OUT_FRACTION = 0.05  # of the sentences, for valid and again for test_sentences


@dataclass(frozen=True)
class Utterance:
    identifier: str
    split: str
    text: str  # what eSpeak is given: the spoken form, with its punctuation ("Doctor Smith paid twenty-one dollars.")
    words: str  # as LibriSpeech writes it: "DOCTOR SMITH PAID TWENTY ONE DOLLARS"
    voice: str
    rate: int


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
                     progress: bool = False) -> AsrCorpusSummary:
    output_dir = Path(output_dir)
    if sampling_rate < 1:
        raise ValueError(f"--sampling-rate must be a positive number of Hz, got {sampling_rate}")
    utterances = plan_utterances(num_utterances, seed, tuple(voices), test_voice, tuple(rates))
    wav_dir = output_dir / "wavs"
    wav_dir.mkdir(parents=True, exist_ok=True)
    num_samples = {}
    for done, utterance in enumerate(utterances, start=1):
        audio, espeak_rate = synthesize(utterance.text, voice=utterance.voice, words_per_minute=utterance.rate)
        audio = resample(trim_silence(audio, espeak_rate), espeak_rate, sampling_rate)
        write_wav_int16(wav_dir / f"{utterance.identifier}.wav", audio, sampling_rate)
        num_samples[utterance.identifier] = len(audio)
        if progress and done % 200 == 0:
            print(f"  {done}/{len(utterances)} utterances", flush=True)

    manifests = {}
    for split in SPLITS:
        chosen = [u for u in utterances if u.split == split]
        rows = [(f"wavs/{u.identifier}.wav", num_samples[u.identifier]) for u in chosen]
        manifests[split] = write_manifest(output_dir / f"{split}.tsv", output_dir, rows)
        write_labels(manifests[split], [u.words for u in chosen])
    train_letters = manifests["train"].with_suffix(".ltr").read_text(encoding="utf-8").splitlines()
    dictionary = write_letter_dictionary(output_dir / "dict.ltr.txt", train_letters, always=LIBRISPEECH_LETTERS)
    (output_dir / "utterances.csv").write_text(
        "".join(f"{u.identifier}|{u.split}|{u.voice}|{u.rate}|{u.words}\n" for u in utterances), encoding="utf-8")
    return AsrCorpusSummary(output_dir, manifests, dictionary,
                            {split: sum(u.split == split for u in utterances) for split in SPLITS},
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
    args = parser.parse_args(argv)

    started = time.perf_counter()
    try:
        summary = build_asr_corpus(args.output_dir, args.num_utterances, args.seed, tuple(args.voices),
                                   args.test_voice, tuple(args.rates), args.sampling_rate, progress=True)
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
