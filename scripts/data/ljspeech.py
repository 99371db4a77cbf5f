"""LJSpeech-1.1: download, extract and train/val/test filelists, one function (and subcommand) per stage.

    python -m scripts.data.ljspeech download  --archive data/LJSpeech-1.1.tar.bz2
    python -m scripts.data.ljspeech extract   --archive data/LJSpeech-1.1.tar.bz2 --dataset-dir data/LJSpeech-1.1
    python -m scripts.data.ljspeech filelists --dataset-dir data/LJSpeech-1.1 --filelists-dir filelists

scripts/prepare_dataset.sh runs these as stages 1-3. The filelists stage writes
    ljs_audio_text_{train,val,test}_filelist.txt   wavs/<ID>.wav|<normalized transcript>
    ljs_mel_text_{train,val,test}_filelist.txt     mels/<ID>.pt|<normalized transcript>   (see prepare_mels.sh)
with paths relative to the dataset folder (train with `-d data/LJSpeech-1.1`). The full corpus of 13,100 clips is
split 12,500/100/500 as NVIDIA's filelists are; another size is split in the same proportions.
"""
from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import sys
import tarfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

LJSPEECH_URL = "https://data.keithito.com/data/speech/LJSpeech-1.1.tar.bz2"
LJSPEECH_CLIPS = 13100
LJSPEECH_SPLIT_SIZES = {"train": 12500, "val": 100, "test": 500}
LJSPEECH_FILELIST_NAMES = "ljs_{kind}_text_{split}_filelist.txt"
SPLITS = ("train", "val", "test")
EXTRACTED_MARKER = ".extracted"  # written last, so an interrupted extraction is redone
_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")  # becomes a file name: no separators, no leading dot


# ---------------------------------------------------------------------------------------------------------------
# Stage 1: download


def download(archive: str | Path, url: str = LJSPEECH_URL) -> Path:
    """Fetch `url` to `archive` unless it is already there (a partial download never has the final name)."""
    archive = Path(archive)
    if archive.exists():
        print(f"download: {archive} exists, skipping")
        return archive
    archive.parent.mkdir(parents=True, exist_ok=True)
    partial = archive.with_name(archive.name + ".part")
    print(f"download: {url} -> {archive}")
    try:
        with urllib.request.urlopen(url, timeout=60) as response, open(partial, "wb") as out:
            total = int(response.headers.get("Content-Length") or 0)
            done, reported = 0, -1
            while chunk := response.read(1 << 20):
                out.write(chunk)
                done += len(chunk)
                percent = done * 100 // total if total else -1
                if total and percent // 10 != reported // 10:
                    print(f"  {percent}% of {total / 1e9:.2f} GB", flush=True)
                    reported = percent
    except (urllib.error.URLError, OSError) as error:
        raise RuntimeError(f"download of {url} failed: {error} (the partial file is {partial})") from error
    os.replace(partial, archive)
    return archive


# ---------------------------------------------------------------------------------------------------------------
# Stage 2: extract


def _safe_relative_path(member: tarfile.TarInfo, archive: Path) -> PurePosixPath:
    """The member's path with the archive's top folder removed; anything that could land outside is refused."""
    if not (member.isfile() or member.isdir()):
        kind = "link" if (member.issym() or member.islnk()) else "special file"
        raise ValueError(f"{archive}: refusing to extract {member.name!r}: it is a {kind}")
    path = PurePosixPath(member.name)
    if path.is_absolute() or ".." in path.parts or "\\" in member.name:
        raise ValueError(f"{archive}: refusing to extract {member.name!r}: its path leaves the target folder")
    return path


