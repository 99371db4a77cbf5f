"""Choose the language model's weights for a recognizer on sentences that no test split holds.

    python -m scripts.wav2vec2.tune_lm --checkpoint output/demo_asr/checkpoint_wav2vec2_last.pt --data data/asr \
        -o output/tune_lm [--english-weights 0 0.25 0.5 0.75 0.9] [--lm-weights 0.5 0.75 1] [--word-scores 1.5 3 4.5] \
        [--min-letter-log-probs -5] [--beam-size 100] [--seed 1234] [--num-sentences N]

1. The development set, unless OUTPUT/dev holds it: the 40 hand-written sentences of
   scripts/data/everyday_dev_sentences.txt (none of them a test sentence: tests/scripts/test_open_text.py), each
   spoken twice, as `make demo-asr`'s corpus speaks its test_everyday split (a training accent and variant at a
   training rate) and again with a made-up accent in one of eSpeak NG's wider variants, as its training copy
   re-speaks utterances (scripts/wav2vec2/accent_perturbed_corpus.py): the nearest this corpus comes to a voice the
   recognizer never heard without using the held-out voices themselves.
2. The recognizer's CTC log-probabilities of those 80 utterances, once.
3. For each English weight, the language model `make demo-asr` builds from DATA/train.wrd and the lexicon
   (scripts/wav2vec2/build_lm.py --order 2 --lexicon --english-weight W); for each word score, language model
   weight and least log-probability of a letter the beam tries, the beam search of both renditions. CER and WER per
   rendition.
It prints one line per setting, the best (the lowest CER over both renditions) marked, and writes OUTPUT/tune_lm.json.
"""
from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import torch

from common.errors import ArgumentParser, UserError, UserFileNotFoundError, exit_on_user_error
from scripts.data.asr_corpus import OPEN_ACCENTS, OPEN_VARIANTS, RATES, SAMPLING_RATE, open_voice
from scripts.data.open_text import everyday_dev_sentences
from scripts.data.synthetic_corpus import speak_to_wav
from scripts.wav2vec2.accent_perturbed_corpus import WIDE_VARIANTS, made_up_accent
from scripts.wav2vec2.build_lm import (EnglishBigrams, WittenBellModel, check_english_weight, interpolate,
                                       read_sentences, vocabulary, write_model)
from wav2vec2.decoding import (DEFAULT_BEAM_SIZE, DEFAULT_MIN_LETTER_LOG_PROB, BeamSearchDecoder, error_counts,
                               error_rates)

RENDITIONS = ("plain", "accent")


def speak_development_set(folder: Path, seed: int, count: int | None = None) -> dict[str, list[tuple[Path, str]]]:
    """(wav, words) of each rendition of the first `count` (default all) development sentences, spoken into folder
    unless there already."""
    rng = random.Random(seed)
    spoken: dict[str, list[tuple[Path, str]]] = {rendition: [] for rendition in RENDITIONS}
    for number, (text, words) in enumerate(everyday_dev_sentences()[:count], 1):
        accent, rate = rng.choice(OPEN_ACCENTS), rng.choice(RATES)
        plain_voice = open_voice(accent, rng.choice(OPEN_VARIANTS))
        accented_voice = f"{accent}+{rng.choice(WIDE_VARIANTS)}"
        phonemes = made_up_accent(words, rng)
        for rendition, say, voice, phoneme_input in (("plain", text, plain_voice, False),
                                                     ("accent", phonemes, accented_voice, True)):
            path = folder / rendition / f"{number:02d}.wav"
            if not path.is_file():
                path.parent.mkdir(parents=True, exist_ok=True)
                speak_to_wav(say, path, voice, rate, SAMPLING_RATE, phoneme_input=phoneme_input)
            spoken[rendition].append((path, words))
    return spoken


