"""A copy of the ASR demo's corpus in which some training utterances are spoken with a made-up accent: an experiment's
tool.

    python -m scripts.wav2vec2.accent_perturbed_corpus data/asr data/asr_accent50 [--share 0.5] [--seed 1234] \
        [--variants own|wide] [--no-accent] [--keep-voices VOICE ...]
    OUTPUT_DIR=output/asr_accent50 DATA_DIR=data/asr_accent50 bash scripts/wav2vec2/demo_asr.sh   # train and test

`make demo-asr` trains on such a copy (--share 0.5 --variants wide --keep-voices en-us: the TTS judge's voice is never
re-spoken).

eSpeak NG's English accents differ in how they transcribe words into phonemes and in how they sound each phoneme; the
demo's held-out voices are accents the training never hears. This makes new ones from the training accents alone: each
chosen training utterance (probability SHARE) is transcribed into eSpeak's phoneme names by a training accent drawn at
random, changed by pronunciation rules drawn at random (each with probability 0.3: "th" stopped to d/t or fronted to
v/f, "h" dropped, "r" dropped where no vowel follows; and a share of its vowels, 0 to 30 %, swapped for a neighbouring
one), and spoken from those phonemes by the utterance's own voice, rate and pitch. Its transcript stays as it was.
--variants wide gives each re-spoken utterance its accent with a voice variant drawn from eSpeak NG's wider set
(WIDE_VARIANTS: other formants, pitch ranges, voicing) instead of its own; --no-accent re-speaks the words as they are,
with no made-up accent (with --variants wide: the wider variants alone). The corpus must be scripts/data/asr_corpus.py's
--text open (its utterances.csv names each utterance's voice, rate and pitch). Only train.tsv changes; the other
manifests are copied and still point at SOURCE's wavs. An utterance whose phonemes eSpeak cannot speak (its child
process dies, a handful in thousands) is copied as it was. The same seed gives the same bytes. wav2vec2/RESULTS.md
reports what it did to the held-out voices.
"""
from __future__ import annotations

import argparse
import random
import re
import shutil
from pathlib import Path

from common.errors import ArgumentParser, UserError, UserFileNotFoundError, exit_on_user_error
from common.espeak import phoneme_clauses
from scripts.data.asr_corpus import HELD_OUT_VOICES, OPEN_ACCENTS, OPEN_VARIANTS
from scripts.data.synthetic_corpus import speak_to_wav
from scripts.wav2vec2.speed_perturbed_corpus import start_copy, write_manifest

RULE_PROBABILITY = 0.3
# eSpeak NG's voice variants (espeak-ng-data/voices/!v) that the corpus's own OPEN_VARIANTS leave out, less the held-out
# voices' variants (m4, m7, f5, klatt) and the ones that are not a human voice (whisper, croak, voicing 0, robots,
# echoes).
WIDE_VARIANTS = ("m8", "klatt4", "klatt5", "klatt6", "adam", "Alex", "Alicia", "Andrea", "Andy", "Annie",
                 "AnxiousAndy", "Denis", "Diogo", "Gene", "Gene2", "Henrique", "Hugo", "Jacky", "Lee", "Marco",
                 "Mario", "Michael", "Mike", "Nguyen", "Reed", "announcer", "antonio", "aunty", "belinda",
                 "benjamin", "boris", "david", "ed", "edward", "edward2", "grandma", "grandpa", "gustave", "ian",
                 "iven", "iven2", "iven3", "iven4", "john", "kaukovalta", "linda", "marcelo", "max", "michel",
                 "miguel", "mike2", "norbert", "pablo", "paul", "pedro", "quincy", "rob", "robert", "sandro",
                 "shelby", "steph", "steph2", "steph3", "travis", "victor", "zac")
VARIANT_CHOICES = ("own", "wide")
VOWEL_SHARES = (0.0, 0.1, 0.2, 0.3)
# eSpeak's English phoneme names, longest first, so that a regular expression splits a transcription into them.
PHONEME = re.compile(r"aI@|aU@|aI|aU|eI|oU|OI|e@|I@|U@|i@|A:|O:|3:|u:|i:|aa|a#|tS|dZ|I2|I#|@2|@5|.", re.S)
STRESS_MARKS = ("'", ",", "%", "=")
VOWEL_AFTER_R = re.compile(r"[aeiouAEIOUV03@]")
# Each vowel's neighbours: what another accent may say instead (TRAP/BATH, LOT, STRUT/FOOT, FACE, GOAT, ...).
VOWEL_SWAPS = {"a": ["aa", "A:", "E"], "aa": ["a", "A:"], "A:": ["a", "0"], "0": ["A:", "O:", "V"], "V": ["U", "0", "@"],
               "eI": ["E", "e@"], "oU": ["O:", "0"], "I": ["i:", "E"], "i:": ["I"], "u:": ["U"], "U": ["u:", "V"],
               "E": ["a", "eI"], "3:": ["@", "E"], "O:": ["0", "oU"], "aI": ["A:", "OI"], "aU": ["a", "oU"]}


