"""LibriSpeech for wav2vec 2.0: download, extract, fairseq manifests, letter and word labels, the letter dictionary.

    python -m scripts.data.librispeech download   --archives-dir data [--subsets dev-clean ...] [--url BASE]
    python -m scripts.data.librispeech extract    --archives-dir data --dataset-dir data/LibriSpeech [--subsets ...]
    python -m scripts.data.librispeech manifests  --dataset-dir data/LibriSpeech --manifests-dir DIR [--subsets ...]
    python -m scripts.data.librispeech labels     --dataset-dir data/LibriSpeech --manifests-dir DIR [--subsets ...]
    python -m scripts.data.librispeech dictionary --dataset-dir data/LibriSpeech --manifests-dir DIR

scripts/prepare_librispeech.sh runs these as stages 1-5. The manifests directory is what `train.py -m wav2vec2
--data DIR` reads, in the layout of NVIDIA's generate_filelists.sh:
    <subset>.tsv    the subset's folder, then `speaker/chapter/ID.flac<TAB>num_samples` lines (sorted)
    <subset>.wrd    the transcript of each line, as LibriSpeech writes it ("HE HOPED THERE WOULD BE STEW")
    <subset>.ltr    its letters, words separated by '|', with a trailing '|' ("H E | H O P E D | ... |")
    train-full-960.{tsv,ltr,wrd}   the three training subsets together (when all three are there)
    dict.ltr.txt    `<letter> <count>` over the training labels, most frequent first

The writers (write_manifest, write_labels, write_letter_dictionary, librispeech_words) also make the synthetic
corpora's manifests (scripts/data/synthetic_corpus.py --manifest, scripts/data/asr_corpus.py).
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tarfile
from collections import Counter
from pathlib import Path, PurePosixPath

import soundfile

from scripts.data.ljspeech import _safe_relative_path, download as download_file
from wav2vec2.dictionary import words_to_letters  # "HI THERE" -> "H I | T H E R E |", as fairseq's libri_labels.py

LIBRISPEECH_URL = "https://www.openslr.org/resources/12"  # <URL>/<subset>.tar.gz
SUBSETS = ("dev-clean", "dev-other", "test-clean", "test-other", "train-clean-100", "train-clean-360",
           "train-other-500")
TRAINING_SUBSETS = ("train-clean-100", "train-clean-360", "train-other-500")
FULL_TRAINING_SET = "train-full-960"
LIBRISPEECH_LETTERS = "|ABCDEFGHIJKLMNOPQRSTUVWXYZ'"  # what LibriSpeech's labels are made of (28 symbols)
TOP_FOLDER = "LibriSpeech"  # every archive unpacks into LibriSpeech/<subset>/...


# ---------------------------------------------------------------------------------------------------------------
# Writers shared with the synthetic corpora


def librispeech_words(text: str) -> str:
    """Text as LibriSpeech transcribes it: upper-case letters and apostrophes, words separated by one space
    ("Twenty-one dollars, Mr. O'Hara!" -> "TWENTY ONE DOLLARS MR O'HARA"). Digits are refused: they must be spelled
    out, as they are spoken."""
    if re.search(r"\d", text):
        raise ValueError(f"digits in {text!r}: write numbers as they are spoken")
    words = re.sub(r"[^A-Z']+", " ", text.upper()).split()
    return " ".join(word.strip("'") for word in words if word.strip("'"))


def _write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


def write_manifest(path: str | Path, root: str | Path, rows: list[tuple[str, int]]) -> Path:
    """A fairseq manifest: the root folder (absolute, as fairseq writes it), then `relative/path<TAB>samples`."""
    path = Path(path)
    lines = [f"{Path(root).resolve()}\n"] + [f"{relative}\t{samples}\n" for relative, samples in rows]
    _write_atomically(path, "".join(lines))
    return path


def write_labels(manifest_path: str | Path, word_lines: list[str]) -> tuple[Path, Path]:
    """<stem>.wrd (the words) and <stem>.ltr (their letters) beside a manifest, one line per manifest row."""
    manifest_path = Path(manifest_path)
    words_path, letters_path = manifest_path.with_suffix(".wrd"), manifest_path.with_suffix(".ltr")
    _write_atomically(words_path, "".join(f"{words}\n" for words in word_lines))
    _write_atomically(letters_path, "".join(f"{words_to_letters(words)}\n" for words in word_lines))
    return words_path, letters_path


def letter_counts(letter_lines: list[str]) -> Counter:
    return Counter(symbol for line in letter_lines for symbol in line.split())


def write_letter_dictionary(path: str | Path, letter_lines: list[str], always: str = "") -> Path:
    """dict.ltr.txt: `<symbol> <count>` for every symbol of the .ltr lines, most frequent first (ties by symbol).
    The symbols of `always` are listed even when the lines lack them (count 0), so that a small corpus's held-out
    splits never meet a letter the dictionary does not have."""
    counts = letter_counts(letter_lines)
    if not counts:
        raise ValueError(f"no letters to make {path} from")
    for symbol in always:
        counts.setdefault(symbol, 0)
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    path = Path(path)
    _write_atomically(path, "".join(f"{symbol} {count}\n" for symbol, count in ordered))
    return path


def read_manifest_rows(path: Path) -> tuple[Path, list[tuple[str, int]]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    rows = []
    for line_number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        relative, _, samples = line.partition("\t")
        if not samples.strip().isdigit():
            raise ValueError(f"{path}:{line_number}: expected 'relative/path<TAB>num_samples', found {line!r}")
        rows.append((relative, int(samples)))
    return Path(lines[0].strip()), rows


# ---------------------------------------------------------------------------------------------------------------
# Stage 1: download


def archive_path(archives_dir: str | Path, subset: str) -> Path:
    return Path(archives_dir) / f"{subset}.tar.gz"


def download(archives_dir: str | Path, subsets: list[str], url: str = LIBRISPEECH_URL) -> list[Path]:
    """Fetch <url>/<subset>.tar.gz for each subset unless the archive is already there."""
    return [download_file(archive_path(archives_dir, subset), f"{url.rstrip('/')}/{subset}.tar.gz")
            for subset in subsets]


# ---------------------------------------------------------------------------------------------------------------
# Stage 2: extract


def extract(archives_dir: str | Path, dataset_dir: str | Path, subsets: list[str]) -> list[str]:
    """Unpack each subset's archive (LibriSpeech/<subset>/...) into dataset_dir/<subset>/...; archives that are not
    there are skipped, one already unpacked is not unpacked again. Returns the subsets unpacked or already there."""
    dataset_dir = Path(dataset_dir)
    done = []
    for subset in subsets:
        archive = archive_path(archives_dir, subset)
        marker = dataset_dir / subset / ".extracted"
        if marker.exists():
            print(f"extract: {dataset_dir / subset} already extracted (remove {marker} to redo)")
            done.append(subset)
            continue
        if not archive.is_file():
            print(f"extract: no {archive}, skipping {subset}")
            continue
        print(f"extract: {archive} -> {dataset_dir}")
        count = 0
        with tarfile.open(archive, "r|*") as tar:  # streamed: a .tar.gz is read once
            for member in tar:
                path = _safe_relative_path(member, archive)
                if path.parts[0] != TOP_FOLDER:
                    raise ValueError(f"{archive}: expected everything inside {TOP_FOLDER}/, found {member.name!r}")
                relative = PurePosixPath(*path.parts[1:]) if len(path.parts) > 1 else None
                if relative is None:
                    continue
                target = dataset_dir.joinpath(*relative.parts)
                if member.isdir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                with open(target, "wb") as out:
                    shutil.copyfileobj(tar.extractfile(member), out)
                count += 1
        if not (dataset_dir / subset).is_dir():
            raise ValueError(f"{archive}: holds no {TOP_FOLDER}/{subset}/ folder")
        marker.write_text(f"{archive.name}\n")
        print(f"extract: {count} files")
        done.append(subset)
    if not done:
        raise FileNotFoundError(f"no archive of {', '.join(subsets)} in {archives_dir} (run the download stage, or "
                                "put the .tar.gz files there)")
    return done


# ---------------------------------------------------------------------------------------------------------------
# Stages 3 and 4: manifests and labels


def present_subsets(dataset_dir: str | Path, subsets: list[str]) -> list[str]:
    found = [subset for subset in subsets if (Path(dataset_dir) / subset).is_dir()]
    if not found:
        raise FileNotFoundError(f"none of {', '.join(subsets)} is in {dataset_dir} (run the extract stage first)")
    return found


def write_subset_manifest(dataset_dir: str | Path, manifests_dir: str | Path, subset: str) -> Path:
    """<subset>.tsv of every .flac under dataset_dir/<subset>, sorted by path; counts from the files' headers."""
    subset_dir = Path(dataset_dir) / subset
    files = sorted(subset_dir.rglob("*.flac"))
    if not files:
        raise FileNotFoundError(f"no .flac files under {subset_dir}")
    rows = [(path.relative_to(subset_dir).as_posix(), soundfile.info(str(path)).frames) for path in files]
    path = write_manifest(Path(manifests_dir) / f"{subset}.tsv", subset_dir, rows)
    print(f"manifests: {path} ({len(rows)} utterances, {sum(n for _, n in rows) / 16000 / 3600:.2f} h at 16 kHz)")
    return path


