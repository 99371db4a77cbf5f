"""Write a labelled subset of a fairseq split: a fraction of its utterances, with their .tsv, .ltr and .wrd lines.

    python -m scripts.wav2vec2.labelled_subset --data data/asr --split train --fraction 0.1 --output-split train_10pct \
        [--seed 1234]

The pre-training demo (scripts/wav2vec2/demo_pretrain.sh) fine-tunes on such a subset, as if only that much of the
corpus had transcripts. The choice is a function of (number of utterances, --fraction, --seed) alone, so a rerun picks
the same utterances; they keep their order in the split. At least one utterance is kept.
"""
from __future__ import annotations

import random
from pathlib import Path

from common.errors import ArgumentParser, UserError, UserFileNotFoundError, exit_on_user_error

LABEL_EXTENSIONS = ("ltr", "wrd")  # the labels written beside each manifest (scripts/data/asr_corpus.py)


def choose_subset(num_utterances: int, fraction: float, seed: int) -> list[int]:
    """Indices (sorted) of round(fraction x num_utterances) utterances, at least one, drawn without replacement."""
    if not 0.0 < fraction <= 1.0:
        raise UserError(f"--fraction must be in (0, 1], got {fraction}")
    if num_utterances < 1:
        raise UserError("the split holds no utterances")
    size = max(1, round(num_utterances * fraction))
    return sorted(random.Random(seed).sample(range(num_utterances), size))


def read_lines(path: Path) -> list[str]:
    if not path.is_file():
        raise UserFileNotFoundError(f"{path} does not exist (build the corpus first: scripts/data/asr_corpus.py)")
    return path.read_text(encoding="utf-8").splitlines()


def write_subset(data: Path, split: str, output_split: str, fraction: float, seed: int) -> list[int]:
    """Write <output_split>.tsv/.ltr/.wrd into data from split's files; returns the chosen indices."""
    root, *entries = read_lines(data / f"{split}.tsv")  # a fairseq manifest: the audio folder, then one line each
    labels = {extension: read_lines(data / f"{split}.{extension}") for extension in LABEL_EXTENSIONS}
    for extension, lines in labels.items():
        if len(lines) != len(entries):
            raise UserError(f"{data / f'{split}.{extension}'} has {len(lines)} lines for {len(entries)} utterances "
                            f"in {data / f'{split}.tsv'}")
    chosen = choose_subset(len(entries), fraction, seed)
    (data / f"{output_split}.tsv").write_text("\n".join([root, *(entries[i] for i in chosen)]) + "\n",
                                              encoding="utf-8")
    for extension, lines in labels.items():
        (data / f"{output_split}.{extension}").write_text("".join(lines[i] + "\n" for i in chosen), encoding="utf-8")
    return chosen


def main(argv: list[str] | None = None) -> list[int]:
    parser = ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="the corpus folder (fairseq manifests and labels)")
    parser.add_argument("--split", default="train", help="the split to take the subset from")
    parser.add_argument("--fraction", type=float, required=True, help="the share of its utterances to keep")
    parser.add_argument("--output-split", required=True, help="the subset's name: <data>/<name>.tsv, .ltr, .wrd")
    parser.add_argument("--seed", type=int, default=1234)
    args = parser.parse_args(argv)
    if args.output_split == args.split:
        raise UserError(f"--output-split must differ from --split ({args.split}): it would overwrite it")
    data = Path(args.data)
    chosen = write_subset(data, args.split, args.output_split, args.fraction, args.seed)
    print(f"{data / args.output_split}.tsv: {len(chosen)} utterances of {args.split}'s "
          f"{len(read_lines(data / f'{args.split}.tsv')) - 1}")
    return chosen


if __name__ == "__main__":
    exit_on_user_error(main)