def extract(archive: str | Path, dataset_dir: str | Path) -> Path:
    """Unpack the archive's single top folder (LJSpeech-1.1/) into `dataset_dir`; skipped if already done."""
    archive, dataset_dir = Path(archive), Path(dataset_dir)
    marker = dataset_dir / EXTRACTED_MARKER
    if marker.exists():
        print(f"extract: {dataset_dir} already extracted (remove {marker} to redo)")
        return dataset_dir
    if not archive.is_file():
        raise FileNotFoundError(f"archive not found: {archive} (run the download stage first)")
    dataset_dir.mkdir(parents=True, exist_ok=True)
    top_folder = None
    count = 0
    print(f"extract: {archive} -> {dataset_dir}")
    # Streamed ("r|*"): a .tar.bz2 is read once, which matters for LJSpeech's 2.6 GB.
    with tarfile.open(archive, "r|*") as tar:
        for member in tar:
            path = _safe_relative_path(member, archive)
            if top_folder is None:
                top_folder = path.parts[0]
            if path.parts[0] != top_folder or (len(path.parts) == 1 and member.isfile()):
                raise ValueError(f"{archive}: expected everything inside one top folder ({top_folder}/), "
                                 f"found {member.name!r}")
            relative = path.relative_to(top_folder)
            target = dataset_dir.joinpath(*relative.parts)
            if member.isdir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            source = tar.extractfile(member)
            with open(target, "wb") as out:
                shutil.copyfileobj(source, out)
            count += 1
    if top_folder is None:
        raise ValueError(f"{archive}: the archive is empty")
    marker.write_text(f"{archive.name}\n")
    print(f"extract: {count} files")
    return dataset_dir


# ---------------------------------------------------------------------------------------------------------------
# Stage 3: filelists


@dataclass(frozen=True)
class MetadataEntry:
    identifier: str
    raw_text: str
    normalized_text: str
    line_number: int


def read_metadata(dataset_dir: str | Path) -> list[MetadataEntry]:
    """Parse <dataset_dir>/metadata.csv (`ID|raw text|normalized text`) and check that every wavs/<ID>.wav exists."""
    dataset_dir = Path(dataset_dir)
    path = dataset_dir / "metadata.csv"
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found (extract the corpus first)")
    entries, first_line_of = [], {}
    # Split on '|' by hand: the csv module would treat the transcripts' quotation marks as quoting.
    for line_number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        fields = line.split("|")
        if len(fields) != 3:
            raise ValueError(f"{path}:{line_number}: expected 3 '|'-separated fields (ID|raw text|normalized text), "
                             f"found {len(fields)}: {line!r}")
        identifier, raw_text, normalized_text = (field.strip() for field in fields)
        if not _ID_PATTERN.match(identifier):
            raise ValueError(f"{path}:{line_number}: {identifier!r} is not a valid clip ID")
        if not raw_text or not normalized_text:
            raise ValueError(f"{path}:{line_number}: empty transcript for {identifier}")
        if identifier in first_line_of:
            raise ValueError(f"{path}:{line_number}: {identifier} already appears on line {first_line_of[identifier]}")
        first_line_of[identifier] = line_number
        entries.append(MetadataEntry(identifier, raw_text, normalized_text, line_number))
    if not entries:
        raise ValueError(f"{path} lists no clips")
    missing = [entry for entry in entries if not (dataset_dir / "wavs" / f"{entry.identifier}.wav").is_file()]
    if missing:
        first = missing[0]
        raise FileNotFoundError(f"{path}:{first.line_number}: {dataset_dir / 'wavs' / (first.identifier + '.wav')} "
                                f"does not exist ({len(missing)} of {len(entries)} wavs are missing)")
    return entries


def default_split_sizes(count: int) -> dict[str, int]:
    """12500/100/500 for the full LJSpeech, the same proportions (at least 1 each) otherwise."""
    if count == LJSPEECH_CLIPS:
        return dict(LJSPEECH_SPLIT_SIZES)
    if count < 3:
        raise ValueError(f"{count} clips cannot make train, val and test splits")
    sizes = {split: max(1, round(count * LJSPEECH_SPLIT_SIZES[split] / LJSPEECH_CLIPS)) for split in ("val", "test")}
    sizes["train"] = count - sizes["val"] - sizes["test"]
    return sizes