def read_transcripts(chapter_dir: Path) -> dict[str, str]:
    """The utterance ID -> transcript lines of every *.trans.txt in a chapter folder."""
    transcripts = {}
    for path in sorted(chapter_dir.glob("*.trans.txt")):
        for line_number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            identifier, _, text = line.partition(" ")
            if not text.strip():
                raise ValueError(f"{path}:{line_number}: expected '<utterance ID> <TRANSCRIPT>', found {line!r}")
            transcripts[identifier] = " ".join(text.split())
    return transcripts


def write_subset_labels(manifests_dir: str | Path, subset: str) -> tuple[Path, Path]:
    """<subset>.wrd and <subset>.ltr for <subset>.tsv, from the *.trans.txt beside each file."""
    manifest = Path(manifests_dir) / f"{subset}.tsv"
    if not manifest.is_file():
        raise FileNotFoundError(f"{manifest} not found (run the manifests stage first)")
    root, rows = read_manifest_rows(manifest)
    cache: dict[Path, dict[str, str]] = {}
    words = []
    for relative, _ in rows:
        audio = root / relative
        transcripts = cache.setdefault(audio.parent, read_transcripts(audio.parent))
        identifier = audio.name.split(".")[0]
        if identifier not in transcripts:
            raise ValueError(f"{manifest}: no transcript of {identifier} in {audio.parent}/*.trans.txt")
        words.append(transcripts[identifier])
    paths = write_labels(manifest, words)
    print(f"labels: {paths[0]}, {paths[1]} ({len(words)} lines)")
    return paths