def perturb(clause: str, rules: set[str], vowel_share: float, rng: random.Random) -> str:
    """One clause of phoneme names with the accent's rules applied."""
    phonemes = PHONEME.findall(clause)
    changed = []
    for index, phoneme in enumerate(phonemes):
        following = next((later for later in phonemes[index + 1:] if later not in STRESS_MARKS), " ")
        if phoneme in ("D", "T") and "th_stopping" in rules:
            phoneme = {"D": "d", "T": "t"}[phoneme]
        elif phoneme in ("D", "T") and "th_fronting" in rules:
            phoneme = {"D": "v", "T": "f"}[phoneme]
        elif phoneme == "h" and "h_dropping" in rules:
            phoneme = ""
        elif phoneme == "r" and "non_rhotic" in rules and not VOWEL_AFTER_R.match(following):
            phoneme = ""
        elif phoneme == "3" and "non_rhotic" in rules:  # American English's r-coloured schwa
            phoneme = "@"
        elif phoneme in VOWEL_SWAPS and rng.random() < vowel_share:
            phoneme = rng.choice(VOWEL_SWAPS[phoneme])
        changed.append(phoneme)
    return "".join(changed)


def made_up_accent(words: str, rng: random.Random) -> str:
    """eSpeak's phoneme input ([[...]] per clause) for `words` said with a made-up accent: a training accent's
    transcription, changed by rules and vowel swaps drawn from rng."""
    rules = {rule for rule in ("th_stopping", "th_fronting", "h_dropping", "non_rhotic")
             if rng.random() < RULE_PROBABILITY}
    vowel_share = rng.choice(VOWEL_SHARES)
    clauses = [perturb(clause, rules, vowel_share, rng)
               for clause in phoneme_clauses(words.lower(), rng.choice(OPEN_ACCENTS), mnemonics=True)]
    return " ".join(f"[[{clause}]]" for clause in clauses)


def held_out_variants() -> set[str]:
    return {voice.partition("+")[2] for voice in HELD_OUT_VOICES} - {""}


def perturb_corpus(source: Path, output: Path, share: float, seed: int, variants: str = "own",
                   accent: bool = True, keep_voices: frozenset[str] = frozenset()) -> dict[str, int]:
    """Write the copy; returns how many training utterances were re-spoken, copied as they were, and failed. An
    utterance in one of keep_voices is always copied as it was."""
    if not (source / "utterances.csv").is_file():
        raise UserFileNotFoundError(f"{source / 'utterances.csv'} not found: SOURCE must be a corpus of "
                                    f"scripts/data/asr_corpus.py --text open")
    if not 0.0 <= share <= 1.0:
        raise UserError(f"--share must be in [0, 1], got {share}")
    if variants not in VARIANT_CHOICES:
        raise UserError(f"--variants must be one of {', '.join(VARIANT_CHOICES)}, got {variants!r}")
    source_root, manifest_rows = start_copy(source, output)
    # utterances.csv: ID|split|voice|words per minute|words|pitch (- for the voice's own)
    training = {fields[0]: fields for fields in (line.split("|") for line in
                                                 (source / "utterances.csv").read_text(encoding="utf-8").splitlines())
                if len(fields) == 6 and fields[1] == "train"}

    # One utterance at a time, in the manifest's order, and not in parallel: each synthesis forks from this process,
    # whose eSpeak NG library keeps state from the transcriptions before it, so the copy's bytes depend on that
    # order (speaking the same jobs in two processes changed 175 of 2881 wavs when tried).
    rng = random.Random(seed)
    rows, counts = [], {"respoken": 0, "unchanged": 0, "failed": 0}
    for relative, samples in manifest_rows:
        fields = training.get(Path(relative).stem)
        if fields is None:
            raise UserError(f"{source / 'train.tsv'}: {relative} is not a training utterance of "
                            f"{source / 'utterances.csv'} (its six fields need --text open)")
        if rng.random() < share and fields[2] not in keep_voices:
            _, _, voice, words_per_minute, words, pitch = fields
            if variants == "wide":
                voice = f"{voice.partition('+')[0]}+{rng.choice(WIDE_VARIANTS)}"
            if accent:
                text = made_up_accent(words, rng)
            else:
                text = words.lower()
            try:
                samples = speak_to_wav(text, output / relative, voice, int(words_per_minute), 16000,
                                       None if pitch == "-" else int(pitch), phoneme_input=accent)
                counts["respoken"] += 1
            except RuntimeError:  # the child process died on these phonemes
                shutil.copy(source_root / relative, output / relative)
                counts["failed"] += 1
        else:
            shutil.copy(source_root / relative, output / relative)
            counts["unchanged"] += 1
        rows.append(f"{relative}\t{samples}")
    write_manifest(output, rows)
    return counts


def main(argv: list[str] | None = None) -> None:
    parser = ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", help="the corpus (scripts/data/asr_corpus.py --text open, e.g. data/asr)")
    parser.add_argument("output", help="the copy to write")
    parser.add_argument("--share", type=float, default=0.5, help="probability that an utterance is re-spoken")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--variants", choices=VARIANT_CHOICES, default="own",
                        help="own: a re-spoken utterance keeps its voice variant; wide: one of WIDE_VARIANTS")
    parser.add_argument("--accent", action=argparse.BooleanOptionalAction, default=True,
                        help="--no-accent: re-speak the words as they are, with no made-up accent")
    parser.add_argument("--keep-voices", nargs="+", default=[], metavar="VOICE",
                        help="voices whose utterances are never re-spoken (e.g. en-us: the TTS judge's)")
    args = parser.parse_args(argv)
    counts = perturb_corpus(Path(args.source), Path(args.output), args.share, args.seed, args.variants, args.accent,
                            frozenset(args.keep_voices))
    print(f"{args.output}: {counts['respoken']} training utterances re-spoken "
          f"({'with a made-up accent' if args.accent else 'as they are'}, {args.variants} variants), "
          f"{counts['unchanged']} as they were, {counts['failed']} that eSpeak NG could not speak copied as they were")


if __name__ == "__main__":
    exit_on_user_error(main)
