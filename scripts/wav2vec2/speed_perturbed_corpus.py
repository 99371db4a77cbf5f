"""A copy of a speech-recognition corpus whose training utterances are speed-perturbed: an experiment's tool.

    python -m scripts.wav2vec2.speed_perturbed_corpus data/asr data/asr_speed [--share 0.5] [--span 0.15] [--seed 1234]
    OUTPUT_DIR=output/asr_speed DATA_DIR=data/asr_speed bash scripts/wav2vec2/demo_asr.sh   # train and test on it

Each training utterance, with probability SHARE, is played back at a speed drawn uniformly from 1 - SPAN to 1 + SPAN:
resampled, so its tempo, pitch and formants move together (Kaldi's speed perturbation; the formants' shift is what a
different vocal-tract length does). The other utterances are copied as they are. The validation and test manifests
are copied unchanged, so they still point at SOURCE's own wavs; only train.tsv points at OUTPUT. The same seed gives
the same bytes. wav2vec2/RESULTS.md reports what it did to `make demo-asr`'s held-out voices.
"""
from __future__ import annotations

import random
import shutil
from pathlib import Path

import soundfile

from common.audio import resample_audio
from common.errors import ArgumentParser, UserError, UserFileNotFoundError, exit_on_user_error

RATE_STEP = 100  # Hz: the new rate is rounded to it, which keeps the polyphase resampler's factors small


def start_copy(source: Path, output: Path) -> tuple[Path, list[tuple[str, int]]]:
    """Copy the corpus's files but its training manifest and wavs (the other splits' manifests, still pointing at
    SOURCE's wavs, the labels, the dictionary and the corpus's stamp), and read its training manifest. Returns the
    folder its paths are relative to, and its (path, samples) rows; the caller writes the wavs and train.tsv."""
    manifest = source / "train.tsv"
    if not manifest.is_file():
        raise UserFileNotFoundError(f"{manifest} not found: SOURCE must be a corpus folder with a train.tsv")
    if output.resolve() == source.resolve():
        raise UserError("OUTPUT must be another folder than SOURCE")
    lines = manifest.read_text(encoding="utf-8").splitlines()
    rows = []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        try:
            relative, samples = line.split("\t")
            rows.append((relative, int(samples)))
        except ValueError:
            raise UserError(f"{manifest}:{number}: expected 'path<TAB>samples', got {line!r}") from None
    (output / "wavs").mkdir(parents=True, exist_ok=True)
    for path in source.iterdir():
        if path.is_file() and path.name != "train.tsv":
            shutil.copy(path, output / path.name)
    return Path(lines[0]), rows


def write_manifest(output: Path, rows: list[str]) -> None:
    """OUTPUT's train.tsv: its own folder as the root, then "path<TAB>samples" rows."""
    (output / "train.tsv").write_text("\n".join([str(output.resolve()), *rows]) + "\n", encoding="utf-8")


def perturb_corpus(source: Path, output: Path, share: float, span: float, seed: int) -> dict[str, int]:
    """Write the copy; returns how many training utterances were perturbed and copied as they are."""
    if not 0.0 <= share <= 1.0 or not 0.0 <= span < 1.0:
        raise UserError(f"--share must be in [0, 1] and --span in [0, 1), got {share} and {span}")
    source_root, training = start_copy(source, output)
    rng = random.Random(seed)
    rows, counts = [], {"perturbed": 0, "unchanged": 0}
    for relative, _ in training:
        audio, rate = soundfile.read(source_root / relative, dtype="float32")
        if rng.random() < share:
            speed = 1.0 + rng.uniform(-span, span)
            audio = resample_audio(audio, rate, int(round(rate / speed / RATE_STEP)) * RATE_STEP)
            counts["perturbed"] += 1
        else:
            counts["unchanged"] += 1
        (output / relative).parent.mkdir(parents=True, exist_ok=True)
        soundfile.write(output / relative, audio, rate, subtype="PCM_16")
        rows.append(f"{relative}\t{len(audio)}")
    write_manifest(output, rows)
    return counts


def main(argv: list[str] | None = None) -> None:
    parser = ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", help="the corpus (e.g. data/asr, scripts/data/asr_corpus.py's layout)")
    parser.add_argument("output", help="the copy to write")
    parser.add_argument("--share", type=float, default=0.5, help="probability that an utterance is perturbed")
    parser.add_argument("--span", type=float, default=0.15, help="speeds are drawn from 1 - SPAN to 1 + SPAN")
    parser.add_argument("--seed", type=int, default=1234)
    args = parser.parse_args(argv)
    counts = perturb_corpus(Path(args.source), Path(args.output), args.share, args.span, args.seed)
    print(f"{args.output}: {counts['perturbed']} training utterances speed-perturbed, {counts['unchanged']} as they were")


if __name__ == "__main__":
    exit_on_user_error(main)