# ---------------------------------------------------------------------------------------------------------------
# Stage 5: train-full-960 and the dictionary


def combine_training_subsets(manifests_dir: str | Path, dataset_dir: str | Path) -> Path | None:
    """train-full-960.{tsv,ltr,wrd}: the three training subsets under the common root (dataset_dir), paths prefixed
    with their subset, as NVIDIA's combine_filelists.py. None (and nothing written) unless all three are there."""
    manifests_dir = Path(manifests_dir)
    manifests = [manifests_dir / f"{subset}.tsv" for subset in TRAINING_SUBSETS]
    if not all(path.is_file() for path in manifests):
        missing = [path.name for path in manifests if not path.is_file()]
        print(f"combine: {FULL_TRAINING_SET} needs all of {', '.join(TRAINING_SUBSETS)}; "
              f"missing {', '.join(missing)}, skipping")
        return None
    rows, words = [], []
    for subset, manifest in zip(TRAINING_SUBSETS, manifests):
        _, subset_rows = read_manifest_rows(manifest)
        rows += [(f"{subset}/{relative}", samples) for relative, samples in subset_rows]
        subset_words = manifest.with_suffix(".wrd").read_text(encoding="utf-8").splitlines()
        if len(subset_words) != len(subset_rows):
            raise ValueError(f"{manifest.with_suffix('.wrd')} does not match {manifest} (run the labels stage)")
        words += subset_words
    path = write_manifest(manifests_dir / f"{FULL_TRAINING_SET}.tsv", dataset_dir, rows)
    write_labels(path, words)
    print(f"combine: {path} ({len(rows)} utterances)")
    return path


