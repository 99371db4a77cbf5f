"""How well a recognizer hears eSpeak NG's own rendering of the TTS demo's 25 held-out test sentences: the ceiling of
the intelligibility score it gives `make demo` (scripts/intelligibility.py --espeak-ceiling, on the same sentences,
voice and rate), without the TTS demo having run.

    python -m scripts.wav2vec2.tts_judge_ceiling --asr output/demo_asr/checkpoint_wav2vec2_last.pt \
        -o output/demo_asr/tts_ceiling [--cpu] [--lm output/demo_asr/lm_2gram.arpa [--word-score 3]]

The sentences are those of the TTS corpus's test split (scripts/data/open_text.py tts_corpus_sentences: what
scripts/prepare_dataset.sh --synthetic writes to filelists/synthetic_audio_text_test.txt). Writes into -o the texts
(test_sentences.txt, one per line), eSpeak's wavs (espeak/audio_<n>.wav) and intelligibility.json ({"espeak": per-file
and overall CER and WER, as scripts/intelligibility.py writes it; with --lm, also those of decoding with that
language model, under "with_lm"}).
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch

from common.errors import exit_on_user_error
from scripts.data.open_text import tts_corpus_sentences
from scripts.intelligibility import (add_recognizer_args, evaluate, language_model_decoder, load_recognizer,
                                     print_report, render_with_espeak)

VOICE, RATE = "en-us", 175  # the TTS corpus's (and --espeak-ceiling's defaults)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("-o", "--output", required=True, help="folder for the texts, wavs and intelligibility.json")
    add_recognizer_args(parser)
    args = parser.parse_args(argv)

    output = Path(args.output)
    output.mkdir(parents=True, exist_ok=True)
    texts = [sentence.written for sentence in tts_corpus_sentences("test")]
    (output / "test_sentences.txt").write_text("".join(text + "\n" for text in texts), encoding="utf-8")
    pairs = [(number, text, None) for number, text in enumerate(texts, start=1)]
    torch.manual_seed(1234)
    recognizer = load_recognizer(args)
    result = {"asr": args.asr, "texts": str(output / "test_sentences.txt"), "lm": args.lm,
              "espeak": evaluate(recognizer, render_with_espeak(pairs, output / "espeak", VOICE, RATE),
                                 language_model_decoder(args, recognizer))}
    result["espeak"].update(voice=VOICE, rate=RATE, wavs=str(output / "espeak"))
    print_report(f"eSpeak NG rendering of the TTS demo's test sentences ({VOICE}, {RATE} wpm)", result["espeak"],
                 quiet=True)
    (output / "intelligibility.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    return result


if __name__ == "__main__":
    exit_on_user_error(main)