def grid_results(log_probs: dict[str, list[torch.Tensor]], references: dict[str, list[str]], dictionary,
                 arpa: Path, english_weight: float, lm_weights: list[float], word_scores: list[float],
                 min_letter_log_probs: list[float], beam_size: int) -> list[dict]:
    rows = []
    for lm_weight, word_score, min_letter_log_prob in itertools.product(lm_weights, word_scores, min_letter_log_probs):
        decoder = BeamSearchDecoder(dictionary, beam_size, arpa, lm_weight, word_score, min_letter_log_prob)
        row = {"english_weight": english_weight, "lm_weight": lm_weight, "word_score": word_score,
               "min_letter_log_prob": min_letter_log_prob}
        totals = dict.fromkeys(("word_errors", "words", "char_errors", "chars"), 0.0)
        for rendition in RENDITIONS:
            sums = error_counts(references[rendition], [decoder(utterance) for utterance in log_probs[rendition]])
            row[rendition] = error_rates(sums)
            totals = {key: totals[key] + sums[key] for key in totals}
        row["both"] = error_rates(totals)
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> dict:
    parser = ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", required=True, help="the fine-tuned recognizer")
    parser.add_argument("--data", required=True, help="the ASR corpus whose train.wrd the language model reads")
    parser.add_argument("-o", "--output", required=True, help="folder for the development set, models and results")
    parser.add_argument("--english-weights", type=float, nargs="+", default=[0.0, 0.25, 0.5, 0.75, 0.9])
    parser.add_argument("--word-scores", type=float, nargs="+", default=[1.5, 3.0, 4.5])
    parser.add_argument("--lm-weights", type=float, nargs="+", default=[0.5, 0.75, 1.0])
    parser.add_argument("--min-letter-log-probs", type=float, nargs="+", default=[DEFAULT_MIN_LETTER_LOG_PROB],
                        help="the beam search's --min-letter-log-prob values to try")
    parser.add_argument("--beam-size", type=int, default=DEFAULT_BEAM_SIZE)
    parser.add_argument("--seed", type=int, default=1234, help="which voices and accents say the sentences")
    parser.add_argument("--num-sentences", type=int, default=None, help="only the first N sentences (default all 40)")
    args = parser.parse_args(argv)
    if args.num_sentences is not None and args.num_sentences < 1:
        raise UserError(f"--num-sentences must be at least 1, got {args.num_sentences}")
    for english_weight in args.english_weights:
        check_english_weight(english_weight)
    text = Path(args.data) / "train.wrd"
    if not text.is_file():
        raise UserFileNotFoundError(f"--data: {text} not found (a corpus of scripts/data/asr_corpus.py)")
    output = Path(args.output)

    from wav2vec2.api import Recognizer  # imported late: --help needs no model code

    recognizer = Recognizer.from_checkpoint(args.checkpoint, device="cpu", flag="--checkpoint")
    spoken = speak_development_set(output / "dev", args.seed, args.num_sentences)
    log_probs, references, greedy = {}, {}, {}
    for rendition, pairs in spoken.items():
        texts, rows = recognizer.transcribe([path for path, _ in pairs], return_log_probs=True)
        log_probs[rendition] = [torch.from_numpy(row) for row in rows]
        references[rendition] = [words for _, words in pairs]
        greedy[rendition] = error_rates(error_counts(references[rendition], texts))
    # The text's model and the English tables once; each weight only mixes them again.
    text_model = WittenBellModel(read_sentences(text, with_lexicon=True), order=2)
    english = EnglishBigrams(vocabulary(text_model))
    results = []
    for english_weight in args.english_weights:
        arpa = output / f"lm_english{english_weight:g}.arpa"
        mixed = interpolate(text_model, english, english_weight) if english_weight else text_model
        write_model(mixed, arpa, f"(English weight {english_weight:g})")
        results += grid_results(log_probs, references, recognizer.dictionary, arpa, english_weight,
                                args.lm_weights, args.word_scores, args.min_letter_log_probs, args.beam_size)
    best = min(results, key=lambda row: row["both"]["cer"])
    print(f"greedy: CER plain {greedy['plain']['cer']:.2f} %, made-up accent {greedy['accent']['cer']:.2f} %")
    print("english weight | lm weight | word score | min letter log-prob | CER plain | CER made-up accent | CER both "
          "| WER both")
    for row in results:
        mark = "  <- best" if row is best else ""
        print(f"{row['english_weight']:g} | {row['lm_weight']:g} | {row['word_score']:g} | "
              f"{row['min_letter_log_prob']:g} | "
              f"{row['plain']['cer']:.2f} | {row['accent']['cer']:.2f} | {row['both']['cer']:.2f} | "
              f"{row['both']['wer']:.2f}{mark}")
    report = {"checkpoint": args.checkpoint, "greedy": greedy, "results": results, "best": best}
    (output / "tune_lm.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return report


if __name__ == "__main__":
    exit_on_user_error(main)