def write_dictionary(manifests_dir: str | Path) -> Path:
    """dict.ltr.txt from train-full-960.ltr, or from the training subsets' .ltr that are there, or, with no
    training subset at all, from every .ltr of the folder."""
    manifests_dir = Path(manifests_dir)
    full = manifests_dir / f"{FULL_TRAINING_SET}.ltr"
    sources = ([full] if full.is_file()
               else [path for path in (manifests_dir / f"{s}.ltr" for s in TRAINING_SUBSETS) if path.is_file()])
    if not sources:
        sources = sorted(manifests_dir.glob("*.ltr"))
    if not sources:
        raise FileNotFoundError(f"no .ltr labels in {manifests_dir} (run the labels stage first)")
    lines = [line for path in sources for line in path.read_text(encoding="utf-8").splitlines()]
    path = write_letter_dictionary(manifests_dir / "dict.ltr.txt", lines)
    print(f"dictionary: {path} ({len(letter_counts(lines))} symbols, from {', '.join(p.name for p in sources)})")
    return path


# ---------------------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    stages = parser.add_subparsers(dest="stage", required=True)
    commands = {
        "download": "fetch <subset>.tar.gz into --archives-dir (skipped if present)",
        "extract": "unpack the archives into --dataset-dir",
        "manifests": "write <subset>.tsv for each subset found",
        "labels": "write <subset>.wrd and <subset>.ltr from the transcripts",
        "dictionary": f"write {FULL_TRAINING_SET} (with all three training subsets) and dict.ltr.txt",
    }
    for name, help_text in commands.items():
        command = stages.add_parser(name, help=help_text)
        command.add_argument("--subsets", nargs="+", default=list(SUBSETS), choices=SUBSETS, metavar="SUBSET",
                             help=f"any of {', '.join(SUBSETS)} (default: all)")
        if name in ("download", "extract"):
            command.add_argument("--archives-dir", required=True)
        if name != "download":
            command.add_argument("--dataset-dir", required=True, help="the extracted LibriSpeech folder")
        if name in ("manifests", "labels", "dictionary"):
            command.add_argument("--manifests-dir", required=True)
        if name == "download":
            command.add_argument("--url", default=LIBRISPEECH_URL, help="where <subset>.tar.gz are (a mirror)")
    args = parser.parse_args(argv)

    try:
        if args.stage == "download":
            download(args.archives_dir, args.subsets, args.url)
        elif args.stage == "extract":
            extract(args.archives_dir, args.dataset_dir, args.subsets)
        elif args.stage == "manifests":
            for subset in present_subsets(args.dataset_dir, args.subsets):
                write_subset_manifest(args.dataset_dir, args.manifests_dir, subset)
        elif args.stage == "labels":
            for subset in present_subsets(args.dataset_dir, args.subsets):
                write_subset_labels(args.manifests_dir, subset)
        else:
            combine_training_subsets(args.manifests_dir, args.dataset_dir)
            write_dictionary(args.manifests_dir)
    except (ValueError, FileNotFoundError, RuntimeError, OSError) as error:
        sys.exit(f"error: {error}")


if __name__ == "__main__":
    main()