def split_identifiers(identifiers: list[str], sizes: dict[str, int], seed: int) -> dict[str, list[str]]:
    """A seeded shuffle cut into val, test and train (each returned sorted)."""
    if sorted(sizes) != sorted(SPLITS) or any(size < 1 for size in sizes.values()):
        raise ValueError(f"split sizes must give train, val and test at least 1 clip each, got {sizes}")
    if sum(sizes.values()) != len(identifiers):
        raise ValueError(f"split sizes {sizes} add up to {sum(sizes.values())}, but there are {len(identifiers)} clips")
    shuffled = sorted(identifiers)
    random.Random(seed).shuffle(shuffled)
    val_end = sizes["val"]
    test_end = val_end + sizes["test"]
    return {"train": sorted(shuffled[test_end:]), "val": sorted(shuffled[:val_end]),
            "test": sorted(shuffled[val_end:test_end])}


def _write_text_atomically(path: Path, text: str) -> None:
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


def write_filelists(dataset_dir: str | Path, filelists_dir: str | Path,
                    name_format: str = LJSPEECH_FILELIST_NAMES, split_sizes: dict[str, int] | None = None,
                    seed: int = 1234, text_column: str = "normalized") -> dict[str, Path]:
    """Write audio (wavs/<ID>.wav|text) and mel (mels/<ID>.pt|text) filelists for each split of metadata.csv.

    `name_format` has {kind} (audio or mel) and {split}; `text_column` is "raw" or "normalized". Returns the paths
    by "<kind>_<split>", e.g. "audio_train".
    """
    if text_column not in ("raw", "normalized"):
        raise ValueError(f"text_column must be 'raw' or 'normalized', got {text_column!r}")
    entries = read_metadata(dataset_dir)
    by_id = {entry.identifier: entry for entry in entries}
    sizes = split_sizes if split_sizes is not None else default_split_sizes(len(entries))
    splits = split_identifiers(list(by_id), sizes, seed)

    filelists_dir = Path(filelists_dir)
    filelists_dir.mkdir(parents=True, exist_ok=True)
    written = {}
    for split, identifiers in splits.items():
        texts = [getattr(by_id[identifier], f"{text_column}_text") for identifier in identifiers]
        for kind, path_format in (("audio", "wavs/{}.wav"), ("mel", "mels/{}.pt")):
            path = filelists_dir / name_format.format(kind=kind, split=split)
            lines = [f"{path_format.format(identifier)}|{text}\n" for identifier, text in zip(identifiers, texts)]
            _write_text_atomically(path, "".join(lines))
            written[f"{kind}_{split}"] = path
    return written


# ---------------------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    stages = parser.add_subparsers(dest="stage", required=True)
    download_parser = stages.add_parser("download", help="fetch LJSpeech-1.1.tar.bz2 (skipped if present)")
    download_parser.add_argument("--archive", required=True)
    download_parser.add_argument("--url", default=LJSPEECH_URL)
    extract_parser = stages.add_parser("extract", help="unpack the archive into --dataset-dir")
    extract_parser.add_argument("--archive", required=True)
    extract_parser.add_argument("--dataset-dir", required=True)
    filelists_parser = stages.add_parser("filelists", help="write train/val/test audio and mel filelists")
    filelists_parser.add_argument("--dataset-dir", required=True)
    filelists_parser.add_argument("--filelists-dir", default="filelists")
    filelists_parser.add_argument("--seed", type=int, default=1234, help="seeds the train/val/test shuffle")
    args = parser.parse_args(argv)

    try:
        if args.stage == "download":
            download(args.archive, args.url)
        elif args.stage == "extract":
            extract(args.archive, args.dataset_dir)
        else:
            written = write_filelists(args.dataset_dir, args.filelists_dir, seed=args.seed)
            for name, path in written.items():
                print(f"filelists: {name}: {path} ({path.read_text(encoding='utf-8').count(chr(10))} lines)")
    except (ValueError, FileNotFoundError, RuntimeError) as error:
        sys.exit(f"error: {error}")


if __name__ == "__main__":
    main()
