"""Open-vocabulary word sequences for the TTS demo's training split.

    python -m scripts.data.tts_open_sequences [--corpus data/synthetic] [--filelists-dir filelists] [--count 1350]
        [--seed 4321]

The synthetic corpus's template sentences use a few hundred words, and a model trained on them alone says text
outside them (phrases/phrase.txt) badly. This adds COUNT runs of common English words (open_text.word_sequences), spoken
by the corpus's eSpeak NG voice, to a corpus already built:
    <corpus>/wavs/OPEN-0001.wav ...
    <filelists-dir>/synthetic_audio_text_train_open.txt   the corpus's training filelist, then a line per sequence
The validation and test filelists are left as they are, and no sequence is a sentence the demo is judged on
(open_text.tts_held_out_words). The same seed gives the same bytes.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

from common.errors import ArgumentParser, UserError, exit_on_user_error
from scripts.data.open_text import tts_held_out_words, word_sequences
from scripts.data.synthetic_corpus import spoken_lengths

TRAINING_FILELIST = "synthetic_audio_text_train.txt"
OPEN_TRAINING_FILELIST = "synthetic_audio_text_train_open.txt"


def add_open_sequences(corpus: str | Path, filelists_dir: str | Path, count: int = 1350, seed: int = 4321,
                       common_word_share: float = 0.0) -> Path:
    """Speak `count` word sequences into `corpus`/wavs and write the training filelist with them; returns its path."""
    corpus, filelists_dir = Path(corpus), Path(filelists_dir)
    training = filelists_dir / TRAINING_FILELIST
    if not training.is_file():
        raise UserError(f"{training}: no training filelist; build the corpus first "
                        "(scripts/prepare_dataset.sh --synthetic)")
    lines = training.read_text(encoding="utf-8").splitlines()
    texts = [text for text, _ in word_sequences(count, seed, exclude=tts_held_out_words(),
                                                     common_word_share=common_word_share)]
    wavs = [f"wavs/OPEN-{number:04d}.wav" for number in range(1, len(texts) + 1)]
    spoken_lengths([(text, corpus / wav) for text, wav in zip(texts, wavs)])
    lines += [f"{wav}|{text}" for wav, text in zip(wavs, texts)]
    written = filelists_dir / OPEN_TRAINING_FILELIST
    written.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return written


def main(argv: list[str] | None = None) -> None:
    parser = ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--corpus", default="data/synthetic", help="the built corpus (its wavs/ gets the sequences)")
    parser.add_argument("--filelists-dir", default="filelists", help=f"holds {TRAINING_FILELIST}; gets "
                                                                     f"{OPEN_TRAINING_FILELIST}")
    parser.add_argument("--count", type=int, default=1350, help="word sequences to add (the demo's: three times "
                                                                "the corpus's 450 training sentences)")
    parser.add_argument("--seed", type=int, default=4321, help="same seed, same sequences")
    parser.add_argument("--common-word-share", type=float, default=0.0,
                        help="the chance that a word is one of the 100 most frequent ones instead (0 to 1)")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if args.count < 0:
        parser.error(f"--count must be 0 or more, got {args.count}")
    if not 0.0 <= args.common_word_share <= 1.0:
        parser.error(f"--common-word-share must be between 0 and 1, got {args.common_word_share}")
    started = time.perf_counter()
    written = add_open_sequences(args.corpus, args.filelists_dir, args.count, args.seed, args.common_word_share)
    print(f"{args.count} open-vocabulary word sequences in {args.corpus}/wavs, {written} written in "
          f"{time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    exit_on_user_error(main)
